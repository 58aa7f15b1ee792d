"""`hfsiamese train`: train a Siamese bi-encoder (or a cross-encoder) on question pairs.

    hfsiamese train                                                      # default: LSTM on the embedded QQP pairs
    hfsiamese train minilm_qqp --max_steps 100                           # a shipped config by name (--list-configs)
    hfsiamese train --model_name_or_path sentence-transformers/all-mpnet-base-v2   # any pretrained model, as configured
    hfsiamese train --train_file pairs.csv --validation_file val.csv --output_dir outputs/mine
    hfsiamese train cross_minilm_qqp                                     # a cross-encoder (architecture: cross_encoder)
    accelerate launch -m hfsiamese.cli.train minilm_qqp                  # several processes (GPUs, or CPU processes)

A config may come first: a shipped one by name (`hfsiamese train --list-configs`) or a YAML/JSON file; flags after
it override it. With none, the LSTM recipe is the default, or,
when `--model_name_or_path` names a pretrained model to start from, the `pretrained_qqp` config. Without `--output_dir` the run is
saved to `outputs/<run name>` (the config's name, or the training data's name and the loss; a
numbered folder beside it when that one holds an earlier run). Without `--train_file` or `--dataset_name` the run
trains on the embedded QQP pairs of a clone of the repository (`recipes/data/qqp_dev.tsv`). The end of the run prints
where the model went, its validation metrics and the commands to use it; `<output_dir>/all_results.json` holds
every metric. Errors are one line (`--debug` shows the traceback).

`hfsiamese train` runs in this one process (as `python recipes/train.py` does); several processes (GPUs, or CPU
processes) are started by `accelerate launch -m hfsiamese.cli.train ...` (or `accelerate launch recipes/train.py` in a
clone).

With `--architecture cross_encoder` the same command trains a cross-encoder (`hfsiamese.cross_encoder`): both
questions read together, binary cross-entropy on labelled pairs, the same splits, calibration and outputs.

The steps are the package's (`hfsiamese.training` for the run's arguments, data, start, folder, training and end;
the family `--architecture` names supplies its arguments, model, tokenisation and trainer: `hfsiamese.base.run_family`);
this module only puts them in order, one path for either family.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets

from hfsiamese.base.checkpoints import resolve_resume_checkpoint
from hfsiamese.base.training_args import PairTrainingArguments
from hfsiamese.bi_encoder.sentence_transformers_export import check_export, export_sentence_transformers
from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import (
    config_file_of,
    default_config_of,
    flag_value,
    parse_config_and_flags,
    read_config_file,
    value_given,
)
from hfsiamese.cli.configs import (
    DEFAULT_CONFIG,
    PRETRAINED_CONFIG,
    config_listing,
    listing_requested,
    require_training_data,
    resolve_config_argument,
)
from hfsiamese.cli.run_folder import claim_output_dir
from hfsiamese.cli.split import held_out_command
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.losses import LOSS_OPTIONS, loss_name
from hfsiamese.preparation import is_prepared_folder, prepared_source
from hfsiamese.training.arguments import DataArguments, ModelArguments, model_card_kwargs
from hfsiamese.training.run_end import end_run
from hfsiamese.training.run_start import StartedRun, run_family, several_datasets_inputs, start_run
from hfsiamese.training.run_training import train_evaluate_save
from hfsiamese.utils.console import configure_training_console
from hfsiamese.utils.deprecation import warn_deprecated

logger = logging.getLogger("hfsiamese.cli.train")
DESCRIPTION = "Train a Siamese bi-encoder (or a cross-encoder) on question pairs; a config (a shipped name or a file) may come first."


def main(argv: list[str] | None = None) -> dict[str, float]:
    """`hfsiamese train [CONFIG] [--flag value ...]`: the run's metrics (printed as a summary at its end)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if listing_requested(argv):
        print(config_listing())
        return {}
    typed = argv  # as the user typed it, for the `hfsiamese split` command the summary prints
    argv = resolve_config_argument(argv)  # a shipped config by name, or the user's file
    default_config = default_config_of(argv, DEFAULT_CONFIG, pretrained_config=PRETRAINED_CONFIG)
    family = run_family(architecture_of(argv, default_config))  # its arguments are what the command line parses
    if not family.takes_loss:
        refuse_bi_encoder_losses(argv, default_config)  # by name, before the parser calls them unknown
    parser = command_parser(
        (ModelArguments, DataArguments, family.arguments_class), prog="hfsiamese train", description=DESCRIPTION
    )
    model_args, data_args, training_args = parse_config_and_flags(parser, argv, default_config=default_config)
    if not data_args.train_datasets:  # several data sets name their own (`hfsiamese.training.several_datasets`)
        require_training_data(data_args.train_file, data_args.dataset_name)  # said before the output folder is made

    configure_training_console(training_args.should_log)
    run_family(model_args.architecture)  # the value parsed is checked too
    # A run folder is named after a family other than the default one (`outputs/<data>-cross_encoder`).
    trained_with = None if model_args.architecture == "bi_encoder" else model_args.architecture
    # Several data sets have no one held-out split to write: no `hfsiamese split` line then.
    split_command = None if data_args.train_datasets else held_out_command(typed, default_config)
    with claim_output_dir(
        training_args, data_args, argv, default_config, trained_with=trained_with
    ):  # named, checked, locked
        return train(model_args, data_args, training_args, split_command=split_command)


def train(
    model_args: ModelArguments,
    data_args: DataArguments,
    training_args: PairTrainingArguments,
    *,
    split_command: str | None = None,
) -> dict[str, float]:
    """The run itself, of either family (`model_args.architecture`), once the output folder is this run's
    (`split_command`: the summary's `hfsiamese split`)."""
    # Resolved before any data work, so that `--resume_from_checkpoint auto` with nothing to resume fails at once.
    resume_from = resolve_resume_checkpoint(training_args.resume_from_checkpoint, training_args.output_dir)
    # What the command says of the run's data, read from its arguments once, before the run takes them over: the
    # default pairs, the questions the end-of-run search command names, and the model card (README.md, beside the
    # weights; with --push_to_hub the folder is uploaded too).
    train_file = default_train_file(data_args)
    corpus_file = corpus_file_of(data_args)
    card = model_card_kwargs(model_args, data_args)
    run = start_run(model_args, data_args, training_args, default_train_file=train_file, resume_from=resume_from)
    if model_args.export_sentence_transformers:
        # An LSTM, or an export already there, fails now rather than after training.
        check_export(run.model, model_args.export_sentence_transformers, overwrite=training_args.overwrite_output_dir)
    if run.parts is not None:
        trainer, test_dataset = several_datasets_trainer(run, training_args)
    else:
        with training_args.main_process_first(desc="tokenising pairs"):
            train_dataset = run.training_dataset()
            eval_dataset = run.tokenize(run.splits["validation"])
            test_dataset = run.tokenize(run.splits["test"]) if "test" in run.splits else None
        if training_args.process_index == 0:
            logger.info("%s", run.describe_rows(train_dataset, eval_dataset, training_args))
        trainer = run.trainer(training_args, train_dataset, eval_dataset)
    zero_stage = trainer.accelerator.state.deepspeed_plugin.zero_stage if trainer.is_deepspeed_enabled else None
    if model_args.export_sentence_transformers and (trainer.is_fsdp_enabled or zero_stage == 3):
        # The export reads the live model, whose weights FSDP and ZeRO-3 leave sharded over the processes.
        raise ValueError(
            "--export_sentence_transformers does not work under FSDP or DeepSpeed ZeRO-3: train without it, then "
            "export the saved folder (hfsiamese.bi_encoder.sentence_transformers_export.export_sentence_transformers on SiameseModel.from_pretrained)"
        )
    if resume_from is not None and training_args.process_index == 0:
        logger.info("resuming from %s", resume_from)
    metrics = train_evaluate_save(trainer, card=card, resume_from=resume_from, test_dataset=test_dataset)
    if model_args.export_sentence_transformers and trainer.is_world_process_zero():
        export_sentence_transformers(
            run.model,
            model_args.export_sentence_transformers,
            run.tokenizer,
            overwrite=training_args.overwrite_output_dir,
        )
    end_run(trainer, metrics, corpus_file=corpus_file, reranker=run.family.reranker, split_command=split_command)
    return metrics


def several_datasets_trainer(
    run: StartedRun, training_args: PairTrainingArguments
) -> tuple[Any, dict[str, datasets.Dataset] | None]:
    """The trainer of a run on several data sets (`train_datasets`), and their test pairs if any."""
    with training_args.main_process_first(desc="tokenising pairs"):
        inputs = several_datasets_inputs(run)
    if training_args.process_index == 0:
        for name, rows in inputs.train.items():
            logger.info(
                "train %s: %d rows (loss %s); validation: %d labelled pairs",
                name, len(rows), loss_name(inputs.losses[name]), len(inputs.validation[name]),
            )  # fmt: skip
    trainer = run.trainer(
        training_args, inputs.train, inputs.validation, loss=inputs.losses, dataset_weights=inputs.weights
    )
    return trainer, inputs.test


def train_cross_encoder(
    model_args: ModelArguments,
    data_args: DataArguments,
    training_args: PairTrainingArguments,
    *,
    split_command: str | None = None,
) -> dict[str, float]:
    """Deprecated: `train`, which runs either family (a cross-encoder's by `model_args.architecture`)."""
    warn_deprecated("name", "hfsiamese.cli.train.train_cross_encoder")
    return train(model_args, data_args, training_args, split_command=split_command)


def architecture_of(argv: list[str], default_config: str | Path) -> str | None:
    """The run's family before the command line is parsed: `--architecture` on the command line, else the config's
    (None: neither names one, a bi-encoder)."""
    architecture = flag_value("architecture", argv)
    config_file = config_file_of(argv, default_config)
    if architecture is None and config_file is not None:
        architecture = read_config_file(config_file).get("architecture")
    return architecture


def refuse_bi_encoder_losses(argv: Sequence[str], default_config: str | Path | None) -> None:
    """A cross-encoder trains with binary cross-entropy: `--loss` or a loss option, on the command line or in the
    config, is refused by name, as a bi-encoder setting (`CrossEncoderTrainingArguments` has no such field, which
    the parser would call only an unknown key). Called before the command line is parsed."""
    config_file = config_file_of(argv, default_config)
    given = [name for name in ("loss", *sorted(LOSS_OPTIONS)) if value_given(name, argv, config_file)]
    if given:
        raise ValueError(
            f"{', '.join(given)}: bi-encoder loss settings; a cross-encoder (architecture cross_encoder) trains with "
            "binary cross-entropy on the pair labels"
        )


def default_train_file(data_args: DataArguments) -> Path | None:
    """The pairs a run trains on when it names none: the embedded QQP pairs of a clone (None when it names some)."""
    return require_training_data(data_args.train_file, data_args.dataset_name)


def corpus_file_of(data_args: DataArguments) -> str | Path | None:
    """The questions the end-of-run search command names: the training file (none for a Hub data set or several)."""
    if data_args.train_datasets:
        return None
    if is_prepared_folder(data_args.train_file):  # the texts are in the file it was prepared from
        return prepared_source(str(data_args.train_file))
    return data_args.train_file or default_train_file(data_args)


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
