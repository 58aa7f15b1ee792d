"""What both model families' training shares: saving that never leaves a half-written folder, checkpoints to
resume from, threshold calibration on the validation pairs, the non-finite loss policy, the loss's statistics,
CPU precision and core sharing, and what FSDP/DeepSpeed sharding adapts."""

from hfsiamese.base.checkpoints import resolve_resume_checkpoint
from hfsiamese.base.nonfinite_loss import NonFiniteLossError

__all__ = ["NonFiniteLossError", "resolve_resume_checkpoint"]
