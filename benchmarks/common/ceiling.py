"""The machine's ceiling: the measured matmul peak every benchmark states its figures against.

A FLOP count alone says nothing on a shared 2-core machine; the fraction of a peak measured in
the same run does. `matmul_peak` times a square matmul (2048² by default, the issue's yardstick)
and keeps the best of several repeats, since interference only ever slows a run down.
"""

from __future__ import annotations

import time

import torch

#: Forward FLOPs per token of all-MiniLM-L6-v2 (6 layers, width 384, FFN 1536): 2 × 10.6M
#: multiply-adds for the weight matmuls; attention over a ~20-token question adds little.
MINILM_FORWARD_FLOPS_PER_TOKEN = 2 * 10.6e6
#: A training step costs about three forwards (forward, then backward for inputs and weights).
TRAINING_STEP_FACTOR = 3


def _product_seconds(a: torch.Tensor, b: torch.Tensor, device: str) -> float:
    if device != "cpu":
        torch.cuda.synchronize()
    start = time.perf_counter()
    a @ b
    if device != "cpu":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def matmul_peak(
    dtype: torch.dtype = torch.float32, size: int = 2048, repeats: int = 10, device: str = "cpu", budget_s: float = 5.0
) -> float:
    """Best FLOP/s of a `size × size` matmul in `dtype` on `device`, over `repeats` runs or about `budget_s` seconds.

    On a CPU without bf16 instructions (an AVX2-only EPYC) one bf16 product of 2048² takes about a minute: eleven of
    them held every benchmark's start for ten. A 256² probe sizes the product down (by halves) until one fits in a
    tenth of the budget; the peak of a smaller square product is, if anything, an underestimate of the machine's.
    """
    probe = 256
    a, b = (torch.randn(probe, probe, device=device).to(dtype) for _ in range(2))
    _product_seconds(a, b, device)  # warm-up
    per_flop = _product_seconds(a, b, device) / (2 * probe**3)
    while size > probe and per_flop * 2 * size**3 > budget_s / 10:
        size //= 2
    a, b = (torch.randn(size, size, device=device).to(dtype) for _ in range(2))
    best = float("inf")
    began = time.perf_counter()
    for run in range(repeats + 1):  # the first run warms the kernels up and is not counted
        if run >= 2 and time.perf_counter() - began > budget_s:
            break
        seconds = _product_seconds(a, b, device)
        if run:
            best = min(best, seconds)
    return 2 * size**3 / best


def ceiling_report(device: str = "cpu") -> dict[str, float]:
    """fp32 and bf16 matmul peaks in TFLOP/s, as the benchmark JSON lines print them."""
    return {
        "peak_fp32_tflops": round(matmul_peak(torch.float32, device=device) / 1e12, 4),
        "peak_bf16_tflops": round(matmul_peak(torch.bfloat16, device=device) / 1e12, 4),
    }


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
    from benchmarks.common.harness import argument_parser, emit

    argument_parser(__doc__).parse_args()
    emit(ceiling_report())
