"""Training arguments of `SiameseTrainer`: the Trainer's own, plus the loss and calibration options."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field, fields
from typing import Any

import torch
from transformers import TrainingArguments

from hfsiamese.base.cpu_precision import choose_bf16
from hfsiamese.base.nonfinite_loss import NAN_POLICIES
from hfsiamese.losses import (
    LOSS_OPTIONS,
    LOSSES,
    SiameseLoss,
    current_loss_name,
    current_loss_options,
    get_loss,
    loss_kwargs_for,
)
from hfsiamese.metrics.thresholds import check_calibration_options


@dataclass
class SiameseTrainingArguments(TrainingArguments):
    """
    [`TrainingArguments`] for [`SiameseTrainer`].

    Differences from the Trainer's defaults: `remove_unused_columns=False`, because the duplicate
    group ids the sampler and loss need are not arguments of the model's `forward`.

    The loss options are one field each, named as the losses name them (`hfsiamese.losses.LOSS_OPTIONS`);
    unset (None) keeps the chosen loss's own default.
    """

    _argument_group_name = "training: the Trainer's arguments and the loss's options"  # a --help section

    bf16: str = field(
        default="false",
        metadata={
            "help": "bfloat16 autocast: 'true', 'false', or 'auto': where the device computes in bf16 natively and, on a CPU, a "
            "measured training step runs at least 1.2x as fast as in fp32 (hfsiamese.base.cpu_precision; the choice and "
            "its reason are logged). The MiniLM and pretrained recipes default to auto."
        },
    )
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
        metadata={"help": "multiple_negatives_ranking, contrastive_ranking: softmax temperature (default 0.05)."},
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
    calibrate_threshold: bool = field(
        default=True,
        metadata={
            "help": "At each evaluation, choose the threshold that is best for `calibrate_for` on the evaluation "
            "pairs and store it in model.config.threshold."
        },
    )
    calibrate_for: str = field(
        default="accuracy",
        metadata={
            "help": "What threshold calibration optimises: 'accuracy' or 'f1' (maximised), or 'precision': the "
            "lowest threshold whose precision reaches target_precision (the most recall at that precision).",
            "choices": ["accuracy", "f1", "precision"],
        },
    )
    target_precision: float | None = field(
        default=None,
        metadata={"help": "calibrate_for='precision': the precision the threshold must reach, in (0, 1]."},
    )
    no_duplicate_batches: bool = field(
        default=True,
        metadata={
            "help": "Sample training batches so that no duplicate group (hence no question) appears twice in a batch; "
            "needs a `group_id` column."
        },
    )
    share_cores: bool | None = field(
        default=None,
        metadata={
            "help": "On a CPU, use fewer threads while other processes keep this run's cores busy, all of them again "
            "once the cores are free (hfsiamese.models.siamese.core_sharing: two runs sharing a machine then split "
            "the cores instead of fighting over them). Unset: the process's policy, on in the recipes and commands, "
            "off in your own script unless hfsiamese.set_cpu_policy(share_cores=True). Off when you choose the thread "
            "count (--num_threads, OMP_NUM_THREADS) or full_determinism, or with HFSIAMESE_SHARE_CORES=0.",
            "nargs": "?",  # `--share_cores` alone means true, as for the other switches
            "const": True,
        },
    )
    num_threads: int | None = field(
        default=None,
        metadata={
            "help": "CPU threads per process, set by the recipes (in your own script: "
            "hfsiamese.utils.cpu_threads.apply_cpu_threads(args.num_threads)). Unset: your OMP_NUM_THREADS if you set it, "
            "else the cores this process owns divided by the processes of the job on this machine (`accelerate "
            "launch` would otherwise leave one thread per process)."
        },
    )
    nan_policy: str = field(
        default="raise",
        metadata={
            "help": "What a NaN or infinite training loss does: 'raise' stops training with an error naming the step "
            "and the batch; 'skip' drops the batch (no backward pass, no update from it) and counts it in the logs "
            "as `skipped_batches`.",
            "choices": ["raise", "skip"],
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
        # `--bf16 auto` is settled before the Trainer's own checks, which take a bool (and bf16 on a CPU needs use_cpu).
        on_cpu = (
            self.use_cpu
            or os.environ.get("ACCELERATE_USE_CPU", "").lower() in ("1", "true")
            or not torch.cuda.is_available()
        )
        choice = choose_bf16(self.bf16, device_type="cpu" if on_cpu else "cuda")
        self.bf16, self.precision_reason = choice.bf16, choice.reason
        if choice.bf16 and on_cpu and not torch.cuda.is_available():
            self.use_cpu = True
        super().__post_init__()
        # Renamed loss and option names still read (configs and scripts written before), stored as the current ones.
        self.loss = current_loss_name(self.loss)
        if self.triplet_weight is not None:
            renamed = current_loss_options({"triplet_weight": self.triplet_weight, **self.loss_options()})
            self.ranking_weight, self.triplet_weight = renamed["ranking_weight"], None
        if self.loss not in LOSSES:
            raise ValueError(f"unknown loss {self.loss!r}; available: {sorted(LOSSES)}")
        if self.nan_policy not in NAN_POLICIES:
            raise ValueError(f"nan_policy must be 'raise' or 'skip', got {self.nan_policy!r}")
        check_calibration_options(self.calibrate_for, self.target_precision)
        if self.per_device_train_batch_size < 2:
            raise ValueError(
                f"per_device_train_batch_size={self.per_device_train_batch_size}: in-batch negatives need at least "
                "2 pairs per batch (use 32 or more for useful negatives)"
            )
        if self.gradient_cache_mini_batch_size is not None and self.gradient_cache_mini_batch_size < 1:
            raise ValueError(
                f"gradient_cache_mini_batch_size must be positive, got {self.gradient_cache_mini_batch_size}"
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
