"""The matmul ceiling: a product too slow for its budget is measured at a smaller size, never skipped."""

from __future__ import annotations

import math

import pytest
import torch

from benchmarks.common.ceiling import ceiling_report, matmul_peak


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_tiny_budget_still_measures_a_peak(dtype):
    # 1 ms cannot hold a 2048² product on these CPUs (bf16 without native instructions takes about a minute): the
    # probe sizes it down to the 256² floor, and the peak is still a positive, finite rate.
    peak = matmul_peak(dtype, size=2048, repeats=3, budget_s=1e-3)
    assert math.isfinite(peak) and peak > 0


def test_the_report_names_both_peaks_in_tflops():
    report = ceiling_report()
    assert set(report) == {"peak_fp32_tflops", "peak_bf16_tflops"}
    assert report["peak_fp32_tflops"] > 0
