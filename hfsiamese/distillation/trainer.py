"""`DistillationTrainer`: a `SiameseTrainer` whose loss regresses the student on the teacher's embeddings."""

from __future__ import annotations

from typing import Any

import datasets
import torch
from torch import nn

from hfsiamese.bi_encoder.trainer import BATCH_ONLY_KEYS, SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.data.collator import SiamesePairCollator
from hfsiamese.distillation.collator import TEACHER_KEYS, DistillationCollator
from hfsiamese.losses.embedding_distillation import EmbeddingDistillationLoss

__all__ = ["DistillationTrainer"]


class DistillationTrainer(SiameseTrainer):
    """
    Stage 1 of distillation: batches carry the teacher's vectors of both sides (`DistillationCollator`,
    from `teacher_vectors` and the training rows' `teacher_row_a`/`teacher_row_b`), and the loss
    (`EmbeddingDistillationLoss`, `--loss embedding_distillation`) gets them beside the student's
    embeddings. Evaluation, saving and calibration are the `SiameseTrainer`'s (hence `PairTrainer`'s).
    """

    def __init__(
        self,
        model: nn.Module | None = None,
        args: SiameseTrainingArguments | None = None,
        *,
        teacher_vectors: torch.Tensor,
        **kwargs: Any,
    ) -> None:
        """As `SiameseTrainer` (its `loss`: an `EmbeddingDistillationLoss`), plus `teacher_vectors`: the teacher's
        embedding of every question the training rows point at."""
        self.teacher_vectors = teacher_vectors
        super().__init__(model=model, args=args, **kwargs)

    def default_collator(self, processing_class: Any) -> DistillationCollator:
        """The student's pair collator (`processing_class`: its tokenizer), with the teacher's vectors of both sides."""
        return DistillationCollator(SiamesePairCollator(processing_class), self.teacher_vectors)

    def check_inputs(
        self,
        model: nn.Module | None,
        args: SiameseTrainingArguments,  # type: ignore[override]
        train_dataset: datasets.Dataset | None,
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None,
    ) -> None:
        """As `SiameseTrainer`; the loss is an `EmbeddingDistillationLoss`, which the gradient cache cannot feed."""
        if args.gradient_cache_mini_batch_size:
            raise ValueError(
                "gradient_cache_mini_batch_size is not supported by distillation: its loss needs the teacher's vectors"
            )
        super().check_inputs(model, args, train_dataset, eval_dataset)
        if self.named_losses is not None:
            raise ValueError(
                "DistillationTrainer trains on one data set: pass train_dataset as one Dataset, not a dict"
            )
        if not isinstance(self.loss_fn, EmbeddingDistillationLoss):
            raise TypeError(
                f"DistillationTrainer trains with EmbeddingDistillationLoss (--loss embedding_distillation), got "
                f"{type(self.loss_fn).__name__}"
            )

    def batch_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, Any]:
        missing = [key for key in TEACHER_KEYS if key not in inputs]
        if missing:
            raise ValueError(
                f"the batch lacks the teacher's vectors {missing}: the training rows need teacher_row_a/teacher_row_b "
                "(hfsiamese.distillation.with_teacher_rows)"
            )
        skipped = (*BATCH_ONLY_KEYS, *TEACHER_KEYS)
        outputs = model(**{key: value for key, value in inputs.items() if key not in skipped})
        output = self.loss_fn.compute(
            outputs.embeddings_a, outputs.embeddings_b, teacher_a=inputs["teacher_a"], teacher_b=inputs["teacher_b"]
        )
        return self.checked_loss(output.loss, inputs, output.stats), outputs
