"""What one model family supplies to a training run, so that `hfsiamese train` and the run's start have one path.

Each family describes its run once (`hfsiamese.bi_encoder.run_family`, `hfsiamese.cross_encoder.run_family`): the
arguments class the command parses, its loss (none where the family's trainer computes its own), how its model and
tokenizer are built, how pairs are tokenised, and its trainer class. `hfsiamese.training.run_start` puts the steps in
order for any family, and `hfsiamese.cli.train` runs them without asking which family it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import PreTrainedTokenizerBase

    from hfsiamese.base.model_arguments import ModelArguments
    from hfsiamese.base.trainer import PairTrainer
    from hfsiamese.base.training_args import PairTrainingArguments
    from hfsiamese.losses import SiameseLoss


class BuiltRun(Protocol):
    """What a family's steps read of a started run once its model is built (`hfsiamese.training.run_start.StartedRun`)."""

    model: Any
    tokenizer: PreTrainedTokenizerBase
    model_args: ModelArguments
    data_args: Any


class RunFamily(Protocol):
    """A model family's training run: what `hfsiamese train --architecture NAME` builds, tokenises and trains."""

    architecture: str  # the `--architecture` that names it
    arguments_class: type[PairTrainingArguments]  # the training arguments the command parses
    trainer_class: type[PairTrainer]
    takes_loss: bool  # `--loss` and the losses' options apply (else they are refused by name)
    several_datasets: bool  # trains on several data sets at once (`--train_datasets`)
    reranker: bool  # the end of the run offers it as a reranker of a bi-encoder's candidates

    def build_loss(self, training_args: Any) -> SiameseLoss | None:
        """The loss the arguments name, or None where the trainer computes its own."""
        ...

    def build_model(
        self, model_args: ModelArguments, train_pairs: Dataset, *, loss: SiameseLoss | None, resume_from: str | None
    ) -> tuple[Any, PreTrainedTokenizerBase]:
        """The model to train and its tokenizer (built from the training pairs where a vocabulary is learned), checked
        against the checkpoint `resume_from` when resuming."""
        ...

    def derive_from_pairs(self, model_args: ModelArguments, train_pairs: Dataset) -> None:
        """What `build_model` derives from the training pairs and keeps in their prepared folder (a word vocabulary),
        derived now: `hfsiamese prepare` calls it, so that the first `train` from the folder reads it."""
        ...

    def tokenize(self, pairs: Dataset, run: BuiltRun, *, training: bool = False) -> Dataset:
        """`pairs` as the trainer takes them for training (`training`) or evaluation, all rows at once
        (`--max_length`, `--preprocessing_num_workers`)."""
        ...

    def text_collator(self, run: BuiltRun) -> Any | None:
        """A collator that tokenises text rows batch by batch as `tokenize` would, or None where the family's pairs
        are always tokenised at once."""
        ...

    def text_rows(self, pairs: Dataset, run: BuiltRun) -> Dataset:
        """The training pairs left as text, in the rows `tokenize(training=True)` would tokenise, for `text_collator`
        (column operations only: the rows stay memory-mapped)."""
        ...

    def describe_rows(self, train: Dataset, validation: Dataset, run: BuiltRun, training_args: Any) -> str:
        """One log line on what the run trains and validates on."""
        ...


__all__ = ["BuiltRun", "RunFamily"]
