#!/usr/bin/env python
"""Where a `hfsiamese train` run's time goes, step by step: its steps, what lies between them, and new batch shapes.

    python benchmarks/training/trainer_step_times.py --device cuda --batch_sizes 256 1024 --steps 200
    python benchmarks/training/trainer_step_times.py --device cpu --batch_sizes 16 --steps 30 --precisions fp32

Options it does not know go to `hfsiamese train` (`--max_length 32`, `--train_file PAIRS`).

`training_throughput.py` divides pairs by the Trainer's `train_runtime`; this runs the same command
(`hfsiamese train` with `recipes/configs/minilm_qqp.yaml`, `--loss hard_negative_triplet`, batches grouped by length,
SDPA attention on a GPU; run as a script it applies the command's CPU defaults) with a callback that times every optimiser step (the device synchronised at its start and
end) and the gap before it (fetching the batch, logging), and a forward hook that notes each step's padded widths.
It reports, per batch size and precision: pairs/s over the whole run and over the steady half (the second half of
the steps), the median step whose widths the run had already seen against one whose widths were new (a new shape
costs a GPU library its first-call set-up: kernel choice, lazy module loading), and from `torch.profiler` over 5
steps of the steady half: kernel launches and kernel time per step, host-device waits, and the host's busiest
operations. Set beside `step_profile.py` (a plain loop at one shape) it says what of a slow precision is the
Trainer's, the data's shapes', or the arithmetic's. Use the device alone.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
# isort: split
import hfsiamese  # noqa: F401  first: picks OpenMP's wait policy before torch loads, as in the command

# isort: split
import torch

from benchmarks.common.harness import argument_parser, emit, machine
from benchmarks.training.step_timer import PROFILED_STEPS, StepTimer, timing_hfsiamese_train
from benchmarks.training.training_throughput import hfsiamese_argv


def run(
    batch_size: int,
    precision: str,
    steps: int,
    device: str,
    output_dir: str,
    model: str | None = None,
    extra: list[str] | None = None,
) -> dict[str, Any]:
    """One `hfsiamese train` run with the timer attached (`extra`: more of its options); its figures."""
    from hfsiamese.cli import train as train_command

    profile_from = steps // 2 + 5 if steps >= 2 * PROFILED_STEPS + 10 else None
    timer = StepTimer(device, profile_from)
    argv = hfsiamese_argv(steps, precision, output_dir, batch_size, device)  # as training_throughput.py runs it
    if model is not None:
        argv += ["--model_name_or_path", model]
    argv += extra or []
    with timing_hfsiamese_train(timer):
        metrics = train_command.main(argv)
    return figures(timer, metrics, batch_size, steps)


def figures(timer: StepTimer, metrics: dict[str, Any], batch_size: int, steps: int) -> dict[str, Any]:
    seen: set[tuple[int, ...]] = set()
    new, repeated = [], []
    for widths, step_s in zip(timer.widths, timer.step_s):
        (repeated if widths in seen else new).append(step_s)
        seen.add(widths)
    steady = timer.step_s[len(timer.step_s) // 2 :]
    ms = lambda values: round(statistics.median(values) * 1e3, 2) if values else None  # noqa: E731
    return {
        "train_runtime_s": round(metrics["train_runtime"], 2),
        "pairs_per_s_whole_run": round(steps * batch_size / metrics["train_runtime"], 1),
        "pairs_per_s_steady": timer.steady_pairs_per_s(batch_size),
        "step_ms_steady": ms(steady),
        "gap_ms_steady": ms(timer.gap_s[len(timer.gap_s) // 2 :]),
        "steps_timed": len(timer.step_s),  # the profiled ones left out
        "steps_sum_s": round(sum(timer.step_s), 2),
        "gaps_sum_s": round(sum(timer.gap_s), 2),
        "distinct_widths": len(seen),
        "step_ms_new_widths": ms(new),
        "step_ms_seen_widths": ms(repeated),
        "steps_new_widths": len(new),
        "first_step_ms": round(timer.step_s[0] * 1e3, 1) if timer.step_s else None,
        # The gap before step i + 1 (its batch fetched, the last step logged), the five longest: an epoch's start shows here.
        "longest_gaps_ms": {
            i + 1: round(gap * 1e3, 1) for i, gap in sorted(enumerate(timer.gap_s), key=lambda item: -item[1])[:5]
        },
        "profile": timer.profile,
        "eval_average_precision": round(metrics.get("eval_average_precision", float("nan")), 4),
    }


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argument_parser(__doc__)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--batch_sizes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--model", default=None, help="A BERT folder (default: the recipe's all-MiniLM-L6-v2).")
    args, extra = parser.parse_known_args(argv)  # the rest goes to `hfsiamese train`
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU here")
    rows = []
    for batch_size in args.batch_sizes:
        for precision in args.precisions:
            with tempfile.TemporaryDirectory() as tmp:
                row = {
                    "batch_size": batch_size,
                    "precision": precision,
                    **run(batch_size, precision, args.steps, args.device, str(Path(tmp) / "run"), args.model, extra),
                }
            rows.append(row)
            emit({"machine": machine(), "steps": args.steps, **row})
    return rows


if __name__ == "__main__":
    from hfsiamese.cpu_policy import apply_command_defaults

    apply_command_defaults()  # the command's CPU defaults, as `hfsiamese train` applies them (not in a test's process)
    main()
