"""
Does training keep its pace on a large prepared folder? Steady pairs/s of a recipe (`--recipe`, the LSTM one by
default) on several training sets, the runs alternated round by round so that a slow spell of the machine falls on
every set alike.

    python benchmarks/training/steady_pace.py --runs large=/data/prepared_40m small=/data/prepared_first10k \\
        bundled=bundled --rounds 5 --max_steps 200

Each run is a fresh process of the documented command, `hfsiamese train RECIPE --train_file FOLDER --max_steps N`
(`bundled`: the recipe's own 10,000 QQP pairs, no `--train_file`), measured as `scale_training.py` measures it: steady
pairs/s from the Trainer's progress bar between step 5 and the last. Round r runs the sets in an order rotated by r,
so each set comes first, second, ... equally often. The first set named is compared with each other one: per round
the ratio of its pairs/s to the other's (same round, adjacent runs), their median, and the geometric mean with its 95%
t-interval over the rounds (on the logs of the ratios). "Within 5%" holds when that interval lies above 0.95.

Nothing reads the runs while they go (`measured(..., sample_memory=False)`): reading the memory of a process that maps a
40M-pair folder costs the kernel tens of milliseconds each time, which slowed the large runs only.

Why alternated rounds and not one long run each: runs of one kind spread by ±10-20% on a shared 2-core machine, more
than the 5% asked; the spread falls on both sides of a pair of adjacent runs alike, so ratios within a round are
tighter than the runs themselves. Results: WORK_DIR/steady_pace.json and .md.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
from pathlib import Path
from typing import Any

from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, command_line, machine, markdown_table, today, write_results
from benchmarks.training.scale_training import HFSIAMESE, measured

BUNDLED = "bundled"


def parse_runs(specs: list[str]) -> dict[str, str]:
    """NAME=FOLDER pairs (FOLDER `bundled`: the recipe's own pairs), two or more, each name once, each folder there."""
    runs: dict[str, str] = {}
    for spec in specs:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            raise SystemExit(f"--runs takes NAME=FOLDER (or NAME=bundled), got {spec!r}")
        if name in runs:
            raise SystemExit(f"--runs names {name!r} twice")
        if folder != BUNDLED and not Path(folder).exists():
            raise SystemExit(f"--runs {name}: {folder} does not exist (prepare it first: hfsiamese prepare)")
        runs[name] = folder
    if len(runs) < 2:
        raise SystemExit("--runs needs two or more training sets to compare")
    return runs


def train_argv(folder: str, output_dir: Path, max_steps: int, batch_size: int, recipe: str = "lstm_qqp") -> list[str]:
    """The documented training command of `recipe`, for `max_steps` steps, logging every step and saving nothing."""
    argv = [HFSIAMESE, "train", recipe, "--output_dir", str(output_dir)]
    if folder != BUNDLED:
        argv += ["--train_file", folder]
    steps = ["--max_steps", str(max_steps), "--per_device_train_batch_size", str(batch_size), "--logging_steps", "1"]
    return [*argv, *steps, "--save_strategy", "no", "--eval_strategy", "no", "--overwrite_output_dir", "true"]


def ratio_summary(ratios: list[float]) -> dict[str, Any]:
    """Median, geometric mean and its two-sided 95% t-interval (on log ratios; none from a single round)."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    summary: dict[str, Any] = {"ratios": [round(r, 4) for r in ratios], "median": round(statistics.median(ratios), 4)}
    summary["geometric_mean"] = round(math.exp(mean), 4)
    if len(logs) > 1:
        half = stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
        summary["interval_95"] = [round(math.exp(mean - half), 4), round(math.exp(mean + half), 4)]
    return summary


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argument_parser(__doc__)
    parser.add_argument("--runs", nargs="+", required=True, help="NAME=FOLDER (a prepared folder, or `bundled`)")
    parser.add_argument("--recipe", default="lstm_qqp", help="the shipped config to train (minilm_qqp: the MiniLM one)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max_steps", type=int, default=200)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--work_dir", default="/tmp/hfsiamese_steady_pace")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.max_steps <= 6:
        raise SystemExit("--rounds must be 1 or more and --max_steps over 6 (pairs/s are read from step 5 on)")
    runs = parse_runs(args.runs)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    names = list(runs)
    rows: list[dict[str, Any]] = []
    for round_index in range(args.rounds):
        shift = round_index % len(names)
        for name in names[shift:] + names[:shift]:
            output_dir = work / f"run_{name}"
            command = train_argv(runs[name], output_dir, args.max_steps, args.batch_size, args.recipe)
            row = measured(command, env, args.max_steps, args.batch_size, sample_memory=False)
            rows.append({"round": round_index + 1, "run": name, **row})
            print(rows[-1], flush=True)
    pace = {name: [r["pairs_per_s"] for r in rows if r["run"] == name] for name in names}
    first = names[0]
    comparisons = {
        other: ratio_summary([a / b for a, b in zip(pace[first], pace[other], strict=True)]) for other in names[1:]
    }
    table = markdown_table(
        ["run", "rounds", "pairs/s (median)", "pairs/s per round", f"{first} / run: median, geometric mean, 95%"],
        [[name, len(pace[name]), round(statistics.median(pace[name]), 1), ", ".join(f"{p:.1f}" for p in pace[name]),
          "" if name == first else (f"{comparisons[name]['median']}, {comparisons[name]['geometric_mean']}, "
                                    f"{comparisons[name].get('interval_95', '-')}")]
         for name in names],
    )  # fmt: skip
    result = {
        "machine": machine(),
        "date": today(),
        "command": command_line(__file__, argv),
        "recipe": args.recipe,
        "runs": runs,
        "rows": rows,
        "comparisons": comparisons,
    }
    write_results(work, "steady_pace", result, table, f"{machine()}, {today()}")
    return result


if __name__ == "__main__":
    main()
