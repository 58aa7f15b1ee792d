"""Training arguments of `SiameseTrainer`: every pair model's (`PairTrainingArguments`), plus the loss and its
options, the batch sampling and the gradient cache."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields
from typing import Any

from hfsiamese.base.training_args import PairTrainingArguments
from hfsiamese.data.multi_dataset_sampler import MULTI_DATASET_SAMPLING
from hfsiamese.losses import (
    LOSS_OPTIONS,
    LOSSES,
    SiameseLoss,
    current_loss_name,
    current_loss_options,
    get_loss,
    loss_kwargs_for,
)


@dataclass
class SiameseTrainingArguments(PairTrainingArguments):
    """
    [`PairTrainingArguments`] for [`SiameseTrainer`]: with the loss, its options, `no_duplicate_batches` and
    `gradient_cache_mini_batch_size`.

    `remove_unused_columns` stays False, as for every pair model: the duplicate group ids the sampler and loss
    need are not arguments of the model's `forward`.

    The loss options are one field each, named as the losses name them (`hfsiamese.losses.LOSS_OPTIONS`);
    unset (None) keeps the chosen loss's own default.
    """

    _argument_group_name = "training: the Trainer's arguments and the loss's options"  # a --help section

    loss: str = field(
        default="hard_negative_triplet",
        metadata={"help": f"Training loss, by name. Available: {sorted(LOSSES)}."},
    )
    margin: float | None = field(
        default=None,
        metadata={
            "help": "Margin of the chosen loss (triplet losses: 0.25 in cosine units; contrastive: 0.5 in cosine distance). Unset: the loss's default."
        },
    )
    use_mean_negative: bool | None = field(
        default=None, metadata={"help": "hard_negative_triplet: include the mean-negative term (default on)."}
    )
    use_closest_negative: bool | None = field(
        default=None, metadata={"help": "hard_negative_triplet: include the closest-negative term (default on)."}
    )
    negative_selection: str | None = field(
        default=None, metadata={"help": "hard_negative_triplet: which negatives count: 'all', 'semi_hard' or 'hard'."}
    )
    in_batch_negatives: bool | None = field(
        default=None, metadata={"help": "triplet: also use the other pairs of the batch as negatives."}
    )
    temperature: float | None = field(
        default=None,
        metadata={
            "help": "multiple_negatives_ranking, contrastive_ranking, listwise_kl (the student's): softmax temperature "
            "(default 0.05)."
        },
    )
    teacher_temperature: float | None = field(
        default=None,
        metadata={
            "help": "listwise_kl: softmax temperature of the teacher's scores (default: temperature; 1.0 takes a "
            "cross-encoder's logits as they are)."
        },
    )
    similarity_scale: float | None = field(
        default=None,
        metadata={
            "help": "margin_mse: the student's cosines are multiplied by this before their margins are compared with "
            "the teacher's (default 1.0; about 5-10 for a cross-encoder teacher's logits)."
        },
    )
    symmetric: bool | None = field(
        default=None, metadata={"help": "multiple_negatives_ranking: add the second-to-first direction."}
    )
    verification_weight: float | None = field(
        default=None, metadata={"help": "verification_identification: weight w of the cosine-embedding term."}
    )
    triplet_margin: float | None = field(
        default=None, metadata={"help": "contrastive_ranking: margin α of its in-batch triplet term (default 0.25)."}
    )
    ranking_weight: float | None = field(
        default=None, metadata={"help": "contrastive_ranking: weight w of its in-batch ranking term (default 0.1)."}
    )
    triplet_weight: float | None = field(
        default=None, metadata={"help": "The old name of ranking_weight (still read, with a warning)."}
    )
    ranking_loss: str | None = field(
        default=None,
        metadata={
            "help": "contrastive_ranking: its in-batch ranking term, 'hard_negative_triplet' or "
            "'multiple_negatives_ranking' (default hard_negative_triplet)."
        },
    )
    ranking_candidates: str | None = field(
        default=None,
        metadata={
            "help": "contrastive_ranking: the in-batch negatives of a duplicate row, the other 'duplicates' rows' "
            "second questions or those of 'all_rows' (default all_rows)."
        },
    )
    embedding_weight: float | None = field(
        default=None,
        metadata={
            "help": "embedding_distillation (hfsiamese distill): weight of the MSE to the teacher's embeddings (default 1.0)."
        },
    )
    score_weight: float | None = field(
        default=None,
        metadata={
            "help": "embedding_distillation (hfsiamese distill): weight of the MSE to the teacher's in-batch similarities (default 1.0)."
        },
    )
    matryoshka_loss: str | None = field(
        default=None,
        metadata={
            "help": "matryoshka: the loss it applies at every dimension, by name, with its own options given as usual "
            "(--margin, ...); any loss on embeddings (default hard_negative_triplet)."
        },
    )
    matryoshka_dims: list[int] | None = field(
        default=None,
        metadata={
            "help": "matryoshka: the embedding sizes trained, each the first d dimensions re-normalised "
            "(--matryoshka_dims 384 256 128 64). Unset: the model's size and its halves down to an eighth."
        },
    )
    matryoshka_weights: list[float] | None = field(
        default=None,
        metadata={"help": "matryoshka: the weight of each dimension's term, one per matryoshka_dims (default all 1)."},
    )
    gather_across_devices: bool | None = field(
        default=None,
        metadata={
            "help": "In-batch losses under several processes: use the other processes' pairs as negatives too (default on)."
        },
    )
    gradient_cache_mini_batch_size: int | None = field(
        default=None,
        metadata={
            "help": "GradCache: embed the batch in mini-batches of this size so that memory is bounded by the "
            "mini-batch while the in-batch loss still sees the whole batch (same loss and gradients, ~1.3x compute)."
        },
    )
    no_duplicate_batches: bool = field(
        default=True,
        metadata={
            "help": "Sample training batches so that no duplicate group (hence no question) appears twice in a batch; "
            "needs a `group_id` column."
        },
    )
    remove_unused_columns: bool = field(
        default=False,
        metadata={"help": "Kept False: the `group_id` column is used by the sampler and the loss, not by forward."},
    )
    multi_dataset_sampling: str = field(
        default="proportional",
        metadata={
            "help": "Several training data sets: 'proportional' (each step's data set drawn at random, in proportion "
            "to its size or its weight) or 'round_robin' (the data sets take turns; the epoch ends with the smallest). "
            "A batch never mixes data sets."
        },
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        # Renamed loss and option names still read (configs and scripts written before), stored as the current ones.
        self.loss = current_loss_name(self.loss)
        if self.triplet_weight is not None:
            renamed = current_loss_options({"triplet_weight": self.triplet_weight, **self.loss_options()})
            self.ranking_weight, self.triplet_weight = renamed["ranking_weight"], None
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}; available: {sorted(LOSSES)}")
        if self.per_device_train_batch_size < 2:
            raise ValueError(
                f"per_device_train_batch_size={self.per_device_train_batch_size}: in-batch negatives need at least "
                "2 pairs per batch (use 32 or more for useful negatives)"
            )
        if self.gradient_cache_mini_batch_size is not None and self.gradient_cache_mini_batch_size < 1:
            raise ValueError(
                f"gradient_cache_mini_batch_size must be positive, got {self.gradient_cache_mini_batch_size}"
            )
        if self.multi_dataset_sampling not in MULTI_DATASET_SAMPLING:
            raise ValueError(
                f"multi_dataset_sampling must be one of {MULTI_DATASET_SAMPLING}, got {self.multi_dataset_sampling!r}"
            )
        # Build the loss once to validate its options now, not at the first training step.
        self.build_loss()

    def loss_options(self) -> dict[str, Any]:
        """The loss options the user set, in field order (unset ones keep each loss's own default)."""
        return {name: getattr(self, name) for name in LOSS_OPTION_FIELDS if getattr(self, name) is not None}

    def build_loss(self) -> SiameseLoss:
        """The loss module named by `loss`, with the options that it takes: the one place a loss is built from arguments."""
        options = self.loss_options()
        accepted = loss_kwargs_for(self.loss, **options)
        unused = sorted(set(options) - set(accepted))
        if unused:
            warnings.warn(
                f"options {unused} do not apply to loss {self.loss!r} and are ignored", UserWarning, stacklevel=2
            )
        return get_loss(self.loss, **accepted)


def _loss_option_fields() -> tuple[str, ...]:
    """The loss-option fields in field order; a loss option without its field fails at import, not in a run."""
    names = tuple(f.name for f in fields(SiameseTrainingArguments) if f.name in LOSS_OPTIONS)
    missing = sorted(LOSS_OPTIONS - set(names))
    if missing:
        raise TypeError(f"SiameseTrainingArguments lacks a field for the loss options {missing}")
    return names


LOSS_OPTION_FIELDS = _loss_option_fields()
