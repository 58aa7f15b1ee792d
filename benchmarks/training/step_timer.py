"""A Trainer callback that times each optimiser step, the gap before it and its padded widths, and profiles 5 steps once.

Shared by `trainer_step_times.py` (step times and a profile of `hfsiamese train`) and `training_throughput.py` (steady
pairs/s for hfsiamese and sentence-transformers alike); `timing_hfsiamese_train` attaches it to a `hfsiamese train` run
made in this process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import TrainerCallback

PROFILED_STEPS = 5
WAITS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpyAsync")
LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC")


class StepTimer(TrainerCallback):
    """Times each optimiser step and the gap before it; profiles `PROFILED_STEPS` steps from `profile_from`."""

    def __init__(self, device: str, profile_from: int | None) -> None:
        self.device, self.profile_from = device, profile_from
        self.step_s: list[float] = []
        self.gap_s: list[float] = []
        self.widths: list[tuple[int, ...]] = []
        self.forward_widths: tuple[int, ...] = ()
        self.profiler: Any = None
        self.profile: dict[str, Any] = {}
        self._begun = self._ended = 0.0
        self._skip_gap = False  # the gap after the profiled steps holds the profile's summary

    def synchronize(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def forward_hook(self, module: Any, args: tuple, kwargs: dict[str, Any]) -> None:
        """A forward pre-hook: the padded width of each side this step encodes."""
        self.forward_widths = tuple(
            int(kwargs[name].shape[-1]) for name in ("input_ids_a", "input_ids_b") if name in kwargs
        )

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.synchronize()
        self._begun = time.perf_counter()
        if self._ended and not self._skip_gap:
            self.gap_s.append(self._begun - self._ended)
        self._skip_gap = False
        if self.profile_from is not None and not self.profile and len(self.step_s) == self.profile_from:
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device == "cuda" else [])
            self.profiler = profile(activities=activities)
            self.profiler.__enter__()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.synchronize()
        self._ended = time.perf_counter()
        self.step_s.append(self._ended - self._begun)
        self.widths.append(self.forward_widths)
        if self.profiler is not None and len(self.step_s) == self.profile_from + PROFILED_STEPS:
            self.profiler.__exit__(None, None, None)
            self.profile = summarise_profile(self.profiler, self.device)  # not empty: profiled once
            self.profiler = None
            # The profiled steps ran slower (the profiler's own cost): kept out of the step figures.
            del self.step_s[-PROFILED_STEPS:]
            del self.widths[-PROFILED_STEPS:]
            del self.gap_s[-(PROFILED_STEPS - 1) :]
            self._skip_gap = True

    def steady_pairs_per_s(self, batch_size: int) -> float | None:
        """Pairs/s of the second half of the timed steps: the median step plus the median gap before one."""
        steady, gaps = self.step_s[len(self.step_s) // 2 :], self.gap_s[len(self.gap_s) // 2 :]
        if not steady:
            return None
        return round(batch_size / (statistics.median(steady) + (statistics.median(gaps) if gaps else 0.0)), 1)


@contextmanager
def timing_hfsiamese_train(timer: StepTimer) -> Iterator[None]:
    """While open, a `hfsiamese train` run in this process (`hfsiamese.cli.train.main`, or `recipes/train.py` run in
    it) trains with `timer` as a callback and its forward pre-hook on the model."""
    from hfsiamese.cli import train as train_command

    original = train_command.train_evaluate_save

    def timed(trainer: Any, **kwargs: Any) -> Any:
        trainer.add_callback(timer)
        hook = trainer.model.register_forward_pre_hook(timer.forward_hook, with_kwargs=True)
        try:
            return original(trainer, **kwargs)
        finally:
            hook.remove()

    train_command.train_evaluate_save = timed
    try:
        yield
    finally:
        train_command.train_evaluate_save = original


def summarise_profile(profiler: Any, device: str) -> dict[str, Any]:
    """Per step: kernel launches, kernel time, host-device waits, and the host's 12 busiest operations (self time)."""
    events = profiler.key_averages()
    per_step: dict[str, Any] = {}
    if device == "cuda":
        per_step["kernel_launches"] = round(sum(e.count for e in events if e.key in LAUNCHES) / PROFILED_STEPS)
        kernel_us = sum(e.device_time_total for e in events if e.device_type == torch.autograd.DeviceType.CUDA)
        per_step["kernel_ms"] = round(kernel_us / PROFILED_STEPS / 1e3, 2)
        per_step["waits"] = {
            e.key: {
                "count": round(e.count / PROFILED_STEPS, 1),
                "ms": round(e.self_cpu_time_total / PROFILED_STEPS / 1e3, 2),
            }
            for e in events
            if e.key in WAITS
        }
    host = sorted(
        (e for e in events if e.device_type == torch.autograd.DeviceType.CPU),
        key=lambda e: e.self_cpu_time_total,
        reverse=True,
    )
    per_step["host_self_ms"] = {e.key: round(e.self_cpu_time_total / PROFILED_STEPS / 1e3, 2) for e in host[:12]}
    return per_step
