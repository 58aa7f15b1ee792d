#!/usr/bin/env python
"""Evaluate a trained Siamese model on a labelled pair file; prints ONE JSON object.

    python recipes/evaluate_pairs.py --model_name_or_path outputs/lstm_qqp --test_file pairs.tsv
    python recipes/evaluate_pairs.py --model_name_or_path outputs/lstm_qqp --test_file pairs.tsv \
        --retrieval --retrieval_k 1 5 10 --report_dir outputs/lstm_qqp_report

Accuracy, precision, recall and F1 are taken at the model's calibrated threshold (or --threshold),
never re-fitted on the test pairs; average precision and ROC-AUC are threshold-free. `--retrieval`
adds duplicate retrieval over the file's questions (each searches all others for the rest of its
duplicate group): `retrieval_mrr@k`, `retrieval_recall@k`, `retrieval_ndcg@k`. `--report_dir`
also writes metrics.json, score plots and report.md there (needs `pip install "hfsiamese[report]"`).
"""

from __future__ import annotations

import json
import logging

import transformers
from transformers import AutoModel, AutoTokenizer, HfArgumentParser

import hfsiamese  # noqa: F401  (registers the Siamese auto classes)
from hfsiamese.arguments import EvaluationArguments, parse_config_and_flags
from hfsiamese.data import load_pairs
from hfsiamese.evaluation import decision_threshold, evaluate_retrieval, question_corpus, score_labelled_pairs
from hfsiamese.hub_access import require_local_or_cached
from hfsiamese.metrics import pair_classification_metrics
from hfsiamese.reporting import check_report_dir, write_evaluation_report


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
