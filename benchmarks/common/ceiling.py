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


def matmul_peak(dtype: torch.dtype = torch.float32, size: int = 2048, repeats: int = 10, device: str = "cpu") -> float:
    """Best FLOP/s of a `size × size` matmul in `dtype` on `device`."""
    a = torch.randn(size, size, device=device).to(dtype)
    b = torch.randn(size, size, device=device).to(dtype)
    best = float("inf")
    for _ in range(repeats + 1):  # the first run warms the kernels up and is not counted
        if device != "cpu":
            torch.cuda.synchronize()
        start = time.perf_counter()
        a @ b
        if device != "cpu":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def ceiling_report(device: str = "cpu") -> dict[str, float]:
    """fp32 and bf16 matmul peaks in TFLOP/s, as the benchmark JSON lines print them."""
    return {
        "peak_fp32_tflops": round(matmul_peak(torch.float32, device=device) / 1e12, 3),
        "peak_bf16_tflops": round(matmul_peak(torch.bfloat16, device=device) / 1e12, 3),
    }


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
    from benchmarks.common.harness import argument_parser, emit

    argument_parser(__doc__).parse_args()
    emit(ceiling_report())
