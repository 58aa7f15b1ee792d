"""
Losses for Siamese training, one per module, selected by name in `SiameseTrainingArguments.loss`.

The contract (`base.SiameseLoss`), which the trainer and the recipes read and nothing else guesses:

- Call: ``loss.compute(embeddings_a, embeddings_b, **inputs)`` with the optional inputs `LossInputs` declares
  (``labels``, ``group_ids``, ``negatives``, ``logits``, ``teacher_a``, ``teacher_b``, ``teacher_scores``) returns a `SiameseLossOutput` with ``loss`` (a scalar tensor) and ``stats`` (0-d
  device tensors, e.g. how many negatives were hard; the trainer averages them between logs).
  ``loss(embeddings_a, embeddings_b, ...)`` returns the scalar alone.
- Declarations: ``requires_labels`` (trains on labelled pairs, 0/1; otherwise on duplicate pairs
  only), ``uses_negatives`` (takes one explicit negative per row when the data has them),
  ``requires_negatives`` (cannot run without them), ``uses_logits`` (needs the model's
  classification head), ``uses_in_batch_negatives`` (the batch's other rows are negatives, so
  batches must not hold two pairs of one duplicate group) and ``requires_teacher`` (learns a
  teacher's embeddings, ``teacher_a``/``teacher_b``: `EmbeddingDistillationLoss`) and
  ``requires_teacher_scores`` (learns a teacher's scores of each row's positive and ``k`` negatives,
  ``teacher_scores``, with the negatives ``k`` per row: `MarginMSELoss`, `ListwiseKLLoss`).
- Checks: shapes, labels and the declared inputs are checked once, in the base class, with the
  same wording for every loss.
- Options: the keyword arguments of ``__init__``; ``loss.get_config_dict()`` gives their values
  (the model card shows them) and `LOSS_OPTIONS` names every option of every registered loss.
  `MatryoshkaLoss` (``matryoshka``) wraps any other loss on embeddings: it takes that loss's options
  too (`SiameseLoss.accepted_options`) and reports them after its own.

Why a folder of its own and not `hfsiamese/bi_encoder/`: only the bi-encoder trains with these losses (a
cross-encoder's binary cross-entropy is its trainer's), but more than that family reads them: the distillation
student's trainer and arguments, the data layer's collator and the miners' file formats (the teacher-scores column
the score-distillation losses read), and a training run's views and several data sets (what each loss declares it
needs). Those sit beside or below the family, so the losses sit below it too, and no one imports a family for them.
"""

from hfsiamese.losses import registry
from hfsiamese.losses.base import LossInputs, SiameseLoss, SiameseLossOutput
from hfsiamese.losses.contrastive import ContrastiveLoss, OnlineContrastiveLoss
from hfsiamese.losses.contrastive_ranking import ContrastiveRankingLoss
from hfsiamese.losses.embedding_distillation import EmbeddingDistillationLoss
from hfsiamese.losses.hard_negative_triplet import HardNegativeTripletLoss
from hfsiamese.losses.listwise_kl import ListwiseKLLoss
from hfsiamese.losses.margin_mse import MarginMSELoss
from hfsiamese.losses.matryoshka import MatryoshkaLoss
from hfsiamese.losses.multiple_negatives_ranking import MultipleNegativesRankingLoss
from hfsiamese.losses.registry import *  # noqa: F403 -- the registry's public names, as its __all__ lists them
from hfsiamese.losses.triplet import TripletLoss
from hfsiamese.losses.verification_identification import VerificationIdentificationLoss
from hfsiamese.utils.deprecation import moved_name_getattr

__all__ = [
    "ContrastiveLoss",
    "ContrastiveRankingLoss",
    "EmbeddingDistillationLoss",
    "HardNegativeTripletLoss",
    "ListwiseKLLoss",
    "LossInputs",
    "MarginMSELoss",
    "MatryoshkaLoss",
    "MultipleNegativesRankingLoss",
    "OnlineContrastiveLoss",
    "SiameseLoss",
    "SiameseLossOutput",
    "TripletLoss",
    "VerificationIdentificationLoss",
]
__all__ += registry.__all__  # the registry's public names, as it lists them


# The classes' names before a rename (PEP 562), from the deprecation table: old imports keep working, with a
# FutureWarning.
__getattr__ = moved_name_getattr(__name__)
