"""Training: `SiameseTrainer` and its arguments."""

from .siamese_config import SiameseTrainingArguments
from .siamese_trainer import NonFiniteLossError, SiameseTrainer

__all__ = ["NonFiniteLossError", "SiameseTrainer", "SiameseTrainingArguments"]
