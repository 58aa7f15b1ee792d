#!/usr/bin/env python
"""Evaluate a trained Siamese model on a labelled pair file; prints ONE JSON object.

    python recipes/evaluate.py --model_name_or_path outputs/lstm_qqp --test_file pairs.tsv

Accuracy, precision, recall and F1 are taken at the model's calibrated threshold (or --threshold);
average precision and ROC-AUC are threshold-free.
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
from hfsiamese.evaluation import evaluate_pairs


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


def main(argv: list[str] | None = None) -> dict[str, float]:
    (args,) = parse_config_and_flags(HfArgumentParser(EvaluationArguments), argv)
    logging.basicConfig(level=logging.WARNING)
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
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
    metrics = evaluate_pairs(
        model, pairs, tokenizer, threshold=args.threshold, batch_size=args.batch_size, max_length=args.max_length
    )
    text = json.dumps(metrics, sort_keys=True)
    print(text)
    if args.output_file:
        with open(args.output_file, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    return metrics


if __name__ == "__main__":
    main()
