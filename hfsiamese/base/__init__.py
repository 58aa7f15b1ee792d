"""What both model families' training shares: the base trainer and arguments (`PairTrainer`,
`PairTrainingArguments`), saving that never leaves a half-written folder, checkpoints to resume from, threshold
calibration on the validation pairs, the non-finite loss policy, the loss's statistics, CPU precision and core
sharing, and what FSDP/DeepSpeed sharding adapts."""

from hfsiamese.base.checkpoints import resolve_resume_checkpoint
from hfsiamese.base.nonfinite_loss import NonFiniteLossError
from hfsiamese.utils.lazy_exports import lazy_exports

_EXPORTS = {  # imported when first used: the Trainer (and accelerate) load only for training
    "PairTrainer": "hfsiamese.base.trainer",
    "PairTrainingArguments": "hfsiamese.base.training_args",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = ["NonFiniteLossError", "resolve_resume_checkpoint", *_EXPORTS]
