#!/usr/bin/env python
"""What the in-batch loss alone costs as the batch grows (suite 5), next to the step it sits in.

    python benchmarks/loss_cost.py [--device cpu|cuda] [--batch_sizes 64 256 1024 4096] [--append]

For each batch size B (d = 384, MiniLM's width) the hard-negative triplet loss and the
multiple-negatives ranking loss take random L2-normalised embeddings and run forward + backward;
the figure is the best of several repeats. Their work is the B×B similarity matrix (2·B²·d FLOPs
forward, twice that backward). Next to it: a MiniLM training step on the same B pairs at the
machine's measured fp32 matmul peak (2 sides × 16 tokens × 3 × 21.2 MFLOPs per token) — a lower
bound on the step, so `share_of_step` is an upper bound on the loss's share. Memory: growth of the
peak resident set (CPU) or of CUDA's peak allocation while the loss runs; sizes run in increasing
order, so each figure is that size's own.

Prints one JSON line per (loss, B); --append adds the table to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ceiling import MINILM_FORWARD_FLOPS_PER_TOKEN, TRAINING_STEP_FACTOR, matmul_peak
from machine_info import machine
from readme_tables import append_section, markdown_table

from hfsiamese.losses import get_loss

TOKENS_PER_QUESTION = 16


def _peak_mib(device: str) -> float:
    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(loss_name: str, batch_size: int, dim: int, device: str, repeats: int) -> dict[str, float]:
    loss_fn = get_loss(loss_name)
    generator = torch.Generator().manual_seed(batch_size)
    a = F.normalize(torch.randn(batch_size, dim, generator=generator), dim=-1).to(device).requires_grad_()
    b = F.normalize(torch.randn(batch_size, dim, generator=generator), dim=-1).to(device).requires_grad_()
    group_ids = torch.arange(batch_size, device=device)
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    before = _peak_mib(device)
    best = float("inf")
    for _ in range(repeats + 1):  # the first pass warms up and is not counted
        a.grad = b.grad = None
        start = time.perf_counter()
        loss_fn(a, b, group_ids=group_ids).backward()
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return {"loss_ms": best * 1e3, "memory_growth_mib": _peak_mib(device) - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--batch_sizes", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048, 4096])
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--losses", nargs="+", default=["hard_negative_triplet", "multiple_negatives_ranking"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--append", action="store_true", help="append the table to benchmarks/README.md")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device here")
    if len(args.losses) > 1:
        # Peak RSS only ever grows within a process: each loss runs in its own, so that its
        # memory figures are its own and not the previous loss's peak.
        rows = []
        for loss_name in args.losses:
            argv = [a for a in sys.argv[1:] if a != "--append"]
            if "--losses" in argv:
                start = argv.index("--losses")
                end = next((i for i in range(start + 1, len(argv)) if argv[i].startswith("--")), len(argv))
                argv = argv[:start] + argv[end:]
            result = subprocess.run(
                [sys.executable, __file__, *argv, "--losses", loss_name], capture_output=True, text=True
            )
            if result.returncode != 0:
                sys.exit(f"{loss_name} failed:\n{result.stderr[-4000:]}")
            for line in result.stdout.strip().splitlines():
                rows.append(json.loads(line))
                print(line, flush=True)
    else:
        rows = run_sizes(args)
    if args.append:
        append_table(rows)


def run_sizes(args: argparse.Namespace) -> list[dict]:
    peak = matmul_peak(torch.float32, device=args.device)
    rows = []
    for loss_name in args.losses:
        for batch_size in sorted(args.batch_sizes):
            figures = measure(loss_name, batch_size, args.dim, args.device, args.repeats)
            loss_flops = 3 * 2 * batch_size**2 * args.dim
            step_flops = batch_size * 2 * TOKENS_PER_QUESTION * TRAINING_STEP_FACTOR * MINILM_FORWARD_FLOPS_PER_TOKEN
            row = {
                "loss": loss_name,
                "batch_size": batch_size,
                "dim": args.dim,
                "device": args.device,
                "loss_ms": round(figures["loss_ms"], 3),
                "loss_ms_at_peak": round(loss_flops / peak * 1e3, 3),
                "memory_growth_mib": round(figures["memory_growth_mib"], 1),
                "minilm_step_ms_at_peak": round(step_flops / peak * 1e3, 1),
                "share_of_step": round(figures["loss_ms"] / (step_flops / peak * 1e3), 4),
                "peak_fp32_tflops": round(peak / 1e12, 3),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def append_table(rows: list[dict]) -> None:
    command = "python benchmarks/loss_cost.py " + " ".join(sys.argv[1:]).replace("--append", "").strip()
    device = rows[0]["device"]
    lines = [
        "",
        f"#### {dt.date.today().isoformat()}, {machine() if device == 'cpu' else torch.cuda.get_device_name()}: `{command.strip()}`",
        "",
        f"Measured fp32 matmul peak: {rows[0]['peak_fp32_tflops']} TFLOP/s.",
        "",
        *markdown_table(
            [
                "loss",
                "B",
                "loss fwd+bwd ms",
                "at peak ms",
                "memory growth MiB",
                "MiniLM step at peak ms",
                "loss share of step",
            ],
            [
                [
                    r["loss"],
                    r["batch_size"],
                    r["loss_ms"],
                    r["loss_ms_at_peak"],
                    r["memory_growth_mib"],
                    r["minilm_step_ms_at_peak"],
                    f"{r['share_of_step']:.2%}",
                ]
                for r in rows
            ],
        ),
    ]
    append_section(lines)


if __name__ == "__main__":
    main()
