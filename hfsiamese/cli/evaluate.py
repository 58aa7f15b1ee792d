"""`hfsiamese evaluate`: evaluate a trained Siamese model (or a cross-encoder) on a labelled pair file; prints ONE JSON object.

    hfsiamese evaluate --model_name_or_path outputs/lstm_qqp --test_file outputs/qqp_validation.jsonl
    hfsiamese evaluate --model_name_or_path outputs/lstm_qqp --test_file outputs/qqp_validation.jsonl \
        --retrieval --retrieval_k 1 5 10 --report_dir outputs/lstm_qqp_report

Accuracy, precision, recall and F1 are taken at the model's calibrated threshold (or --threshold),
never re-fitted on the test pairs; average precision and ROC-AUC are threshold-free. `--retrieval`
adds duplicate retrieval over the file's questions (each searches all others for the rest of its
duplicate group): `retrieval_mrr@k`, `retrieval_recall@k`, `retrieval_ndcg@k`. `--report_dir`
also writes metrics.json, score plots and report.md there (needs matplotlib: `pip install -e ".[report]"` from a clone).

`--calibration_file FILE` (labelled pairs of the test file's domain, never the test pairs) first
recalibrates the decision on FILE (`--calibration_method threshold|platt|isotonic`, `--calibrate_for`,
as `hfsiamese calibrate`; nothing is saved), then scores the test file with it. A model calibrated
to probabilities (here, or stored) adds `ece` and `brier`, and `--report_dir` a reliability diagram.

A model trained by hfsiamese records which questions trained it (hashes, `training_questions.safetensors`):
when test pairs share questions with its training data, a warning says how many, the JSON carries
`training_overlap_pairs` and `training_overlap_fraction`, and the report marks its figures. Honest test
pairs: the validation split a recipe held out (`hfsiamese split HELD_OUT_PAIRS.jsonl` writes it), or your own.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from transformers import AutoTokenizer

from hfsiamese.cli.command_line import UsageError, run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.data import load_pairs
from hfsiamese.evaluation import (
    EvaluationArguments,
    calibrated_probabilities,
    decision_threshold,
    evaluate_retrieval,
    question_corpus,
    score_labelled_pairs,
    training_overlap_of,
)
from hfsiamese.loading import load_pair_model
from hfsiamese.metrics import pair_classification_metrics
from hfsiamese.metrics.reliability import calibration_metrics
from hfsiamese.models.siamese.scoring import check_decision_threshold
from hfsiamese.reporting import check_report_dir, write_evaluation_report
from hfsiamese.utils.console import configure_quiet_console
from hfsiamese.utils.hub_access import require_local_or_cached
from hfsiamese.utils.json_files import strict_json

DESCRIPTION = "Evaluate a trained Siamese model (or a cross-encoder) on a labelled pair file; prints one JSON object."


def main(argv: list[str] | None = None) -> dict[str, float]:
    """`hfsiamese evaluate --model_name_or_path MODEL --test_file PAIRS [...]`: the metrics, printed as one JSON object."""
    parser = command_parser(EvaluationArguments, prog="hfsiamese evaluate", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, argv)
    configure_quiet_console()
    if args.report_dir:  # fail before scoring anything, not after
        check_report_dir(args.report_dir, overwrite=args.overwrite_report_dir)
    if args.output_file:  # a file of earlier figures was replaced without a word
        check_output_file(args.output_file, overwrite=args.overwrite_output_file)
    # A folder without config.json, or offline a Hub id not in the cache, fails here, saying which.
    require_local_or_cached(args.model_name_or_path, saved_folder=True)
    # A PyTorch checkpoint, an ONNX or OpenVINO export or a cross-encoder; with --backend auto, the fastest it carries.
    model = load_pair_model(args.model_name_or_path, backend=args.backend)
    if args.retrieval and not hasattr(model, "encode"):
        raise ValueError(
            "--retrieval searches with embeddings: a cross-encoder has none (rerank a bi-encoder's candidates with it)"
        )
    check_decision_threshold(model.config, args.threshold)  # before the pairs are read, calibrated on and scored
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    columns = dict(
        format=args.data_format,
        question1_column=args.question1_column,
        question2_column=args.question2_column,
        label_column=args.label_column,
        deduplicate=False,  # pairs scored exactly as published
    )
    pairs = load_pairs(args.test_file, **columns)
    if args.report_dir and len(pairs.unique("label")) < 2:  # the report's curves need both: said before scoring
        raise ValueError(
            f"--report_dir: the report needs duplicates and non-duplicates; {args.test_file} holds one kind"
        )
    # Said before scoring, and kept with the figures: a model scored on its own training questions looks far better.
    overlap = training_overlap_of(args.model_name_or_path, pairs)
    if overlap is not None and overlap.any:
        warnings.warn(overlap.message(), UserWarning, stacklevel=1)
    encode = dict(batch_size=args.batch_size, max_length=args.max_length)
    if args.calibration_file:
        report = model.calibrate(
            load_pairs(args.calibration_file, **columns),
            method=args.calibration_method,
            calibrate_for=args.calibrate_for,
            target_precision=args.target_precision,
            tokenizer=tokenizer,
            data_name=args.calibration_file,
            **encode,
        )
        for note in report.warnings:
            warnings.warn(f"calibration on {args.calibration_file}: {note}", UserWarning, stacklevel=1)
    threshold = decision_threshold(model, args.threshold)
    if args.truncate_dim is not None and args.threshold is None:
        warnings.warn(
            f"--truncate_dim {args.truncate_dim}: accuracy, precision, recall and F1 use the model's threshold, calibrated "
            "on full-size embeddings; average precision and ROC-AUC do not depend on it",
            UserWarning,
            stacklevel=1,
        )
    scores, labels = score_labelled_pairs(model, pairs, tokenizer, truncate_dim=args.truncate_dim, **encode)
    metrics = pair_classification_metrics(scores, labels, threshold=threshold)
    probabilities = calibrated_probabilities(model, scores)
    if probabilities is not None:
        metrics.update(calibration_metrics(probabilities, labels))
    if overlap is not None:  # only when the model says what trained it; nothing is guessed otherwise
        metrics["training_overlap_pairs"] = overlap.pairs_with_a_seen_question
        metrics["training_overlap_fraction"] = overlap.pairs_with_a_seen_question / overlap.pairs
    if args.truncate_dim is not None:
        metrics["truncate_dim"] = args.truncate_dim
    if args.retrieval:
        questions, group_ids = question_corpus(pairs)
        retrieval = evaluate_retrieval(
            model, questions, group_ids, tokenizer, k=args.retrieval_k, truncate_dim=args.truncate_dim, **encode
        )
        metrics.update({f"retrieval_{name}": value for name, value in retrieval.items()})
    if args.report_dir:
        write_evaluation_report(
            args.report_dir,
            scores,
            labels,
            metrics,
            metrics["threshold"],
            model_name=args.model_name_or_path,
            data_name=args.test_file,
            overwrite=args.overwrite_report_dir,
            probabilities=probabilities,
            caveats=[overlap.message()] if overlap is not None and overlap.any else [],
        )
    text = strict_json(metrics, sort_keys=True)  # an undefined metric (AP on pairs of one kind) is null, not NaN
    print(text)
    if args.output_file:
        Path(args.output_file).parent.mkdir(parents=True, exist_ok=True)
        Path(args.output_file).write_text(text + "\n", encoding="utf-8")
    return metrics


def check_output_file(output_file: str, *, overwrite: bool) -> None:
    """`--output_file`: not a folder, and not a file already there unless `overwrite` (`--overwrite_output_file`)."""
    path = Path(output_file)
    if path.is_dir():
        raise UsageError(f"--output_file {path} is a directory: name a file for the JSON object")
    if path.exists() and not overwrite:
        raise UsageError(f"--output_file {path} exists: pass --overwrite_output_file to replace it")


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
