"""Training: `SiameseTrainer`, its arguments, and the collaborators it hands each job to (one module each)."""

from .checkpoints import resolve_resume_checkpoint
from .nonfinite_loss import NonFiniteLossError
from .siamese_trainer import SiameseTrainer
from .training_arguments import SiameseTrainingArguments

__all__ = ["NonFiniteLossError", "SiameseTrainer", "SiameseTrainingArguments", "resolve_resume_checkpoint"]
