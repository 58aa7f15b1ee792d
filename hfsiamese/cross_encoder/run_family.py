"""The cross-encoder's part in a training run (`hfsiamese.base.run_family.RunFamily`): `CrossEncoderTrainingArguments`
(no loss: binary cross-entropy is the trainer's), the model `build_cross_encoder` builds, both questions tokenised as
one sequence (both orders when it scores both), up front or batch by batch in the collator (a prepared folder), and
`CrossEncoderTrainer`."""

from __future__ import annotations

from typing import Any

from datasets import Dataset
from transformers import PreTrainedTokenizerBase

from hfsiamese.base.model_arguments import ModelArguments
from hfsiamese.base.run_family import BuiltRun
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.cross_encoder.model_building import build_cross_encoder
from hfsiamese.cross_encoder.pair_inputs import tokenize_cross_pairs
from hfsiamese.cross_encoder.tokenizing_collator import TokenizingCrossPairCollator, cross_text_rows
from hfsiamese.cross_encoder.trainer import CrossEncoderTrainer
from hfsiamese.cross_encoder.training_args import CrossEncoderTrainingArguments
from hfsiamese.losses import SiameseLoss


class CrossEncoderRun:
    """A cross-encoder's run: labelled pairs of one data set, read together, tokenised before training or in
    the collator."""

    architecture = "cross_encoder"
    arguments_class = CrossEncoderTrainingArguments
    trainer_class = CrossEncoderTrainer
    takes_loss = False
    several_datasets = False
    reranker = True

    def build_loss(self, training_args: Any) -> None:
        """None: the trainer's loss is binary cross-entropy on the pair labels."""
        return None

    def build_model(
        self, model_args: ModelArguments, train_pairs: Dataset, *, loss: SiameseLoss | None, resume_from: str | None
    ) -> tuple[Any, PreTrainedTokenizerBase]:
        """A saved cross-encoder to continue, or a new one-logit head (`build_cross_encoder`); no vocabulary is
        learned from the pairs, and a resumed checkpoint holds the same model."""
        cross_encoder = build_cross_encoder(model_args)
        return cross_encoder.model, cross_encoder.tokenizer

    def derive_from_pairs(self, model_args: ModelArguments, train_pairs: Dataset) -> None:
        """Nothing: a cross-encoder learns no vocabulary from its pairs."""

    def tokenize(self, pairs: Dataset, run: BuiltRun, *, training: bool = False) -> Dataset:
        """
        `pairs` as this cross-encoder trains (`training`: both orders as rows when it scores both) or evaluates
        (the other order as `*_swapped` columns when it scores both), cut at the model's own length
        (`--max_length` was set on it when it was built).
        """
        cross_encoder = CrossEncoder(run.model, run.tokenizer)
        both = cross_encoder.pair_order == "both"
        return tokenize_cross_pairs(
            pairs,
            run.tokenizer,
            max_length=cross_encoder.default_max_length(),
            both_orders=training and both,
            swapped_columns=not training and both,
            num_proc=run.data_args.preprocessing_num_workers,
        )

    def text_collator(self, run: BuiltRun) -> TokenizingCrossPairCollator:
        """Pairs left as text, tokenised batch by batch as `tokenize` would (the model's own length)."""
        max_length = CrossEncoder(run.model, run.tokenizer).default_max_length()
        return TokenizingCrossPairCollator(run.tokenizer, max_length=max_length)

    def text_rows(self, pairs: Dataset, run: BuiltRun) -> Dataset:
        """The pairs as text, in the rows `tokenize(training=True)` tokenises (both orders when it scores both)."""
        return cross_text_rows(pairs, both_orders=CrossEncoder(run.model, run.tokenizer).pair_order == "both")

    def describe_rows(self, train: Dataset, validation: Dataset, run: BuiltRun, training_args: Any) -> str:
        """The training rows (labelled pairs, in which order) and the validation pairs."""
        return (
            f"cross-encoder: {len(train)} training rows (labelled pairs, pair order {run.model.config.pair_order}), "
            f"{len(validation)} validation pairs"
        )


CROSS_ENCODER_RUN = CrossEncoderRun()

__all__ = ["CROSS_ENCODER_RUN", "CrossEncoderRun"]
