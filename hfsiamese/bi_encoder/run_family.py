"""The bi-encoder's part in a training run (`hfsiamese.base.run_family.RunFamily`): `SiameseTrainingArguments` and the
loss they name, the model `build_model_and_tokenizer` builds, pairs tokenised side by side (up front or batch by
batch), and `SiameseTrainer`."""

from __future__ import annotations

from typing import Any

from datasets import Dataset
from transformers import PreTrainedTokenizerBase

from hfsiamese.base.model_arguments import ModelArguments
from hfsiamese.base.run_family import BuiltRun
from hfsiamese.bi_encoder.model_building import (
    build_model_and_tokenizer,
    builds_word_vocabulary,
    check_same_vocabulary,
    word_vocabulary,
)
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.data.arrow_columns import distinct_count
from hfsiamese.data.preprocessing import tokenize_pairs, untokenized_pairs
from hfsiamese.data.tokenizing_collator import TokenizingPairCollator
from hfsiamese.losses import SiameseLoss


class BiEncoderRun:
    """A Siamese bi-encoder's run: an in-batch loss, one or several data sets, a model that embeds each text alone."""

    architecture = "bi_encoder"
    arguments_class = SiameseTrainingArguments
    trainer_class = SiameseTrainer
    takes_loss = True
    several_datasets = True
    reranker = False

    def build_loss(self, training_args: SiameseTrainingArguments) -> SiameseLoss:
        """The loss `--loss` and its options name (`SiameseTrainingArguments.build_loss`)."""
        return training_args.build_loss()

    def build_model(
        self, model_args: ModelArguments, train_pairs: Dataset, *, loss: SiameseLoss | None, resume_from: str | None
    ) -> tuple[Any, PreTrainedTokenizerBase]:
        """`build_model_and_tokenizer`; a resumed run must rebuild its checkpoint's vocabulary, and a tokenizer of
        another model fails here, naming its file."""
        model, tokenizer = build_model_and_tokenizer(model_args, train_pairs, loss=loss)
        if resume_from is not None:
            check_same_vocabulary(tokenizer, resume_from)
        model.check_tokenizer(tokenizer)
        return model, tokenizer

    def derive_from_pairs(self, model_args: ModelArguments, train_pairs: Dataset) -> None:
        """A fresh LSTM's or static encoder's word vocabulary, kept in the pairs' prepared folder (`word_vocabulary`);
        nothing for a pretrained encoder or a checkpoint, whose tokenizer comes with it."""
        if builds_word_vocabulary(model_args):
            word_vocabulary(model_args, train_pairs)

    def tokenize(self, pairs: Dataset, run: BuiltRun, *, training: bool = False) -> Dataset:
        """Both questions tokenised side by side, with the model's default prompt (training and evaluation alike)."""
        prompt = run.model.config.prompt_text()
        max_length, num_proc = run.model_args.max_length, run.data_args.preprocessing_num_workers
        return tokenize_pairs(pairs, run.tokenizer, max_length=max_length, num_proc=num_proc, prompt=prompt)

    def text_collator(self, run: BuiltRun) -> TokenizingPairCollator:
        """Pairs left as text, tokenised batch by batch as `tokenize` would."""
        prompt = run.model.config.prompt_text()
        return TokenizingPairCollator(run.tokenizer, max_length=run.model_args.max_length, prompt=prompt)

    def text_rows(self, pairs: Dataset, run: BuiltRun) -> Dataset:
        """The pairs as `tokenize` leaves them but for the token columns (`untokenized_pairs`)."""
        return untokenized_pairs(pairs)

    def describe_rows(self, train: Dataset, validation: Dataset, run: BuiltRun, training_args: Any) -> str:
        """The training rows (their view, the loss, the duplicate groups) and the validation pairs."""
        groups = distinct_count(train, "group_id") if "group_id" in train.column_names else "no"
        return (
            f"train: {len(train)} rows ({run.data_args.train_view}, loss {training_args.loss}) in {groups} duplicate "
            f"groups; validation: {len(validation)} labelled pairs"
        )


BI_ENCODER_RUN = BiEncoderRun()

__all__ = ["BI_ENCODER_RUN", "BiEncoderRun"]
