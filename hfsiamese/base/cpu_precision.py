"""`--bf16 auto`: bfloat16 autocast where it pays on this processor, decided by measuring, never from the model name.

A CPU's flags do not settle it: on this project's AMD EPYC (AVX512-BF16) the MiniLM recipe trains 2.7× faster
in bf16 autocast, on its Intel Xeon (AVX512-BF16 too, no AMX) 1.6× slower (`benchmarks/README.md`): the casts and
the element-wise kernels that autocast leaves in fp32 eat what the bf16 matrix products save where those are
not much faster. So on a CPU with native bf16 (AVX512-BF16 or AMX, as torch reports them) one training step of
a small transformer layer is timed both ways (about a second, once per process) and bf16 is chosen only when
it is clearly faster. On a GPU, bf16 where the device supports it. Explicit `--bf16 true/false` always wins.
`encode(dtype="auto")` decides the same way for inference, on the model itself (`hfsiamese.utils.encode_precision`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from hfsiamese.utils.cpu_features import check_bf16_lstm, check_bf16_runs
from hfsiamese.utils.encode_precision import bf16_speedup, native_cpu_bf16, remembered_speedup

BF16_VALUES = ("auto", "true", "false")
# bf16 is chosen when the probe step runs at least this much faster than fp32 (noise, and the parts of a real
# step the probe leaves out, must not tip a machine where the two are even).
MIN_SPEEDUP = 1.2


@dataclass(frozen=True)
class PrecisionChoice:
    """Whether to train in bf16 autocast, and why (one line for the run's log)."""

    bf16: bool
    reason: str


def parse_bf16(value: Any) -> bool | None:
    """`--bf16` as given: True, False, or None for "auto"; anything else is a one-line ValueError."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text == "auto":
        return None
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"--bf16 must be one of {BF16_VALUES}, got {value!r}")


def choose_bf16(value: Any, *, device_type: str) -> PrecisionChoice:
    """What `--bf16 value` means on a device of `device_type` ("cpu", "cuda", ...)."""
    given = parse_bf16(value)
    if given is not None:
        return PrecisionChoice(given, f"--bf16 {str(given).lower()} given")
    if device_type == "cuda":
        supported = torch.cuda.is_bf16_supported()
        return PrecisionChoice(supported, f"--bf16 auto: the GPU {'supports' if supported else 'lacks'} bf16")
    if device_type != "cpu":
        return PrecisionChoice(False, f"--bf16 auto: fp32 on {device_type}")
    if not native_cpu_bf16():
        return PrecisionChoice(False, "--bf16 auto: fp32, this CPU has no native bf16 (neither AVX512-BF16 nor AMX)")
    speedup = measured_bf16_speedup()
    if speedup >= MIN_SPEEDUP:
        return PrecisionChoice(True, f"--bf16 auto: bf16 autocast, measured {speedup:.2f}× as fast as fp32 on this CPU")
    return PrecisionChoice(
        False,
        f"--bf16 auto: fp32, bf16 autocast measured {speedup:.2f}× as fast on this CPU (bf16 needs ≥ {MIN_SPEEDUP}×)",
    )


def trains_on_cpu(training_args: Any) -> bool:
    """Does this run train on the CPU (asked for, or no GPU)?"""
    return bool(getattr(training_args, "use_cpu", False)) or not torch.cuda.is_available()


def check_bf16_trainable(model_args: Any, training_args: Any) -> None:
    """`--bf16 true` for an LSTM on a CPU whose oneDNN cannot run one in bf16 (below AVX-512): refused in one line
    before the data is read (`hfsiamese.utils.cpu_features`); `--bf16 auto` never chooses it there."""
    if training_args.bf16 and trains_on_cpu(training_args) and _encoder_type(model_args) == "lstm":
        check_bf16_lstm(requested_by="--bf16 true")


def check_bf16_model(model: Any, training_args: Any) -> None:
    """As `check_bf16_trainable`, on a built model (a Trainer made in user code): before any step."""
    if training_args.bf16 and trains_on_cpu(training_args):
        check_bf16_runs(model, requested_by="--bf16 true")


def _encoder_type(model_args: Any) -> str | None:
    """The encoder a run will train: a saved checkpoint's (its config.json), else the arguments'."""
    name = getattr(model_args, "model_name_or_path", None)
    config = Path(name) / "config.json" if name else None
    if config is not None and config.is_file():
        try:
            return json.loads(config.read_text(encoding="utf-8")).get("encoder_type")
        except (OSError, ValueError):
            return None  # an unreadable config fails later, where the model is loaded, with its own message
    return getattr(model_args, "encoder_type", None)


@functools.lru_cache(maxsize=1)
def measured_bf16_speedup() -> float:
    """
    fp32 time over bf16-autocast time of a training step (forward and backward) of one transformer layer of
    MiniLM's size on 64 texts of 24 tokens: the best of a few repeats each, alternating, after a warm-up.
    `HFSIAMESE_BF16_SPEEDUP` set to a number replaces the measurement (to pin the choice, and in tests). In
    hfsiamese's commands the first measurement on a machine is kept for the next runs (`hfsiamese.utils.measurement_memory`).
    """
    return remembered_speedup("training step of a 384-wide transformer layer on cpu", _measure_training_step)


def _measure_training_step() -> float:
    generator_state = torch.random.get_rng_state()  # the probe must not move the run's seeded generators
    try:
        torch.manual_seed(0)
        layer = torch.nn.TransformerEncoderLayer(384, 6, 1536, dropout=0.0, batch_first=True)
        inputs = torch.randn(64, 24, 384)

        def step(bf16: bool) -> None:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out = layer(inputs)
            out.float().sum().backward()

        return bf16_speedup(step)
    finally:
        torch.random.set_rng_state(generator_state)


__all__ = [
    "BF16_VALUES",
    "MIN_SPEEDUP",
    "PrecisionChoice",
    "check_bf16_model",
    "check_bf16_trainable",
    "choose_bf16",
    "measured_bf16_speedup",
    "native_cpu_bf16",
    "parse_bf16",
    "trains_on_cpu",
]
