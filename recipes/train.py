#!/usr/bin/env python
"""Train a Siamese bi-encoder on question pairs.

    accelerate launch recipes/train.py                                   # default: LSTM on the embedded QQP pairs
    accelerate launch recipes/train.py recipes/configs/minilm_qqp.yaml --max_steps 100
    python recipes/train.py --train_file pairs.csv --validation_file val.csv --output_dir outputs/mine

A YAML/JSON config may come first; flags after it override it. Without `--output_dir` the run is
saved to `outputs/<run name>` (the config's name, or the training data's name and the loss; a
numbered folder beside it when that one holds an earlier run). The end of the run prints where the
model went, its validation metrics and the commands to use it; `<output_dir>/all_results.json` holds
every metric. Errors are one line (`--debug` shows the traceback).

The steps are the package's (`hfsiamese.arguments`, `hfsiamese.model_building`,
`hfsiamese.data.preparation`, `hfsiamese.trainer`); this script only puts them in order.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from transformers import HfArgumentParser, set_seed
from transformers.trainer_utils import enable_full_determinism

from hfsiamese.arguments import DataArguments, ModelArguments, model_card_kwargs, parse_config_and_flags
from hfsiamese.command_line import run_recipe
from hfsiamese.cpu_threads import apply_cpu_threads
from hfsiamese.data import tokenize_pairs
from hfsiamese.data.preparation import load_splits, training_view
from hfsiamese.export_sentence_transformers import check_export, export_sentence_transformers
from hfsiamese.model_building import build_model_and_tokenizer, check_same_vocabulary
from hfsiamese.run_folder import claim_output_dir
from hfsiamese.trainer import SiameseTrainer, SiameseTrainingArguments
from hfsiamese.trainer.checkpoints import resolve_resume_checkpoint
from hfsiamese.trainer.progress import configure_training_console
from hfsiamese.trainer.run_end import end_run, save_run

RECIPES_DIR = Path(__file__).resolve().parent
DEFAULT_CONFIG = RECIPES_DIR / "configs" / "lstm_qqp.yaml"
DEFAULT_TRAIN_FILE = RECIPES_DIR / "data" / "qqp_dev.tsv"

logger = logging.getLogger("hfsiamese.recipes.train")


def main(argv: list[str] | None = None) -> dict[str, float]:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = HfArgumentParser((ModelArguments, DataArguments, SiameseTrainingArguments))
    model_args, data_args, training_args = parse_config_and_flags(parser, argv, default_config=DEFAULT_CONFIG)

    configure_training_console(training_args.should_log)
    lock = claim_output_dir(training_args, data_args, argv, DEFAULT_CONFIG)  # named, checked, locked
    try:
        return train(model_args, data_args, training_args)
    finally:
        lock.release()


def train(
    model_args: ModelArguments, data_args: DataArguments, training_args: SiameseTrainingArguments
) -> dict[str, float]:
    """The run itself, once the output folder is this run's."""
    # Resolved before any data work, so that `--resume_from_checkpoint auto` with nothing to resume fails at once.
    resume_from = resolve_resume_checkpoint(training_args.resume_from_checkpoint, training_args.output_dir)
    # Seeded as the Trainer seeds itself: the model's initialisation draws from these generators.
    enable_full_determinism(training_args.seed) if training_args.full_determinism else set_seed(training_args.seed)
    # All the cores a process owns, also under `accelerate launch` (which would leave one thread per process).
    # CPU float results depend on the thread count (it splits reductions): compare runs with equal counts.
    threads = apply_cpu_threads(training_args.num_threads)
    if training_args.process_index == 0:
        logger.info("seed %d, %d CPU threads per process (%s)", training_args.seed, threads.num_threads, threads.reason)

    with training_args.main_process_first(desc="loading and splitting pairs"):
        splits = load_splits(data_args, default_train_file=DEFAULT_TRAIN_FILE)
    loss = training_args.build_loss()
    model, tokenizer = build_model_and_tokenizer(model_args, splits["train"], loss=loss)
    if resume_from is not None:
        check_same_vocabulary(tokenizer, resume_from)
    model.check_tokenizer(tokenizer)  # a tokenizer of another model fails here, naming its file
    if model_args.export_sentence_transformers:
        # An LSTM, or an export already there, fails now rather than after training.
        check_export(model, model_args.export_sentence_transformers, overwrite=training_args.overwrite_output_dir)
    with training_args.main_process_first(desc="tokenising pairs"):
        tokenize = dict(max_length=model_args.max_length, num_proc=data_args.preprocessing_num_workers)
        train_dataset = tokenize_pairs(
            training_view(splits["train"], data_args, loss, model, tokenizer), tokenizer, **tokenize
        )
        eval_dataset = tokenize_pairs(splits["validation"], tokenizer, **tokenize)
        test_dataset = tokenize_pairs(splits["test"], tokenizer, **tokenize) if "test" in splits else None
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
    corpus = data_args.train_file or (None if data_args.dataset_name else DEFAULT_TRAIN_FILE)
    end_run(trainer, metrics, corpus_file=corpus, recipes_dir=RECIPES_DIR)
    return metrics


if __name__ == "__main__":
    run_recipe(main)
