"""Training: `SiameseTrainer` and its arguments."""

from .siamese_config import SiameseTrainingArguments
from .siamese_trainer import SiameseTrainer

__all__ = ["SiameseTrainer", "SiameseTrainingArguments"]
