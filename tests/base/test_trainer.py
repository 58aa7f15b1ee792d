"""`PairTrainer` and `PairTrainingArguments`: the one base every family's trainer and arguments build on."""

import dataclasses

import pytest

from hfsiamese.base.trainer import PairTrainer
from hfsiamese.base.training_args import PairTrainingArguments
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.cross_encoder.pair_inputs import tokenize_cross_pairs
from hfsiamese.cross_encoder.trainer import CrossEncoderTrainer
from hfsiamese.cross_encoder.training_args import CrossEncoderTrainingArguments
from hfsiamese.distillation.trainer import DistillationTrainer
from hfsiamese.losses import LOSS_OPTIONS
from tests.fixtures import tiny_eval_pairs, tiny_training_args

BI_ENCODER_ONLY = {"loss", *LOSS_OPTIONS, "gradient_cache_mini_batch_size", "no_duplicate_batches"}


def test_every_family_trainer_and_arguments_class_builds_on_the_base():
    for trainer_class in (SiameseTrainer, CrossEncoderTrainer, DistillationTrainer):
        assert issubclass(trainer_class, PairTrainer)
        assert issubclass(trainer_class.arguments_class, PairTrainingArguments)
    assert SiameseTrainer.arguments_class is SiameseTrainingArguments
    assert CrossEncoderTrainer.arguments_class is CrossEncoderTrainingArguments


def test_cross_encoder_arguments_have_the_shared_fields_and_no_bi_encoder_one(tmp_path):
    names = {f.name for f in dataclasses.fields(CrossEncoderTrainingArguments)}
    assert not names & BI_ENCODER_ONLY
    assert {"calibrate_threshold", "calibrate_for", "target_precision", "nan_policy", "share_cores"} <= names
    assert {f.name for f in dataclasses.fields(SiameseTrainingArguments)} >= BI_ENCODER_ONLY
    with pytest.raises(TypeError, match="margin"):
        CrossEncoderTrainingArguments(output_dir=str(tmp_path), margin=0.3)
    args = tiny_training_args(tmp_path, CrossEncoderTrainingArguments, per_device_train_batch_size=1)
    assert args.remove_unused_columns is False and args.bf16 is False  # the shared defaults, and no in-batch minimum
    with pytest.raises(ValueError, match="nan_policy must be 'raise' or 'skip'"):
        tiny_training_args(tmp_path, CrossEncoderTrainingArguments, nan_policy="ignore")


@pytest.mark.parametrize("arguments_class", [SiameseTrainingArguments, CrossEncoderTrainingArguments])
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_train_epochs": 0, "max_steps": -1}, r"num_train_epochs must be above 0 \(or set max_steps\), got 0"),
        ({"num_train_epochs": -1, "max_steps": 0}, "num_train_epochs must be above 0"),
        ({"learning_rate": -1.0}, "learning_rate must be at least 0, got -1.0"),
        ({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps must be at least 1, got 0"),
        ({"weight_decay": -1.0}, "weight_decay must be at least 0, got -1.0"),
    ],
)
def test_a_run_that_would_train_nothing_or_fail_at_its_first_step_is_refused(
    tmp_path, arguments_class, options, message
):
    # `hfsiamese train --num_train_epochs 0` trained no step and saved the model as trained; a negative learning rate
    # failed in the optimizer, after the data and the model were loaded
    with pytest.raises(ValueError, match=message):
        tiny_training_args(tmp_path, arguments_class, **options)
    assert tiny_training_args(tmp_path, arguments_class, num_train_epochs=0, max_steps=3).max_steps == 3


def test_a_trainer_refuses_the_other_familys_arguments(tiny_lstm, tmp_path):
    with pytest.raises(
        TypeError, match="SiameseTrainer needs SiameseTrainingArguments, got CrossEncoderTrainingArguments"
    ):
        SiameseTrainer(model=tiny_lstm, args=tiny_training_args(tmp_path, CrossEncoderTrainingArguments))


def test_the_users_arguments_keep_pinned_memory_while_a_cpu_loader_does_not_pin(tiny_cross_encoder, tmp_path):
    args = tiny_training_args(tmp_path, CrossEncoderTrainingArguments, use_cpu=False)  # (use_cpu turns pinning off)
    assert args.device.type == "cpu" and args.dataloader_pin_memory is True
    tokenizer = tiny_cross_encoder.tokenizer
    trainer = CrossEncoderTrainer(
        model=tiny_cross_encoder.model,
        args=args,
        eval_dataset=tokenize_cross_pairs(tiny_eval_pairs(), tokenizer, swapped_columns=True),
        processing_class=tokenizer,
    )
    assert trainer.get_eval_dataloader().pin_memory is False
    assert args.dataloader_pin_memory is True
