"""The options of the distillation stage (`hfsiamese distill`), and the training arguments they make."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.losses import TEACHER_SCORE_LOSSES

DISTILLATION_LOSS = "embedding_distillation"
#: What stage 1 learns of the teacher: its embeddings (the default), its scores of scored rows, or both, in that order.
DISTILLATION_TARGETS = ("embeddings", "scores", "both")


@dataclass
class DistillationArguments:
    """Which teacher, and how stage 1 (learning the teacher's embeddings) runs; stage 2 takes the usual training flags."""

    _argument_group_name = "distillation: the teacher and stage 1"  # a --help section (HfArgumentParser)

    teacher_model_name_or_path: str = field(
        metadata={
            "help": "The teacher: a saved Siamese checkpoint (e.g. outputs/minilm_qqp, the fine-tuned MiniLM recipe) or a "
            "base sentence-embedding model folder (mean pooling); 'sentence-transformers/all-MiniLM-L6-v2' is the "
            "bundled, not fine-tuned, MiniLM (a quick check only)."
        }
    )
    teacher_batch_size: int = field(
        default=256, metadata={"help": "Texts per batch when the teacher embeds the questions."}
    )
    distillation_epochs: float = field(default=10.0, metadata={"help": "Stage 1: epochs over the distillation pairs."})
    distillation_max_steps: int = field(
        default=-1, metadata={"help": "Stage 1: stop after this many steps (overrides distillation_epochs when > 0)."}
    )
    distillation_learning_rate: float | None = field(
        default=None, metadata={"help": "Stage 1: learning rate (default: learning_rate, the one stage 2 uses)."}
    )
    distill_group_pairs: bool = field(
        default=True,
        metadata={
            "help": "Stage 1 trains on every labelled training pair (so on every training question) and, with this, on "
            "every pair within a duplicate group too (capped by max_pairs_per_group)."
        },
    )
    distillation_targets: str = field(
        default="embeddings",
        metadata={
            "help": "What stage 1 learns of the teacher: 'embeddings' (its embeddings and similarities of the training "
            "pairs, --loss embedding_distillation), 'scores' (the teacher's scores of the rows of --teacher_scores_file, "
            "with --score_distillation_loss), or 'both' (the embeddings, then the scores)."
        },
    )
    score_distillation_loss: str = field(
        default="margin_mse",
        metadata={
            "help": f"distillation_targets scores/both: the loss on the teacher's scores, one of {sorted(TEACHER_SCORE_LOSSES)} "
            "(its options as usual: --similarity_scale, --temperature, --teacher_temperature)."
        },
    )
    fine_tune: bool = field(
        default=True,
        metadata={"help": "Stage 2: fine-tune the distilled student on the labels with --loss (default on)."},
    )
    teacher_embeddings_dir: str | None = field(
        default=None,
        metadata={
            "help": "Stage 1: a folder where the teacher's embeddings of the training questions are written in "
            "resumable shards and memory-mapped from, not held in memory; a run killed while the teacher embeds, "
            "started again with the same folder, encodes only the shards it lacks. Default: <output_dir>/"
            "teacher_embeddings when training from a prepared folder (`hfsiamese prepare`), else in memory."
        },
    )
    evaluate_teacher: bool = field(
        default=True,
        metadata={
            "help": "Score the teacher on the validation pairs too (teacher_eval_* in all_results.json), for comparison."
        },
    )

    def __post_init__(self) -> None:
        if self.teacher_batch_size < 1:
            raise ValueError(f"teacher_batch_size must be a positive integer, got {self.teacher_batch_size}")
        if self.distillation_epochs <= 0 and self.distillation_max_steps <= 0:
            raise ValueError("stage 1 needs distillation_epochs > 0 or distillation_max_steps > 0")
        if self.distillation_learning_rate is not None and self.distillation_learning_rate < 0:  # as --learning_rate
            raise ValueError(f"distillation_learning_rate must be at least 0, got {self.distillation_learning_rate}")
        if self.distillation_targets not in DISTILLATION_TARGETS:
            raise ValueError(
                f"distillation_targets must be one of {DISTILLATION_TARGETS}, got {self.distillation_targets!r}"
            )
        if self.score_distillation_loss not in TEACHER_SCORE_LOSSES:
            raise ValueError(
                f"score_distillation_loss must be one of {sorted(TEACHER_SCORE_LOSSES)} (a loss on a teacher's scores), "
                f"got {self.score_distillation_loss!r}"
            )

    @property
    def learns_embeddings(self) -> bool:
        """Stage 1 learns the teacher's embeddings (`distillation_targets` embeddings or both)."""
        return self.distillation_targets != "scores"

    @property
    def learns_scores(self) -> bool:
        """Stage 1 learns the teacher's scores of `--teacher_scores_file`'s rows (`distillation_targets` scores or both)."""
        return self.distillation_targets != "embeddings"


def distillation_training_args(
    training_args: SiameseTrainingArguments, distill_args: DistillationArguments, *, scores: bool = False
) -> SiameseTrainingArguments:
    """
    Stage 1's training arguments: the run's own (batch size, schedule type, precision, device, ...)
    with the distillation loss (with `scores`, `score_distillation_loss`: the part learning the teacher's
    scores), stage 1's length and learning rate, no evaluation or checkpoint during
    it (the recipe evaluates once after it), and plain random batches: the teacher's scores are the
    targets, so two pairs of one duplicate group in a batch are no false negatives.
    """
    return dataclasses.replace(
        training_args,
        loss=distill_args.score_distillation_loss if scores else DISTILLATION_LOSS,
        num_train_epochs=distill_args.distillation_epochs,
        max_steps=distill_args.distillation_max_steps,
        learning_rate=distill_args.distillation_learning_rate or training_args.learning_rate,
        eval_strategy="no",
        save_strategy="no",
        load_best_model_at_end=False,
        no_duplicate_batches=False,
        push_to_hub=False,
    )


__all__ = ["DISTILLATION_LOSS", "DISTILLATION_TARGETS", "DistillationArguments", "distillation_training_args"]
