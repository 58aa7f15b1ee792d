"""One run start for either family (`start_run` with the family `--architecture` names): its loss, model, tokenised
rows and trainer are the family's; the cross-encoder's old entry points still work, with a FutureWarning."""

from __future__ import annotations

import pytest

from hfsiamese.base.model_arguments import ModelArguments
from hfsiamese.bi_encoder.run_family import BI_ENCODER_RUN
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.cross_encoder.run_family import CROSS_ENCODER_RUN
from hfsiamese.cross_encoder.tokenizing_collator import TokenizingCrossPairCollator
from hfsiamese.cross_encoder.trainer import CrossEncoderTrainer
from hfsiamese.cross_encoder.training_args import CrossEncoderTrainingArguments
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.run_start import (
    RUN_FAMILIES,
    StartedCrossEncoderRun,
    StartedRun,
    run_family,
    start_cross_encoder_run,
    start_run,
)
from tests.conftest import QQP_FILE
from tests.fixtures import tiny_training_args


def test_each_architecture_names_its_family():
    assert set(RUN_FAMILIES) == {"bi_encoder", "cross_encoder"}
    assert run_family(None) is BI_ENCODER_RUN and run_family("cross_encoder") is CROSS_ENCODER_RUN
    assert all(name == family.architecture for name, family in RUN_FAMILIES.items())
    with pytest.raises(ValueError, match=r"architecture must be one of \('bi_encoder', 'cross_encoder'\), got 'tri'"):
        run_family("tri")


def _cross_encoder_run(tiny_cross_encoder_dir, tmp_path, **data) -> tuple[StartedRun, CrossEncoderTrainingArguments]:
    model_args = ModelArguments(
        architecture="cross_encoder", encoder_type="transformer", model_name_or_path=str(tiny_cross_encoder_dir)
    )
    data_args = DataArguments(max_train_pairs=40, max_eval_pairs=20, **data)
    training_args = tiny_training_args(tmp_path, CrossEncoderTrainingArguments)
    return start_run(model_args, data_args, training_args, default_train_file=QQP_FILE), training_args


def test_a_cross_encoder_run_starts_on_the_one_path(tiny_cross_encoder_dir, tmp_path):
    run, training_args = _cross_encoder_run(tiny_cross_encoder_dir, tmp_path)
    assert run.family is CROSS_ENCODER_RUN and run.loss is None and run.validation_size is not None
    assert isinstance(run.cross_encoder, CrossEncoder) and run.cross_encoder.pair_order == "both"
    train = run.training_dataset()  # pairs read from a file: tokenised at once
    assert "input_ids" in train.column_names and len(train) == 2 * len(run.splits["train"])  # both orders as rows
    validation = run.tokenize(run.splits["validation"])
    assert "input_ids_swapped" in validation.column_names and len(validation) == len(run.splits["validation"])
    trainer = run.trainer(training_args, train, validation)
    assert type(trainer) is CrossEncoderTrainer and trainer.eval_pairs_total == run.validation_size
    line = run.describe_rows(train, validation, training_args)
    assert (
        line
        == f"cross-encoder: {len(train)} training rows (labelled pairs, pair order both), {len(validation)} validation pairs"
    )


def test_a_cross_encoder_run_tokenising_in_the_collator_leaves_both_orders_as_text(tiny_cross_encoder_dir, tmp_path):
    run, training_args = _cross_encoder_run(tiny_cross_encoder_dir, tmp_path, tokenize_in_collator=True)
    train = run.training_dataset()
    assert "input_ids" not in train.column_names and len(train) == 2 * len(run.splits["train"])
    assert train[len(run.splits["train"])]["question1"] == run.splits["train"][0]["question2"]
    trainer = run.trainer(training_args, train, run.tokenize(run.splits["validation"]))
    assert isinstance(trainer.data_collator, TokenizingCrossPairCollator)


def test_a_bi_encoder_run_has_its_loss_and_trainer(tmp_path):
    model_args = ModelArguments(embedding_dim=16, hidden_size=16, vocab_size=2000)
    data_args = DataArguments(max_train_pairs=60, max_eval_pairs=20)
    training_args = tiny_training_args(tmp_path, loss="contrastive")
    run = start_run(model_args, data_args, training_args, default_train_file=QQP_FILE)
    assert run.family is BI_ENCODER_RUN and type(run.loss).__name__ == "ContrastiveLoss"
    train = run.training_dataset()
    assert "input_ids_a" in train.column_names
    trainer = run.trainer(training_args, train, run.tokenize(run.splits["validation"]))
    assert type(trainer) is SiameseTrainer and trainer.loss_fn is run.loss
    assert run.describe_rows(train, train, training_args).startswith(
        f"train: {len(train)} rows (auto, loss contrastive)"
    )


def test_a_cross_encoder_refuses_several_data_sets_before_the_data(tiny_cross_encoder_dir, tmp_path):
    model_args = ModelArguments(
        architecture="cross_encoder", encoder_type="transformer", model_name_or_path=str(tiny_cross_encoder_dir)
    )
    data_args = DataArguments(train_datasets=[{"name": "a", "train_file": str(QQP_FILE)}])
    training_args = tiny_training_args(tmp_path, CrossEncoderTrainingArguments)
    with pytest.raises(
        ValueError, match="train_datasets .several data sets. trains a bi-encoder; a cross-encoder trains"
    ):
        start_run(model_args, data_args, training_args, default_train_file=QQP_FILE)


def test_the_old_cross_encoder_start_warns_and_gives_the_same_run(tiny_cross_encoder_dir, tmp_path):
    model_args = ModelArguments(
        architecture="cross_encoder", encoder_type="transformer", model_name_or_path=str(tiny_cross_encoder_dir)
    )
    training_args = tiny_training_args(tmp_path, CrossEncoderTrainingArguments)
    with pytest.warns(
        FutureWarning,
        match="start_cross_encoder_run moved to hfsiamese.training.run_start.start_run .* goes in hfsiamese 0.3",
    ):
        run = start_cross_encoder_run(
            model_args, DataArguments(max_train_pairs=40), training_args, default_train_file=QQP_FILE
        )
    assert isinstance(run, StartedCrossEncoderRun) and run.family is CROSS_ENCODER_RUN
