#!/usr/bin/env python
"""Write the validation pairs a training recipe split off, so that they can be evaluated again.

    python benchmarks/export_validation_slice.py outputs/qqp_validation.jsonl
    python benchmarks/export_validation_slice.py outputs/qqp_test.jsonl --config my.yaml --split test

The split is recomputed with the package's `load_splits`, as `recipes/train.py` does, from the
data keys of the recipe config (default: recipes/configs/lstm_qqp.yaml: the embedded QQP pairs,
split by question with validation_fraction 0.1 and split_seed 42), so the rows are exactly the ones the recipe
validated (and calibrated its threshold) on. Written as JSON lines (`question1`, `question2`,
`label`, plus `qid1`/`qid2` when the source has them), which `hfsiamese.data.load_pairs` and
`recipes/evaluate_pairs.py` read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from qqp_slices import DEFAULT_CONFIG, recipe_splits


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output_file", help="JSON-lines file to write (refused if it exists, unless --overwrite).")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="Recipe config whose data keys define the split.")
    parser.add_argument("--split", default="validation", choices=["train", "validation", "test"])
    parser.add_argument("--overwrite", action="store_true")
    args = parser.parse_args(argv)
    output = Path(args.output_file)
    if output.exists() and not args.overwrite:
        raise SystemExit(f"{output} exists: pass --overwrite to replace it")

    import datasets

    datasets.utils.logging.disable_progress_bar()
    splits = recipe_splits(args.config)
    if args.split not in splits:
        raise SystemExit(f"the config makes no {args.split!r} split (it makes {sorted(splits)})")
    pairs = splits[args.split]
    pairs = pairs.remove_columns([c for c in pairs.column_names if c not in ("question1", "question2", "label", "qid1", "qid2")])
    output.parent.mkdir(parents=True, exist_ok=True)
    pairs.to_json(str(output), lines=True, force_ascii=False)
    summary = {"file": str(output), "split": args.split, "pairs": len(pairs), "duplicates": int(sum(pairs["label"]))}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    main()
