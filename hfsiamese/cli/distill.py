"""`hfsiamese distill`: distil a fine-tuned transformer (the teacher) into a fast CPU student: an LSTM or a static encoder.

    hfsiamese distill lstm_distilled_qqp --teacher_model_name_or_path outputs/minilm_qqp
    hfsiamese distill static_distilled_qqp --teacher_model_name_or_path outputs/minilm_qqp
    # a quick check with the bundled, not fine-tuned, MiniLM as the teacher
    hfsiamese distill static_distilled_qqp \
        --teacher_model_name_or_path sentence-transformers/all-MiniLM-L6-v2 --distillation_max_steps 300

Stage 1: the teacher embeds every question of the training split once; the student learns those
embeddings and the teacher's similarities on every labelled training pair and every pair within a
duplicate group (`--loss embedding_distillation`'s terms, `--embedding_weight`, `--score_weight`).
Stage 2 (`--fine_tune`, on by default): the student is fine-tuned on the labels with `--loss`, as
`hfsiamese train` trains. The data, its split and the validation pairs are `hfsiamese train`'s, so
the figures compare. `<output_dir>/all_results.json` holds the teacher's validation metrics
(`teacher_eval_*`), the student's after stage 1 (`distillation_eval_*`) and after stage 2 (`eval_*`).

The steps are the package's (`hfsiamese.training` for the run's start, folder, training and end,
`hfsiamese.distillation` for the teacher and stage 1); this module only puts them in order. Several processes:
`accelerate launch -m hfsiamese.cli.distill ...`.
"""

from __future__ import annotations

import logging
import sys

import torch
from transformers import HfArgumentParser

from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.cli.command_line import UsageError, run_recipe
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cli.configs import (
    DISTILL_CONFIG,
    config_listing,
    listing_requested,
    require_training_data,
    resolve_config_argument,
)
from hfsiamese.cli.run_folder import claim_output_dir
from hfsiamese.cli.split import held_out_command
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.distillation import (
    DistillationArguments,
    DistillationTrainer,
    distillation_pairs,
    distillation_training_args,
    encode_teacher_targets,
    load_teacher,
    teacher_path,
    with_teacher_rows,
)
from hfsiamese.evaluation import evaluate_pairs
from hfsiamese.training.arguments import DataArguments, ModelArguments, model_card_kwargs
from hfsiamese.training.preparation import training_view
from hfsiamese.training.run_end import end_run, save_run
from hfsiamese.training.run_start import start_run
from hfsiamese.training.run_training import train_evaluate_save
from hfsiamese.utils.console import configure_training_console

DEFAULT_CONFIG = DISTILL_CONFIG
DESCRIPTION = "Distil a fine-tuned transformer (the teacher) into a fast CPU student; a config (a shipped name or a file) may come first."

logger = logging.getLogger("hfsiamese.cli.distill")


def main(argv: list[str] | None = None) -> dict[str, float]:
    """`hfsiamese distill [CONFIG] --teacher_model_name_or_path TEACHER [--flag value ...]`: the run's metrics."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if listing_requested(argv):
        print(config_listing())
        return {}
    split_command = held_out_command(argv, DEFAULT_CONFIG)  # as typed: the summary's `hfsiamese split`
    argv = resolve_config_argument(argv)
    parser = HfArgumentParser(
        (ModelArguments, DataArguments, DistillationArguments, SiameseTrainingArguments),
        prog="hfsiamese distill",
        description=DESCRIPTION,
    )
    model_args, data_args, distill_args, training_args = parse_config_and_flags(
        parser, argv, default_config=DEFAULT_CONFIG
    )
    require_training_data(data_args.train_file, data_args.dataset_name)  # said before the output folder is made

    configure_training_console(training_args.should_log)
    if training_args.resume_from_checkpoint is not None:
        raise UsageError("hfsiamese distill does not resume a run: start it again with --overwrite_output_dir")
    teacher_path(distill_args.teacher_model_name_or_path)  # a missing teacher fails before any data work
    with claim_output_dir(training_args, data_args, argv, DEFAULT_CONFIG):  # named, checked, locked
        return distill(model_args, data_args, distill_args, training_args, split_command=split_command)


def distill(
    model_args: ModelArguments,
    data_args: DataArguments,
    distill_args: DistillationArguments,
    training_args: SiameseTrainingArguments,
    *,
    split_command: str | None = None,
) -> dict[str, float]:
    """Both stages, once the output folder is this run's (`split_command`: the summary's `hfsiamese split`)."""
    default_train_file = require_training_data(data_args.train_file, data_args.dataset_name)
    run = start_run(model_args, data_args, training_args, default_train_file=default_train_file)
    model, tokenizer, loss, splits = run.model, run.tokenizer, run.loss, run.splits
    eval_dataset = run.tokenize(splits["validation"])

    # Stage 1: the teacher's embeddings of every training question, learned on pairs.
    metrics: dict[str, float] = {}
    teacher, teacher_tokenizer = load_teacher(distill_args.teacher_model_name_or_path, device=training_args.device)
    rows = distillation_pairs(
        splits["train"],
        include_group_pairs=distill_args.distill_group_pairs,
        max_pairs_per_group=data_args.max_pairs_per_group,
        seed=data_args.split_seed,
    )
    targets = encode_teacher_targets(
        teacher,
        teacher_tokenizer,
        list(rows["question1"]) + list(rows["question2"]),
        batch_size=distill_args.teacher_batch_size,
    )
    if distill_args.evaluate_teacher:
        teacher_metrics = evaluate_pairs(
            teacher, splits["validation"], teacher_tokenizer, batch_size=distill_args.teacher_batch_size
        )
        metrics.update({f"teacher_eval_{name}": value for name, value in teacher_metrics.items()})
    del teacher
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    with training_args.main_process_first(desc="tokenising pairs"):
        stage1_dataset = run.tokenize(with_teacher_rows(rows, targets))
    if training_args.process_index == 0:
        logger.info(
            "stage 1: %d pairs over %d distinct questions, teacher dim %d",
            len(stage1_dataset),
            len(targets.texts),
            targets.dim,
        )
    stage1_args = distillation_training_args(training_args, distill_args)
    trainer = run.trainer(
        stage1_args,
        stage1_dataset,
        eval_dataset,
        trainer_class=DistillationTrainer,
        teacher_vectors=targets.vectors,
        loss=stage1_args.build_loss(),
    )
    stage1_metrics = dict(trainer.train().metrics)
    # Evaluating calibrates config.threshold, which save_model then stores with the weights.
    eval_metrics = trainer.evaluate()
    metrics.update({f"distillation_{name}": value for name, value in {**stage1_metrics, **eval_metrics}.items()})
    metrics["distillation_train_samples"] = len(stage1_dataset)

    # Stage 2: fine-tuning on the labels, as `hfsiamese train` trains.
    card = model_card_kwargs(model_args, data_args)
    card["arguments"]["teacher_model_name_or_path"] = distill_args.teacher_model_name_or_path
    if distill_args.fine_tune:
        with training_args.main_process_first(desc="tokenising pairs"):
            train_dataset = run.tokenize(training_view(splits["train"], data_args, loss, model, tokenizer))
        trainer = run.trainer(training_args, train_dataset, eval_dataset)
        metrics = train_evaluate_save(trainer, card=card, earlier_metrics=metrics)
    else:
        metrics.update(eval_metrics)
        save_run(trainer, metrics, card=card)
    end_run(trainer, metrics, corpus_file=data_args.train_file or default_train_file, split_command=split_command)
    return metrics


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
