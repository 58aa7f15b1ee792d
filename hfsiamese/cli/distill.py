"""`hfsiamese distill`: distil a fine-tuned transformer (the teacher) into a fast CPU student: an LSTM or a static encoder.

    hfsiamese distill lstm_distilled_qqp --teacher_model_name_or_path outputs/minilm_qqp
    hfsiamese distill static_distilled_qqp --teacher_model_name_or_path outputs/minilm_qqp
    # a quick check with the bundled, not fine-tuned, MiniLM as the teacher
    hfsiamese distill static_distilled_qqp \
        --teacher_model_name_or_path sentence-transformers/all-MiniLM-L6-v2 --distillation_max_steps 300

Stage 1: the teacher embeds every question of the training split once; the student learns those
embeddings and the teacher's similarities on every labelled training pair and every pair within a
duplicate group (`--loss embedding_distillation`'s terms, `--embedding_weight`, `--score_weight`).
With `--distillation_targets scores` the student learns instead the teacher's scores of the rows of
`--teacher_scores_file` (a query, its positive, its negatives and the teacher's score of each:
`--score_distillation_loss margin_mse` or `listwise_kl`); with `both`, the embeddings, then the scores
(`score_distillation_*` in all_results.json).
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
from pathlib import Path

import datasets
import torch
from transformers import PreTrainedTokenizerBase

from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.cli.command_line import UsageError, run_recipe
from hfsiamese.cli.command_parser import command_parser
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
from hfsiamese.data.teacher_score_rows import load_teacher_score_rows
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
from hfsiamese.models.siamese.modeling_siamese import SiameseModel
from hfsiamese.preparation.derived_cache import prepared_folder_of
from hfsiamese.training.arguments import DataArguments, ModelArguments, model_card_kwargs
from hfsiamese.training.preparation import training_view
from hfsiamese.training.run_end import end_run, save_run
from hfsiamese.training.run_start import StartedRun, start_run
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
    parser = command_parser(
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
    if distill_args.learns_embeddings or distill_args.evaluate_teacher:
        teacher_path(distill_args.teacher_model_name_or_path)  # a missing teacher fails before any data work
    if distill_args.learns_scores and not data_args.teacher_scores_file:
        raise UsageError(
            f"--distillation_targets {distill_args.distillation_targets} learns the teacher's scores of scored rows: "
            "give --teacher_scores_file (question1, question2, negative, teacher_scores)"
        )
    with claim_output_dir(training_args, data_args, argv, DEFAULT_CONFIG):  # named, checked, locked
        return distill(model_args, data_args, distill_args, training_args, split_command=split_command)


def learn_teacher_embeddings(
    run: StartedRun,
    teacher: SiameseModel,
    teacher_tokenizer: PreTrainedTokenizerBase,
    data_args: DataArguments,
    distill_args: DistillationArguments,
    training_args: SiameseTrainingArguments,
    eval_dataset: datasets.Dataset,
) -> DistillationTrainer:
    """Stage 1's trainer on the teacher's embeddings of every training question, on pairs (not trained yet)."""
    rows = distillation_pairs(
        run.splits["train"],
        include_group_pairs=distill_args.distill_group_pairs,
        max_pairs_per_group=data_args.max_pairs_per_group,
        seed=data_args.split_seed,
    )
    targets = encode_teacher_targets(
        teacher,
        teacher_tokenizer,
        list(rows["question1"]) + list(rows["question2"]),
        batch_size=distill_args.teacher_batch_size,
        shards_dir=teacher_embeddings_dir(run, distill_args, training_args),
    )
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
    return run.trainer(
        stage1_args,
        stage1_dataset,
        eval_dataset,
        trainer_class=DistillationTrainer,
        teacher_vectors=targets.vectors,
        loss=stage1_args.build_loss(),
    )


def teacher_embeddings_dir(
    run: StartedRun, distill_args: DistillationArguments, training_args: SiameseTrainingArguments
) -> Path | None:
    """Where the teacher's embeddings are sharded (`--teacher_embeddings_dir`; by default in the output folder when
    the pairs come from a prepared folder, whose millions of questions a killed run should not embed again), or None:
    in memory, as for the bundled pairs."""
    if distill_args.teacher_embeddings_dir is not None:
        return Path(distill_args.teacher_embeddings_dir)
    if prepared_folder_of(run.splits["train"]) is not None:
        return Path(training_args.output_dir) / "teacher_embeddings"
    return None


def run_stage(trainer: SiameseTrainer, prefix: str) -> tuple[dict[str, float], dict[str, float]]:
    """
    Train a stage 1 trainer, then evaluate it (which calibrates config.threshold, saved with the weights): its
    metrics under `prefix` (`distillation_train_loss`, `distillation_eval_f1`, ..., `distillation_train_samples`),
    and the evaluation's as it gave them.
    """
    train_metrics = dict(trainer.train().metrics)
    eval_metrics = trainer.evaluate()
    metrics = {f"{prefix}_{name}": value for name, value in {**train_metrics, **eval_metrics}.items()}
    metrics[f"{prefix}_train_samples"] = len(trainer.train_dataset)
    return metrics, eval_metrics


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

    # Stage 1: the teacher's embeddings of every training question, learned on pairs (and/or its scores of scored rows).
    metrics: dict[str, float] = {}
    teacher = teacher_tokenizer = None
    if distill_args.learns_embeddings or distill_args.evaluate_teacher:
        teacher, teacher_tokenizer = load_teacher(distill_args.teacher_model_name_or_path, device=training_args.device)
    if distill_args.learns_embeddings:  # sizes the embedding term cannot compare: said before the teacher encodes
        stage1_loss = distillation_training_args(training_args, distill_args).build_loss()
        if hasattr(stage1_loss, "check_sizes"):
            stage1_loss.check_sizes(model.config.sentence_embedding_dim, teacher.config.sentence_embedding_dim)
    if distill_args.evaluate_teacher:
        teacher_metrics = evaluate_pairs(
            teacher, splits["validation"], teacher_tokenizer, batch_size=distill_args.teacher_batch_size
        )
        metrics.update({f"teacher_eval_{name}": value for name, value in teacher_metrics.items()})
    if distill_args.learns_embeddings:
        trainer = learn_teacher_embeddings(
            run, teacher, teacher_tokenizer, data_args, distill_args, training_args, eval_dataset
        )
        stage, eval_metrics = run_stage(trainer, "distillation")
        metrics.update(stage)
    del teacher
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    if distill_args.learns_scores:
        assert data_args.teacher_scores_file is not None  # checked by `main` before the output folder was made
        with training_args.main_process_first(desc="tokenising pairs"):
            score_dataset = run.tokenize(load_teacher_score_rows(data_args.teacher_scores_file))
        score_args = distillation_training_args(training_args, distill_args, scores=True)
        trainer = run.trainer(score_args, score_dataset, eval_dataset, loss=score_args.build_loss())
        stage, eval_metrics = run_stage(trainer, "score_distillation")
        metrics.update(stage)

    # Stage 2: fine-tuning on the labels, as `hfsiamese train` trains.
    card = model_card_kwargs(model_args, data_args)
    card["arguments"]["teacher_model_name_or_path"] = distill_args.teacher_model_name_or_path
    if distill_args.fine_tune:
        with training_args.main_process_first(desc="tokenising pairs"):
            train_dataset = run.tokenize(training_view(splits["train"], data_args, loss, model, tokenizer))
        trainer = run.trainer(training_args, train_dataset, eval_dataset)
        metrics = train_evaluate_save(trainer, card=card, earlier_metrics=metrics)
    else:
        metrics.update(eval_metrics)  # the last stage's
        save_run(trainer, metrics, card=card)
    end_run(trainer, metrics, corpus_file=data_args.train_file or default_train_file, split_command=split_command)
    return metrics


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
