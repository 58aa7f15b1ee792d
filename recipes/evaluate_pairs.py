#!/usr/bin/env python
"""Evaluate a trained Siamese model on a labelled pair file; prints ONE JSON object.

    python recipes/evaluate.py --model_name_or_path outputs/lstm_qqp --test_file pairs.tsv
    python recipes/evaluate.py --model_name_or_path outputs/lstm_qqp --test_file pairs.tsv \
        --retrieval --retrieval_k 1 5 10 --report_dir outputs/lstm_qqp_report

Accuracy, precision, recall and F1 are taken at the model's calibrated threshold (or --threshold),
never re-fitted on the test pairs; average precision and ROC-AUC are threshold-free. `--retrieval`
adds duplicate retrieval over the file's questions (each searches all others for the rest of its
duplicate group): `retrieval_mrr@k`, `retrieval_recall@k`, `retrieval_ndcg@k`. `--report_dir`
also writes metrics.json, score plots and report.md there (needs `pip install "hfsiamese[report]"`).
"""

from __future__ import annotations

import sys
from pathlib import Path

# This folder holds `evaluate.py`, which would shadow the `evaluate` library that hfsiamese imports:
# keep the script's own folder off the import path.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import json
import logging
from dataclasses import dataclass, field

import transformers
from transformers import AutoModel, AutoTokenizer, HfArgumentParser

import hfsiamese  # noqa: F401  (registers the Siamese auto classes)
from hfsiamese.cli_args import parse_config_and_flags
from hfsiamese.data import load_pairs
from hfsiamese.evaluation import decision_threshold, evaluate_retrieval, question_corpus, score_labelled_pairs
from hfsiamese.metrics import pair_classification_metrics
from hfsiamese.reporting import check_report_dir, write_evaluation_report
from hfsiamese.hub_access import require_local_or_cached


@dataclass
class EvaluationArguments:
    model_name_or_path: str = field(metadata={"help": "Folder (or Hub id) of a trained Siamese model."})
    test_file: str = field(metadata={"help": "Labelled pair file (any format hfsiamese.data.load_pairs reads)."})
    data_format: str | None = field(default=None, metadata={"help": "Force the file format."})
    question1_column: str | None = field(default=None, metadata={"help": "Column of the first texts."})
    question2_column: str | None = field(default=None, metadata={"help": "Column of the second texts."})
    label_column: str | None = field(default=None, metadata={"help": "Column of the 0/1 labels."})
    threshold: float | None = field(default=None, metadata={"help": "Decision threshold (default: the model's)."})
    batch_size: int = field(default=256, metadata={"help": "Texts per encoding batch."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens kept per text (default: tokenizer's)."})
    output_file: str | None = field(default=None, metadata={"help": "Also write the JSON object to this file."})
    retrieval: bool = field(
        default=False,
        metadata={
            "help": "Also evaluate duplicate retrieval: every question of the file searches all the others for the "
            "other members of its duplicate group (questions without duplicates are searched, not searching)."
        },
    )
    retrieval_k: list[int] = field(
        default_factory=lambda: [1, 5, 10], metadata={"help": "Cut-offs of the retrieval metrics."}
    )
    report_dir: str | None = field(
        default=None,
        metadata={"help": "Write an evaluation report here: metrics.json, score plots (PNG) and report.md."},
    )
    overwrite_report_dir: bool = field(default=False, metadata={"help": "Allow writing into a non-empty report_dir."})


def main(argv: list[str] | None = None) -> dict[str, float]:
    (args,) = parse_config_and_flags(HfArgumentParser(EvaluationArguments), argv)
    logging.basicConfig(level=logging.WARNING)
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    if args.report_dir:  # fail before scoring anything, not after
        check_report_dir(args.report_dir, overwrite=args.overwrite_report_dir)
    require_local_or_cached(args.model_name_or_path)  # offline, a Hub id that is not cached fails here, saying so
    model = AutoModel.from_pretrained(args.model_name_or_path)
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    pairs = load_pairs(
        args.test_file,
        format=args.data_format,
        question1_column=args.question1_column,
        question2_column=args.question2_column,
        label_column=args.label_column,
        deduplicate=False,  # a test set is scored exactly as published
    )
    encode = dict(batch_size=args.batch_size, max_length=args.max_length)
    threshold = decision_threshold(model, args.threshold)
    scores, labels = score_labelled_pairs(model, pairs, tokenizer, **encode)
    metrics = pair_classification_metrics(scores, labels, threshold=threshold)
    if args.retrieval:
        questions, group_ids = question_corpus(pairs)
        retrieval = evaluate_retrieval(model, questions, group_ids, tokenizer, k=args.retrieval_k, **encode)
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
        )
    text = json.dumps(metrics, sort_keys=True)
    print(text)
    if args.output_file:
        with open(args.output_file, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return metrics


if __name__ == "__main__":
    main()
