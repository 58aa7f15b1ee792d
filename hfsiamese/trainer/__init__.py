"""Training: `SiameseTrainer` (bi-encoders), `CrossEncoderTrainer`, their arguments, and the collaborators it hands each job to (one module each)."""

from .checkpoints import resolve_resume_checkpoint
from .cross_encoder_trainer import CrossEncoderTrainer
from .nonfinite_loss import NonFiniteLossError
from .siamese_trainer import SiameseTrainer
from .training_arguments import SiameseTrainingArguments

__all__ = [
    "CrossEncoderTrainer",
    "NonFiniteLossError",
    "SiameseTrainer",
    "SiameseTrainingArguments",
    "resolve_resume_checkpoint",
]
