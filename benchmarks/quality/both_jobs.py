#!/usr/bin/env python
"""Both jobs of a recipe, over seeds: pair classification (AP, accuracy at τ) and duplicate retrieval (MRR@10, recall@10).

    python benchmarks/quality/both_jobs.py --config recipes/configs/lstm_qqp.yaml --seeds 42 1 2 \
        --variant "contrastive=--loss contrastive" --variant "hnt=--loss hard_negative_triplet" [--jobs 4]

Each (variant, seed) trains `recipes/train.py CONFIG FLAGS --seed S` into a fresh temporary folder (nothing of
the user's is touched), then scores the recipe's validation slice (the 1,000 pairs it split off and calibrated
τ on): `eval_average_precision` and `eval_accuracy` (at that τ) from the run's all_results.json, and duplicate
retrieval over the slice's distinct questions (each searches all the others for the rest of its duplicate
group, `hfsiamese.evaluation.evaluate_retrieval`) — the README's "find the earlier duplicates" job. Prints a
JSON line per run and, at the end, a markdown table of mean ± sd per variant. `--jobs` runs that many
trainings at once (for a many-core or GPU machine; on 2 cores keep 1).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import REPO, TRAIN_SCRIPT, argument_parser, command_line, emit

COLUMNS = (
    "eval_average_precision",
    "eval_accuracy",
    "retrieval_mrr@10",
    "retrieval_recall@10",
)


def run_one(config: str, flags: list[str], seed: int, threads: int | None) -> dict:
    """Train one (variant, seed) and score both jobs on the recipe's validation slice."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        command = [
            sys.executable,
            str(TRAIN_SCRIPT),
            config,
            *flags,
            "--seed",
            str(seed),
        ]
        command += ["--output_dir", str(out), "--disable_tqdm", "true"]
        if threads:
            command += ["--num_threads", str(threads)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
        wall = time.perf_counter() - start
        if result.returncode != 0:
            return {"error": result.stderr[-3000:], "command": shlex.join(command)}
        results = json.loads((out / "all_results.json").read_text())
        scored = [
            sys.executable,
            __file__,
            "--retrieval_worker",
            str(out),
            "--config",
            config,
        ]
        retrieval = subprocess.run(scored, capture_output=True, text=True, cwd=REPO, env=env)
        if retrieval.returncode != 0:
            return {"error": retrieval.stderr[-3000:], "command": shlex.join(scored)}
        metrics = {key: results[key] for key in COLUMNS[:2]}
        metrics.update(json.loads(retrieval.stdout.strip().splitlines()[-1]))
        return {
            **metrics,
            "train_s": round(results.get("train_runtime", wall), 1),
            "wall_s": round(wall, 1),
        }


def retrieval_worker(model_dir: str, config: str) -> None:
    """Print the retrieval metrics of a trained folder on the validation slice of `config`'s split."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    import hfsiamese  # noqa: F401  (registers the auto classes)
    from benchmarks.common.qqp_slices import recipe_splits, validation_retrieval

    model = AutoModel.from_pretrained(model_dir).to("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    emit(validation_retrieval(model, tokenizer, recipe_splits(config)["validation"]))


def summary_table(rows: dict[str, list[dict]]) -> str:
    lines = [
        "| variant | seeds | " + " | ".join(COLUMNS) + " | train s |",
        "|---" * (len(COLUMNS) + 3) + "|",
    ]
    for name, runs in rows.items():
        ok = [run for run in runs if "error" not in run]
        cells = []
        for column in (*COLUMNS, "train_s"):
            values = [run[column] for run in ok]
            if not values:
                cells.append("failed")
            elif len(values) == 1:
                cells.append(f"{values[0]:.4f}" if column != "train_s" else f"{values[0]:.0f}")
            else:
                mean, sd = statistics.mean(values), statistics.stdev(values)
                cells.append(f"{mean:.4f} ± {sd:.4f}" if column != "train_s" else f"{mean:.0f}")
        lines.append(f"| {name} | {len(ok)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argument_parser(__doc__)
    parser.add_argument("--config", default=str(REPO / "recipes" / "configs" / "lstm_qqp.yaml"))
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="NAME=FLAGS (recipe flags; repeatable).",
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None, help="--num_threads of each training.")
    parser.add_argument("--retrieval_worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.retrieval_worker:
        retrieval_worker(args.retrieval_worker, args.config)
        return
    variants = [v.split("=", 1) if "=" in v else (v, "") for v in args.variant] or [("as shipped", "")]
    tasks = [(name, shlex.split(flags), seed) for name, flags in variants for seed in args.seeds]
    rows: dict[str, list[dict]] = {name: [] for name, _ in variants}

    def task(item):
        name, flags, seed = item
        run = run_one(args.config, flags, seed, args.threads)
        line = {"variant": name, "seed": seed, **run}
        emit(line)
        return name, run

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for name, run in pool.map(task, tasks):
            rows[name].append(run)
    config = Path(args.config).relative_to(REPO) if Path(args.config).is_absolute() else args.config
    print(f"\n`{command_line(__file__, ['--config', str(config)])}` seeds {args.seeds}\n")
    print(summary_table(rows))


if __name__ == "__main__":
    main()
