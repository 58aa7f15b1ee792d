#!/usr/bin/env python
"""The LSTM path (suite 3): hfsiamese vs the seeds' Siamese LSTM, on the same pairs.

    python benchmarks/training/lstm_vs_seeds.py [--epochs 10] [--append]

Three runs, each in its own process, all on the training side of the recipes' QQP split
(`common/qqp_slices.py`) and scored on the same 1,000 validation pairs:

1. `seeds`: `seeds_siamese.py` — the seeds' model as they built it (duplicate pairs only, batch 256).
2. `hfsiamese, seeds' size`: the LSTM recipe shrunk to the seeds' network — Embedding 128 → one
   unidirectional LSTM(128) → mean pooling, batch 256, no dropout — so pairs/s compares equal
   work: the difference is hfsiamese's packed sequences (no compute on padding), tokenisation done
   once, and the in-batch loss on tensors.
3. `hfsiamese recipe`: the default recipe (`recipes/configs/lstm_qqp.yaml`) as shipped (since
   2026-11-21 the contrastive loss on all labelled pairs; the table of that date predates it).

For each: training pairs/s, validation AP and ROC-AUC, accuracy at τ = 0.7 (the seeds' protocol)
and at the threshold calibrated on these validation pairs (the same protocol for all three).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    REPO,
    append_section,
    argument_parser,
    command_line,
    emit,
    machine,
    markdown_table,
    today,
)

SEEDS_SIZE_FLAGS = [
    "--bidirectional",
    "false",
    "--pooling",
    "mean",
    "--dropout",
    "0",
    "--embedding_dim",
    "128",
    "--hidden_size",
    "128",
    "--per_device_train_batch_size",
    "256",
    "--loss",
    "hard_negative_triplet",  # the seeds' data: duplicate pairs only, in-batch negatives
]


def _run(command: list[str]) -> str:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-4000:]}")
    return result.stdout


def run_recipe(name: str, flags: list[str], epochs: int) -> dict:
    from transformers import AutoModel

    import hfsiamese  # noqa: F401  (registers the Siamese auto classes)
    from benchmarks.common.qqp_slices import qqp_train_and_validation
    from benchmarks.training.recipe_runs import trained_recipe
    from hfsiamese.evaluation import evaluate_pairs

    flags = ["--num_train_epochs", str(epochs), "--eval_strategy", "no", "--save_strategy", "no", *flags]
    with trained_recipe(REPO / "recipes" / "configs" / "lstm_qqp.yaml", flags) as run:
        results = run["results"]
        _, validation = qqp_train_and_validation()
        at_seeds_threshold = evaluate_pairs(AutoModel.from_pretrained(run["output_dir"]), validation, threshold=0.7)
    return {
        "model": name,
        "train_s": round(results["train_runtime"], 1),
        "train_pairs_per_s": round(results["train_samples_per_second"], 1),
        "eval_average_precision": round(results["eval_average_precision"], 4),
        "eval_roc_auc": round(results["eval_roc_auc"], 4),
        "eval_accuracy_at_0.7": round(at_seeds_threshold["accuracy"], 4),
        "eval_accuracy_calibrated": round(results["eval_accuracy"], 4),
        "eval_f1_calibrated": round(results["eval_f1"], 4),
        "eval_threshold": round(results["eval_threshold"], 4),
    }


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    rows = [
        json.loads(
            _run([sys.executable, str(Path(__file__).with_name("seeds_siamese.py")), "--epochs", str(args.epochs)])
            .strip()
            .splitlines()[-1]
        )
    ]
    rows[0]["model"] = "seeds (re-implemented)"
    emit(rows[0])
    for name, flags in (("hfsiamese, seeds' size", SEEDS_SIZE_FLAGS), ("hfsiamese recipe", [])):
        rows.append(run_recipe(name, flags, args.epochs))
        emit(rows[-1])
    ratios = {
        "equal_size_pairs_per_s_vs_seeds": round(rows[1]["train_pairs_per_s"] / rows[0]["train_pairs_per_s"], 2),
        "recipe_ap_minus_seeds": round(rows[2]["eval_average_precision"] - rows[0]["eval_average_precision"], 4),
    }
    emit(ratios)
    if args.append:
        command = command_line(__file__)
        lines = [
            "",
            f"### {today()}, {machine()}: `{command.strip()}`",
            "",
            *markdown_table(
                ["model", "train s", "pairs/s", "val AP", "ROC-AUC", "acc at τ=0.7", "acc at calibrated τ", "F1", "τ"],
                [
                    [
                        r["model"],
                        r["train_s"],
                        r["train_pairs_per_s"],
                        r["eval_average_precision"],
                        r["eval_roc_auc"],
                        r["eval_accuracy_at_0.7"],
                        r["eval_accuracy_calibrated"],
                        r["eval_f1_calibrated"],
                        r["eval_threshold"],
                    ]
                    for r in rows
                ],
            ),
            "",
            f"Equal-size throughput vs the seeds' model: {ratios['equal_size_pairs_per_s_vs_seeds']}×; "
            f"recipe AP minus the seeds' AP: {ratios['recipe_ap_minus_seeds']:+.4f}.",
        ]
        append_section(lines)


if __name__ == "__main__":
    main()
