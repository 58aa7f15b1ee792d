#!/usr/bin/env python
"""Run a training recipe end to end and report its wall time, time per step and validation metrics.

    python benchmarks/training/recipe_runs.py recipes/configs/lstm_qqp.yaml [--append] [-- extra recipe flags]

Prints one JSON line; with --append, adds a row to benchmarks/README.md (date, machine, command).
The run goes to a fresh temporary output folder, so nothing of the user's is touched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    README,
    REPO,
    TRAIN_SCRIPT,
    argument_parser,
    command_line,
    emit,
    insert_table_row,
    machine,
    today,
)

RECIPE_TABLE_HEADER = "| date | machine | command | wall s | steps | s/step |"
EVAL_KEYS = ("eval_average_precision", "eval_roc_auc", "eval_accuracy", "eval_f1", "eval_threshold")


@contextmanager
def trained_recipe(config: str | Path, flags: list[str]) -> Iterator[dict[str, Any]]:
    """
    Run `recipes/train.py CONFIG FLAGS` into a fresh temporary folder (nothing of the user's is
    touched) and yield {output_dir, results (all_results.json), steps, wall_s}; the folder is
    deleted afterwards. A failed run ends the benchmark with the recipe's error output.
    """
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [
            sys.executable,
            str(TRAIN_SCRIPT),
            str(config),
            "--output_dir",
            str(out),
            "--disable_tqdm",
            "true",
            *flags,
        ]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
        wall = time.perf_counter() - start
        if result.returncode != 0:
            sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-4000:]}")
        yield {
            "output_dir": out,
            "results": json.loads((out / "all_results.json").read_text()),
            "steps": json.loads((out / "trainer_state.json").read_text())["global_step"],
            "wall_s": wall,
        }


def eval_figures(results: dict[str, Any]) -> dict[str, float]:
    """The validation figures of a recipe's all_results.json, rounded for the tables."""
    return {key: round(results[key], 4) for key in EVAL_KEYS}


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument("config", help="recipe YAML config")
    # Anything this script does not know (after `--`) goes to recipes/train.py.
    args, extra = parser.parse_known_args()
    flags = [f for f in extra if f != "--"]
    with trained_recipe(args.config, flags) as run:
        results, steps, wall = run["results"], run["steps"], run["wall_s"]
    row = {
        "config": Path(args.config).name,
        "flags": " ".join(flags),
        "wall_s": round(wall, 1),
        "train_s": round(results["train_runtime"], 1),
        "steps": steps,
        "s_per_step": round(results["train_runtime"] / max(steps, 1), 3),
        "train_pairs_per_s": round(results["train_samples_per_second"], 1),
        **eval_figures(results),
        "eval_num_pairs": results["eval_num_pairs"],
    }
    emit(row)
    if args.append:
        cmd = command_line(__file__, [args.config]) + (f" -- {row['flags']}" if flags else "")
        line = (
            f"| {today()} | {machine()} | `{cmd}` | {row['wall_s']} | {row['steps']} | {row['s_per_step']} | "
            f"{row['eval_average_precision']} | {row['eval_roc_auc']} | {row['eval_accuracy']} | {row['eval_f1']} | {row['eval_threshold']} |\n"
        )
        insert_table_row(README, RECIPE_TABLE_HEADER, line)


if __name__ == "__main__":
    main()
