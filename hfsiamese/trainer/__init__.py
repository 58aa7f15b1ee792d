"""Training: `SiameseTrainer`, its arguments, and the collaborators it hands each job to (one module each)."""

from .nonfinite_loss import NonFiniteLossError
from .siamese_trainer import SiameseTrainer
from .training_arguments import SiameseTrainingArguments

__all__ = ["NonFiniteLossError", "SiameseTrainer", "SiameseTrainingArguments"]
