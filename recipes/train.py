#!/usr/bin/env python
"""Train a Siamese bi-encoder on question pairs.

    accelerate launch recipes/train.py                                   # default: LSTM on the embedded QQP pairs
    accelerate launch recipes/train.py recipes/configs/minilm_qqp.yaml --max_steps 100
    python recipes/train.py --model_name_or_path sentence-transformers/all-mpnet-base-v2   # any pretrained model, as configured
    python recipes/train.py --train_file pairs.csv --validation_file val.csv --output_dir outputs/mine
    python recipes/train.py recipes/configs/cross_minilm_qqp.yaml           # a cross-encoder (architecture: cross_encoder)

A YAML/JSON config may come first; flags after it override it. With none, the LSTM recipe is the default, or,
when `--model_name_or_path` names a pretrained model to start from, `configs/pretrained_qqp.yaml`. Without `--output_dir` the run is
saved to `outputs/<run name>` (the config's name, or the training data's name and the loss; a
numbered folder beside it when that one holds an earlier run). The end of the run prints where the
model went, its validation metrics and the commands to use it; `<output_dir>/all_results.json` holds
every metric. Errors are one line (`--debug` shows the traceback).

With `--architecture cross_encoder` the same command trains a cross-encoder (`hfsiamese.cross_encoder`): both
questions read together, binary cross-entropy on labelled pairs, the same splits, calibration and outputs.

The steps are the package's (`hfsiamese.runs` for the run's start, folder and end, `hfsiamese.training` for
the arguments and data, `hfsiamese.trainer`); this script only puts them in order.
"""

from __future__ import annotations

import hfsiamese  # first: in a command, picks OpenMP's wait policy before torch loads; registers the auto classes

# isort: split
import logging
import sys
from pathlib import Path

from transformers import HfArgumentParser

from hfsiamese.exporters import check_export, export_sentence_transformers
from hfsiamese.runs import (
    claim_output_dir,
    configure_training_console,
    default_config_of,
    end_run,
    parse_config_and_flags,
    refuse_bi_encoder_losses,
    run_recipe,
    save_run,
    start_cross_encoder_run,
    start_run,
)
from hfsiamese.trainer import CrossEncoderTrainer, SiameseTrainer, SiameseTrainingArguments, resolve_resume_checkpoint
from hfsiamese.training import ARCHITECTURES, DataArguments, ModelArguments, model_card_kwargs, training_view

RECIPES_DIR = Path(__file__).resolve().parent
DEFAULT_CONFIG = RECIPES_DIR / "configs" / "lstm_qqp.yaml"
PRETRAINED_CONFIG = RECIPES_DIR / "configs" / "pretrained_qqp.yaml"
DEFAULT_TRAIN_FILE = RECIPES_DIR / "data" / "qqp_dev.tsv"

logger = logging.getLogger("hfsiamese.recipes.train")


def main(argv: list[str] | None = None) -> dict[str, float]:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = HfArgumentParser((ModelArguments, DataArguments, SiameseTrainingArguments))
    default_config = default_config_of(argv, DEFAULT_CONFIG, pretrained_config=PRETRAINED_CONFIG)
    model_args, data_args, training_args = parse_config_and_flags(parser, argv, default_config=default_config)

    configure_training_console(training_args.should_log)
    if model_args.architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {model_args.architecture!r}")
    if model_args.architecture == "cross_encoder":
        refuse_bi_encoder_losses(argv, default_config)
    trained_with = "cross_encoder" if model_args.architecture == "cross_encoder" else None  # names the run's folder
    with claim_output_dir(training_args, data_args, argv, default_config, trained_with=trained_with):  # named, checked, locked
        if model_args.architecture == "cross_encoder":
            return train_cross_encoder(model_args, data_args, training_args)
        return train(model_args, data_args, training_args)


def train(
    model_args: ModelArguments, data_args: DataArguments, training_args: SiameseTrainingArguments
) -> dict[str, float]:
    """The run itself, once the output folder is this run's."""
    # Resolved before any data work, so that `--resume_from_checkpoint auto` with nothing to resume fails at once.
    resume_from = resolve_resume_checkpoint(training_args.resume_from_checkpoint, training_args.output_dir)
    run = start_run(model_args, data_args, training_args, default_train_file=DEFAULT_TRAIN_FILE, resume_from=resume_from)
    model, tokenizer, loss, splits = run.model, run.tokenizer, run.loss, run.splits
    if model_args.export_sentence_transformers:
        # An LSTM, or an export already there, fails now rather than after training.
        check_export(model, model_args.export_sentence_transformers, overwrite=training_args.overwrite_output_dir)
    with training_args.main_process_first(desc="tokenising pairs"):
        train_dataset = run.tokenize(training_view(splits["train"], data_args, loss, model, tokenizer))
        eval_dataset = run.tokenize(splits["validation"])
        test_dataset = run.tokenize(splits["test"]) if "test" in splits else None
    if training_args.process_index == 0:
        logger.info(
            "train: %d rows (%s, loss %s) in %d duplicate groups; validation: %d labelled pairs",
            len(train_dataset),
            data_args.train_view,
            training_args.loss,
            len(set(train_dataset["group_id"])),
            len(eval_dataset),
        )

    trainer = SiameseTrainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        loss=loss,
        training_questions=run.training_questions,
    )
    zero_stage = trainer.accelerator.state.deepspeed_plugin.zero_stage if trainer.is_deepspeed_enabled else None
    if model_args.export_sentence_transformers and (trainer.is_fsdp_enabled or zero_stage == 3):
        # The export reads the live model, whose weights FSDP and ZeRO-3 leave sharded over the processes.
        raise ValueError(
            "--export_sentence_transformers does not work under FSDP or DeepSpeed ZeRO-3: train without it, then "
            "export the saved folder (hfsiamese.exporters.export_sentence_transformers on SiameseModel.from_pretrained)"
        )
    if resume_from is not None and training_args.process_index == 0:
        logger.info("resuming from %s", resume_from)
    train_result = trainer.train(resume_from_checkpoint=resume_from)
    metrics = dict(train_result.metrics)
    metrics["train_samples"] = len(train_dataset)
    # Evaluating calibrates config.threshold, which save_model then stores with the weights.
    eval_metrics = trainer.evaluate()
    metrics.update(eval_metrics)
    if test_dataset is not None:
        # Scored at the threshold just calibrated on validation, never re-fitted on test.
        eval_metrics.update(trainer.evaluate(test_dataset, metric_key_prefix="test"))
        metrics.update(eval_metrics)
    # The model card (README.md) goes beside the weights; with --push_to_hub the folder is uploaded too.
    save_run(trainer, metrics, card=model_card_kwargs(model_args, data_args))
    if model_args.export_sentence_transformers and trainer.is_world_process_zero():
        export_sentence_transformers(
            model, model_args.export_sentence_transformers, tokenizer, overwrite=training_args.overwrite_output_dir
        )
    end_run(trainer, metrics, corpus_file=corpus_file_of(data_args), recipes_dir=RECIPES_DIR)
    return metrics


def train_cross_encoder(
    model_args: ModelArguments, data_args: DataArguments, training_args: SiameseTrainingArguments
) -> dict[str, float]:
    """A cross-encoder's run (`--architecture cross_encoder`), once the output folder is this run's."""
    resume_from = resolve_resume_checkpoint(training_args.resume_from_checkpoint, training_args.output_dir)
    run = start_cross_encoder_run(model_args, data_args, training_args, default_train_file=DEFAULT_TRAIN_FILE)
    with training_args.main_process_first(desc="tokenising pairs"):
        train_dataset = run.tokenize(run.splits["train"], training=True)
        eval_dataset = run.tokenize(run.splits["validation"])
        test_dataset = run.tokenize(run.splits["test"]) if "test" in run.splits else None
    if training_args.process_index == 0:
        logger.info(
            "cross-encoder: %d training rows (labelled pairs, pair order %s), %d validation pairs",
            len(train_dataset),
            run.cross_encoder.pair_order,
            len(eval_dataset),
        )
    trainer = CrossEncoderTrainer(
        model=run.cross_encoder.model,
        args=training_args,
        train_dataset=train_dataset,
        eval_dataset=eval_dataset,
        processing_class=run.cross_encoder.tokenizer,
        training_questions=run.training_questions,
    )
    train_result = trainer.train(resume_from_checkpoint=resume_from)
    metrics = {**train_result.metrics, "train_samples": len(train_dataset)}
    metrics.update(trainer.evaluate())  # calibrates config.threshold, which save_model then stores
    if test_dataset is not None:
        metrics.update(trainer.evaluate(test_dataset, metric_key_prefix="test"))
    save_run(trainer, metrics, card=model_card_kwargs(model_args, data_args))
    end_run(trainer, metrics, corpus_file=corpus_file_of(data_args), recipes_dir=RECIPES_DIR, reranker=True)
    return metrics


def corpus_file_of(data_args: DataArguments) -> str | Path | None:
    """The questions the end-of-run search command names: the training file (none for a Hub data set)."""
    return data_args.train_file or (None if data_args.dataset_name else DEFAULT_TRAIN_FILE)


if __name__ == "__main__":
    hfsiamese.apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy); a library call has none
    run_recipe(main)
