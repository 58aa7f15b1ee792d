"""Training arguments of `SiameseTrainer`: the Trainer's own, plus the loss and calibration options."""

from __future__ import annotations

from dataclasses import dataclass, field

from transformers import TrainingArguments

from ..losses import LOSSES


@dataclass
class SiameseTrainingArguments(TrainingArguments):
    """
    [`TrainingArguments`] for [`SiameseTrainer`].

    Differences from the Trainer's defaults: `remove_unused_columns=False`, because the duplicate
    group ids the sampler and loss need are not arguments of the model's `forward`.
    """

    loss: str = field(
        default="hard_negative_triplet",
        metadata={"help": f"Training loss, by name. Available: {sorted(LOSSES)}."},
    )
    margin: float = field(default=0.25, metadata={"help": "Margin α of the triplet loss, in cosine units."})
    use_mean_negative: bool = field(
        default=True, metadata={"help": "Triplet loss: include the mean-negative term max(0, α − s(A,P) + mean_neg)."}
    )
    use_closest_negative: bool = field(
        default=True,
        metadata={"help": "Triplet loss: include the closest-negative term max(0, α − s(A,P) + closest_neg)."},
    )
    calibrate_threshold: bool = field(
        default=True,
        metadata={
            "help": "At each evaluation, choose the threshold that maximises `calibrate_for` on the evaluation "
            "pairs and store it in model.config.threshold."
        },
    )
    calibrate_for: str = field(
        default="accuracy", metadata={"help": "What threshold calibration maximises: 'accuracy' or 'f1'."}
    )
    no_duplicate_batches: bool = field(
        default=True,
        metadata={
            "help": "Sample training batches so that no duplicate group (hence no question) appears twice in a batch; "
            "needs a `group_id` column."
        },
    )
    overwrite_output_dir: bool = field(
        default=False, metadata={"help": "Allow writing into a non-empty output_dir (the recipes refuse otherwise)."}
    )
    remove_unused_columns: bool = field(
        default=False,
        metadata={"help": "Kept False: the `group_id` column is used by the sampler and the loss, not by forward."},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}; available: {sorted(LOSSES)}")
        if self.calibrate_for not in ("accuracy", "f1"):
            raise ValueError(f"calibrate_for must be 'accuracy' or 'f1', got {self.calibrate_for!r}")
        if self.per_device_train_batch_size < 2:
            raise ValueError(
                f"per_device_train_batch_size={self.per_device_train_batch_size}: in-batch negatives need at least "
                "2 pairs per batch (use 32 or more for useful negatives)"
            )
        if self.margin < 0:
            raise ValueError(f"margin must be non-negative, got {self.margin}")
