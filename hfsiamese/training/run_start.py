"""The start of a training run, the same for every training recipe: seeds, threads, data, loss, model, tokenizer,
and the trainer built on them.

`hfsiamese train` and `hfsiamese distill` begin alike once their output folder is claimed; the order
of the steps is part of the result (the model's initialisation draws from the generators seeded first,
the LSTM vocabulary is trained on the split made next), so it is written once, here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from transformers import PreTrainedTokenizerBase, set_seed
from transformers.trainer_utils import enable_full_determinism

from hfsiamese.base.cpu_precision import check_bf16_trainable
from hfsiamese.base.model_arguments import ARCHITECTURES
from hfsiamese.base.run_family import RunFamily
from hfsiamese.base.trainer import PairTrainer
from hfsiamese.bi_encoder.run_family import BI_ENCODER_RUN
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.cross_encoder.run_family import CROSS_ENCODER_RUN
from hfsiamese.data.question_fingerprints import read_fingerprint
from hfsiamese.losses import SiameseLoss
from hfsiamese.preparation.derived_cache import cached_pair_question_hashes, prepared_folder_of
from hfsiamese.training.arguments import DataArguments, ModelArguments
from hfsiamese.training.preparation import load_splits_and_validation_size, training_view
from hfsiamese.training.several_datasets import (
    TrainingDataset,
    combined_training_pairs,
    dataset_weights,
    load_several_splits,
    training_datasets,
)
from hfsiamese.training.zero3_construction import built_whole_under_zero3
from hfsiamese.utils import openmp_defaults
from hfsiamese.utils.cpu_threads import apply_cpu_threads
from hfsiamese.utils.deprecation import moved_name_getattr, warn_deprecated

logger = logging.getLogger(__name__)

# Each `--architecture` and the family that describes its run.
RUN_FAMILIES: dict[str, RunFamily] = {family.architecture: family for family in (BI_ENCODER_RUN, CROSS_ENCODER_RUN)}


def run_family(architecture: str | None) -> RunFamily:
    """The family `--architecture` names (None: a bi-encoder's)."""
    family = RUN_FAMILIES.get(architecture or "bi_encoder")
    if family is None:
        raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}")
    return family


@dataclass
class StartedRun:
    """What a training run starts from, for either family: its data split, its loss (None for a family whose
    trainer has its own), the model and tokenizer to train, and the fingerprint of the questions it trains on (saved
    beside every checkpoint: `PairTrainer(training_questions=)`)."""

    splits: datasets.DatasetDict
    loss: SiameseLoss | None
    model: Any
    tokenizer: PreTrainedTokenizerBase
    model_args: ModelArguments
    data_args: DataArguments
    training_questions: np.ndarray
    # Several data sets (`train_datasets`): each one's entry, splits and loss; `splits` then holds only their
    # training pairs together (`combined_training_pairs`) and `loss` the one the model was built for.
    entries: list[TrainingDataset] | None = None
    parts: dict[str, datasets.DatasetDict] | None = None
    losses: dict[str, SiameseLoss] | None = None
    # The validation set's size before `max_eval_pairs` sampled it (one data set): the trainer reports it.
    validation_size: int | None = None
    family: RunFamily = BI_ENCODER_RUN

    @property
    def cross_encoder(self) -> CrossEncoder:
        """A cross-encoder run's model and tokenizer as a `CrossEncoder` (what `StartedCrossEncoderRun` held)."""
        return CrossEncoder(self.model, self.tokenizer)

    def tokenize(self, pairs: datasets.Dataset, *, training: bool = False) -> datasets.Dataset:
        """`pairs` tokenised as this run trains (`training`) or evaluates (`--max_length`,
        `--preprocessing_num_workers`; the family's way: `RunFamily.tokenize`)."""
        return self.family.tokenize(pairs, self, training=training)

    def tokenizes_in_collator(self) -> bool:
        """Whether the training pairs are tokenised batch by batch (`--tokenize_in_collator`; by default when they
        come from a prepared folder, whose millions of pairs would otherwise all be tokenised before the first step),
        never for a family that tokenises its pairs at once."""
        if self.family.text_collator(self) is None:
            return False
        if self.data_args.tokenize_in_collator is not None:
            return bool(self.data_args.tokenize_in_collator)
        return self.parts is None and prepared_folder_of(self.splits["train"]) is not None

    def training_rows(self, pairs: datasets.Dataset) -> datasets.Dataset:
        """The training pairs as the trainer takes them: tokenised now, or left as text for the collator to tokenise
        (`tokenizes_in_collator`), which `trainer` then gives it."""
        return (
            self.family.text_rows(pairs, self) if self.tokenizes_in_collator() else self.tokenize(pairs, training=True)
        )

    def training_dataset(self) -> datasets.Dataset:
        """The training split as the trainer takes it (`training_rows`), in the view the loss trains on where the
        family has a loss (`training_view`)."""
        pairs = self.splits["train"]
        if self.loss is not None:
            pairs = training_view(pairs, self.data_args, self.loss, self.model, self.tokenizer)
        return self.training_rows(pairs)

    def describe_rows(self, train: datasets.Dataset, validation: datasets.Dataset, training_args: Any) -> str:
        """One log line on the rows this run trains and validates on (`RunFamily.describe_rows`)."""
        return self.family.describe_rows(train, validation, self, training_args)

    def trainer(
        self,
        args: Any,
        train_dataset: datasets.Dataset | dict[str, datasets.Dataset],
        eval_dataset: datasets.Dataset | dict[str, datasets.Dataset],
        *,
        trainer_class: type[PairTrainer] | None = None,
        **kwargs: Any,
    ) -> Any:
        """A `trainer_class` (default: the family's) for this run's model on these pairs: its tokenizer, its loss
        (unless `loss=` is given; none for a family without one), its training questions, the validation set's size
        (`eval_pairs_total`); `kwargs` go to the trainer too (a `DistillationTrainer`'s `teacher_vectors`)."""
        if self.loss is not None:
            kwargs.setdefault("loss", self.loss)
        collator = self.family.text_collator(self)
        if (
            collator is not None
            and isinstance(train_dataset, datasets.Dataset)
            and not {"input_ids_a", "input_ids"} & set(train_dataset.column_names)
        ):
            # Pairs left as text (`training_rows`): tokenised batch by batch, as `tokenize` would.
            kwargs.setdefault("data_collator", collator)
        if self.validation_size is not None:  # one data set: its validation pairs (tokenised), maybe a sample
            kwargs.setdefault("eval_pairs_total", self.validation_size)
        return (trainer_class or self.family.trainer_class)(
            model=self.model,
            args=args,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=self.tokenizer,
            training_questions=self.training_questions,
            **kwargs,
        )


def start_run(
    model_args: ModelArguments,
    data_args: DataArguments,
    training_args: Any,
    *,
    default_train_file: str | Path | None,
    resume_from: str | None = None,
    family: RunFamily | None = None,
) -> StartedRun:
    """
    Seed as the Trainer seeds itself (the model's initialisation draws from these generators), take all
    the cores a process owns (also under `accelerate launch`), load and split the pairs (main process
    first), build the loss, then the model and tokenizer (`family`'s: by default the one `model_args.architecture`
    names); a run resumed from `resume_from` must rebuild that checkpoint's vocabulary, and a tokenizer of another
    model fails here, naming its file.
    """
    family = family or run_family(model_args.architecture)
    check_bf16_trainable(model_args, training_args)  # an LSTM this CPU cannot run in bf16: before the data is read
    if data_args.train_datasets and not family.several_datasets:
        raise ValueError(
            f"train_datasets (several data sets) trains a bi-encoder; a {family.architecture.replace('_', '-')} "
            "trains on one data set"
        )
    entries = training_datasets(data_args) if data_args.train_datasets else None
    parts, losses = None, None
    validation_size: int | None = None  # several data sets: each its own validation pairs, reported by name
    if entries is not None:
        losses = {entry.name: entry.build_loss(training_args) for entry in entries}  # a bad loss fails before the data
        parts = _seeded_process_and_several_splits(entries, training_args)
        splits = datasets.DatasetDict(train=combined_training_pairs(parts))
        # A classification head when any data set's loss trains on logits.
        loss: SiameseLoss | None = next(
            (each for each in losses.values() if each.uses_logits), next(iter(losses.values()))
        )
    else:
        splits, validation_size = _seeded_process_and_splits(data_args, training_args, default_train_file)
        loss = family.build_loss(training_args)
    with built_whole_under_zero3(training_args):  # DeepSpeed ZeRO-3 shards it when the Trainer starts
        model, tokenizer = family.build_model(model_args, splits["train"], loss=loss, resume_from=resume_from)
    training_questions = cached_pair_question_hashes(splits["train"])
    if model_args.model_name_or_path and Path(model_args.model_name_or_path).is_dir():
        # Continuing from a checkpoint: its own training questions trained this model too.
        earlier = read_fingerprint(model_args.model_name_or_path)
        if earlier is not None:
            training_questions = np.union1d(training_questions, earlier)
    return StartedRun(
        splits,
        loss,
        model,
        tokenizer,
        model_args,
        data_args,
        training_questions,
        entries,
        parts,
        losses,
        validation_size=validation_size,
        family=family,
    )


def _seeded_process_and_splits(
    data_args: DataArguments, training_args: Any, default_train_file: str | Path | None
) -> tuple[datasets.DatasetDict, int]:
    """Seed as the Trainer seeds itself, take the process's cores, say so, then load and split the pairs (main process
    first): the splits, and the validation set's size before `max_eval_pairs` bounded it."""
    _seed_and_threads(training_args)
    with training_args.main_process_first(desc="loading and splitting pairs"):
        return load_splits_and_validation_size(data_args, default_train_file=default_train_file)


def _seeded_process_and_several_splits(
    entries: list[TrainingDataset], training_args: Any
) -> dict[str, datasets.DatasetDict]:
    """As `_seeded_process_and_splits`, for several data sets: each one's splits."""
    _seed_and_threads(training_args)
    with training_args.main_process_first(desc="loading and splitting pairs"):
        return load_several_splits(entries)


def _seed_and_threads(training_args: Any) -> None:
    """Seed as the Trainer seeds itself, take the process's cores, and say so."""
    enable_full_determinism(training_args.seed) if training_args.full_determinism else set_seed(training_args.seed)
    # CPU float results depend on the thread count (it splits reductions): compare runs with equal counts.
    threads = apply_cpu_threads(training_args.num_threads)
    if training_args.process_index == 0:
        logger.info("seed %d, %d CPU threads per process (%s)", training_args.seed, threads.num_threads, threads.reason)
        logger.info("%s", openmp_defaults.describe())
        logger.info(
            "precision: %s", getattr(training_args, "precision_reason", "bf16" if training_args.bf16 else "fp32")
        )


def start_cross_encoder_run(
    model_args: ModelArguments,
    data_args: DataArguments,
    training_args: Any,
    *,
    default_train_file: str | Path | None,
) -> StartedRun:
    """Deprecated: `start_run`, which starts either family's run (a cross-encoder's by `model_args.architecture`)."""
    warn_deprecated("name", "hfsiamese.training.run_start.start_cross_encoder_run")
    return start_run(
        model_args, data_args, training_args, default_train_file=default_train_file, family=CROSS_ENCODER_RUN
    )


@dataclass
class SeveralDatasetsInputs:
    """What the trainer takes for several data sets: tokenised rows by name, the losses and weights by name."""

    train: dict[str, datasets.Dataset]
    validation: dict[str, datasets.Dataset]
    test: dict[str, datasets.Dataset] | None
    losses: dict[str, SiameseLoss]
    weights: dict[str, float] | None


def several_datasets_inputs(run: StartedRun) -> SeveralDatasetsInputs:
    """Each data set's training view (for its own loss), validation and test pairs, tokenised as the run does."""
    assert run.parts is not None and run.entries is not None and run.losses is not None
    train, validation, test = {}, {}, {}
    for entry in run.entries:
        splits, loss = run.parts[entry.name], run.losses[entry.name]
        train[entry.name] = run.tokenize(
            training_view(splits["train"], entry.data_args, loss, run.model, run.tokenizer)
        )
        validation[entry.name] = run.tokenize(splits["validation"])
        if "test" in splits and len(splits["test"]):
            test[entry.name] = run.tokenize(splits["test"])
    return SeveralDatasetsInputs(train, validation, test or None, dict(run.losses), dataset_weights(run.entries))


__all__ = [
    "RUN_FAMILIES",
    "SeveralDatasetsInputs",
    "StartedRun",
    "run_family",
    "several_datasets_inputs",
    "start_cross_encoder_run",
    "start_run",
]


# `StartedCrossEncoderRun`: a cross-encoder's started run is a `StartedRun` (its model and tokenizer as `.cross_encoder`).
__getattr__ = moved_name_getattr(__name__)
