#!/usr/bin/env python
"""Run a training recipe end to end and report its wall time, time per step and validation metrics.

    python benchmarks/recipe_runs.py recipes/configs/lstm_qqp.yaml [--append] [-- extra recipe flags]

Prints one JSON line; with --append, adds a row to benchmarks/README.md (date, machine, command).
The run goes to a fresh temporary output folder, so nothing of the user's is touched.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_info import machine

REPO = Path(__file__).resolve().parents[1]
README = Path(__file__).resolve().parent / "README.md"
RECIPE_TABLE_HEADER = "| date | machine | command | wall s | steps | s/step |"


def insert_table_row(readme: Path, header_prefix: str, line: str) -> None:
    """Add `line` as the last row of the table whose header starts with `header_prefix` (not at the
    file's end, where later sections would separate it from its table)."""
    lines = readme.read_text(encoding="utf-8").splitlines(keepends=True)
    starts = [i for i, text in enumerate(lines) if text.startswith(header_prefix)]
    if not starts:
        raise SystemExit(f"{readme} has no table starting with {header_prefix!r}")
    end = starts[0]
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    lines.insert(end, line)
    readme.write_text("".join(lines), encoding="utf-8")




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("config", help="recipe YAML config")
    parser.add_argument("--append", action="store_true", help="append a row to benchmarks/README.md")
    # Anything this script does not know (after `--`) goes to recipes/train.py.
    args, extra = parser.parse_known_args()
    flags = [f for f in extra if f != "--"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [sys.executable, str(REPO / "recipes" / "train.py"), args.config, "--output_dir", str(out), "--disable_tqdm", "true", *flags]
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if result.returncode != 0:
            sys.exit(f"recipe failed:\n{result.stderr[-4000:]}")
        results = json.loads((out / "all_results.json").read_text())
        steps = json.loads((out / "trainer_state.json").read_text())["global_step"]
    row = {
        "config": Path(args.config).name,
        "flags": " ".join(flags),
        "wall_s": round(wall, 1),
        "train_s": round(results["train_runtime"], 1),
        "steps": steps,
        "s_per_step": round(results["train_runtime"] / max(steps, 1), 3),
        "train_pairs_per_s": round(results["train_samples_per_second"], 1),
        "eval_average_precision": round(results["eval_average_precision"], 4),
        "eval_roc_auc": round(results["eval_roc_auc"], 4),
        "eval_accuracy": round(results["eval_accuracy"], 4),
        "eval_f1": round(results["eval_f1"], 4),
        "eval_threshold": round(results["eval_threshold"], 4),
        "eval_num_pairs": results["eval_num_pairs"],
    }
    print(json.dumps(row))
    if args.append:
        date = dt.date.today().isoformat()
        cmd = f"python benchmarks/recipe_runs.py {args.config}" + (f" -- {row['flags']}" if flags else "")
        line = (
            f"| {date} | {machine()} | `{cmd}` | {row['wall_s']} | {row['steps']} | {row['s_per_step']} | "
            f"{row['eval_average_precision']} | {row['eval_roc_auc']} | {row['eval_accuracy']} | {row['eval_f1']} | {row['eval_threshold']} |\n"
        )
        insert_table_row(README, RECIPE_TABLE_HEADER, line)


if __name__ == "__main__":
    main()
