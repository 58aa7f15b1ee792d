"""`hfsiamese silver-pairs`: label silver pairs with a cross-encoder: training questions paired by a bi-encoder's neighbours and at random.

    hfsiamese silver-pairs minilm_qqp --cross_encoder outputs/cross_minilm_qqp --output_file outputs/silver.jsonl
    hfsiamese train minilm_qqp --silver_pairs_file outputs/silver.jsonl

The config is a training recipe's (a shipped name, `--list-configs`, or a file): its data settings (train file or Hub data set, validation_fraction,
test_fraction, split_seed, max_train_pairs) make the very split that recipe trains on, and only its
training questions are paired; no pair holds a validation or test question. Its model and training
settings are read and left unused. Each question gets its `--neighbours` nearest other training questions
by `--bi_encoder` (default: all-MiniLM-L6-v2) that are no gold pair with it, then `--random_pairs` random
pairs are added (`--silver_seed`); the cross-encoder scores them all and labels a pair a duplicate where
the score reaches its calibrated threshold (`hfsiamese.distillation.silver_pairs`).

The pairs are written as JSON lines (question1, question2, label, silver_score, source, and qid1/qid2
when the data has ids); an existing file is refused unless `--overwrite_output_file`. Prints one JSON
line: the counts by source and the share labelled duplicates. Train on gold + silver with
`--silver_pairs_file` in `hfsiamese train` or `hfsiamese distill`, with the same config.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.configs import (
    DEFAULT_CONFIG,
    config_listing,
    listing_requested,
    require_training_data,
    resolve_config_argument,
)
from hfsiamese.cli.data_command import json_lines_output
from hfsiamese.cli.silver_pairs_arguments import parse_silver_pairs_command
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.distillation import load_teacher
from hfsiamese.distillation.silver_pairs import SILVER_SOURCES, label_silver_pairs, silver_threshold
from hfsiamese.training.preparation import load_splits
from hfsiamese.utils.console import configure_quiet_console
from hfsiamese.utils.minilm import MINILM_HUB_ID

# DEFAULT_CONFIG: `hfsiamese train`'s default, hence the same split.


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese silver-pairs [CONFIG] --cross_encoder CROSS --output_file SILVER.jsonl`: the counts (printed)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if listing_requested(argv):
        print(config_listing())
        return {}
    data_args, args = parse_silver_pairs_command(resolve_config_argument(argv), default_config=DEFAULT_CONFIG)
    default_train_file = require_training_data(data_args.train_file, data_args.dataset_name)
    configure_quiet_console()
    output = json_lines_output(args.output_file, overwrite=args.overwrite_output_file, holding="silver pairs")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    cross_encoder = CrossEncoder.from_pretrained(args.cross_encoder).to(device)
    threshold = silver_threshold(cross_encoder)  # a cross-encoder without one fails before any data work
    # The gold pairs alone, split as the training recipe splits them; all validation (and test) pairs excluded.
    splits = load_splits(
        dataclasses.replace(data_args, silver_pairs_file=None, max_eval_pairs=None),
        default_train_file=default_train_file,
    )
    held_out = datasets.concatenate_datasets([split for name, split in splits.items() if name != "train"])
    bi_encoder, tokenizer = load_teacher(args.bi_encoder or MINILM_HUB_ID, device=device)
    pairs = label_silver_pairs(
        cross_encoder,
        splits["train"],
        bi_encoder=bi_encoder,
        tokenizer=tokenizer,
        neighbours=args.neighbours,
        random_pairs=args.random_pairs,
        seed=args.silver_seed,
        exclude=held_out,
        batch_size=args.silver_batch_size,
        max_length=args.pair_max_length,
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(output.name + ".partial")  # a run stopped while writing leaves no half file behind
    pairs.to_json(str(partial), lines=True, force_ascii=False)
    os.replace(partial, output)
    summary = _summary(pairs, threshold, output)
    print(json.dumps(summary, sort_keys=True))
    print(
        f"Silver pairs written to {output}; train on gold + silver with the same config and --silver_pairs_file {output}",
        file=sys.stderr,
    )
    return summary


def _summary(pairs: datasets.Dataset, threshold: float, output: Path) -> dict[str, Any]:
    labels, sources = np.asarray(pairs["label"]), np.asarray(pairs["source"])
    by_source = {
        source: {"pairs": int((sources == source).sum()), "duplicates": int(labels[sources == source].sum())}
        for source in SILVER_SOURCES
    }
    return {
        "output_file": str(output),
        "pairs": len(pairs),
        "duplicates": int(labels.sum()),
        "positive_rate": float(labels.mean()),
        "by_source": by_source,
        "threshold": threshold,
    }


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
