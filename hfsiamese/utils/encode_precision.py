"""
`encode(dtype="auto")`: bfloat16 autocast where this machine runs this model faster in it and the embeddings keep
their meaning; float32 everywhere else.

A CPU's flags do not settle it: on this project's AMD EPYC (AVX512-BF16) MiniLM encodes ~2× faster in bf16
autocast, on its Intel Xeon (AVX512-BF16 too, no AMX) slower (benchmarks/README.md): the casts and the kernels
autocast leaves in fp32 eat what the bf16 matrix products save where those are not much faster. So the first
`encode` of a model on a device decides once, for that model and device, by measuring a small batch of the model
itself (16 texts of 32 random tokens, fp32 and bf16 in turn, best of three after a warm-up): bf16 when it runs
at least `MIN_SPEEDUP`× as fast and its embeddings agree with fp32's to a cosine of at least `MIN_AGREEMENT`
for every probe text. On a CPU without native bf16 (neither AVX512-BF16 nor AMX, as torch reports them) nothing
is measured: fp32. On a GPU that supports bf16, bf16 when the embeddings agree. The decision and its reason are
logged once and kept on the model (`model.encode_precision()`); `dtype=torch.float32` and `dtype=torch.bfloat16`
always win.

"auto" is opt-in: `encode` without a `dtype` runs in float32 (a timing probe is not a stable decision on every
machine, and a bf16 embedding is ~1e-3 from an fp32 one), unless the process chose "auto" as its default
(`set_default_dtype`: hfsiamese's commands do, through `hfsiamese.cpu_policy`; a library user with
`hfsiamese.set_cpu_policy(encode_dtype="auto")`). `encode` asks this module through the machine policy hfsiamese
installs into the model (`hfsiamese.utils.encode_policy`); a checkpoint loaded as remote code without hfsiamese
encodes in float32, "auto" included (`models/siamese/encoding_policy.py`).

`HFSIAMESE_BF16_SPEEDUP=<number>` replaces the timing (to pin the choice on a fleet of machines, and in tests).
A timing is not a stable decision (on an AMX Xeon it flips between processes), so a process may keep measured
speed-ups across processes (`set_speedup_memory`): hfsiamese's commands remember them per machine, torch version,
thread count and model architecture in a file (`hfsiamese.utils.measurement_memory`); nothing does by default.

Hand-written: no library decides mixed precision by measurement. `EncodePrecision` itself is defined in the folder
that travels with the weights (a model keeps its decision), and imported here.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from hfsiamese.models.siamese.encoding_policy import EncodePrecision
from hfsiamese.utils.cpu_features import effective_features

logger = logging.getLogger(__name__)

__all__ = [
    "MIN_AGREEMENT",
    "MIN_SPEEDUP",
    "PINNED_SPEEDUP",
    "EncodePrecision",
    "bf16_speedup",
    "choose_encode_precision",
    "default_dtype",
    "native_cpu_bf16",
    "remembered_speedup",
    "set_default_dtype",
    "set_speedup_memory",
]

# bf16 only when clearly faster: noise, and the parts of a real call the probe leaves out (tokenising,
# padding), must not tip a machine where the two are even.
MIN_SPEEDUP = 1.2
# The lowest cosine between a probe text's fp32 and bf16 embeddings (bf16 keeps 8 bits of mantissa: a sound
# model agrees to ~0.9999; a model whose activations overflow or cancel in bf16 does not).
MIN_AGREEMENT = 0.999
PINNED_SPEEDUP = "HFSIAMESE_BF16_SPEEDUP"
PROBE_TEXTS, PROBE_TOKENS = 16, 32

# What `encode` uses when no `dtype` is given: None (float32) unless the process chose otherwise.
_process_default: dict[str, torch.dtype | str | None] = {"dtype": None}
# `remember(key, measure) -> speed-up`: a speed-up measured before for `key`, else `measure()`'s, kept (None: none kept).
_memory: dict[str, Callable[[str, Callable[[], float]], float] | None] = {"remember": None}


def set_speedup_memory(remember: Callable[[str, Callable[[], float]], float] | None) -> None:
    """Keep measured bf16 speed-ups with `remember(key, measure)` (None: measure in every process)."""
    _memory["remember"] = remember


def remembered_speedup(key: str, measure: Callable[[], float]) -> float:
    """`measure()`, or the speed-up the process's memory holds for `key`; a pinned speed-up is never remembered."""
    remember = _memory["remember"]
    if remember is None or os.environ.get(PINNED_SPEEDUP):
        return measure()
    return remember(key, measure)


def set_default_dtype(dtype: torch.dtype | str | None) -> None:
    """This process's default for `encode`'s `dtype`: "auto", a torch dtype, or None (float32)."""
    if not (dtype is None or dtype == "auto" or isinstance(dtype, torch.dtype)):
        raise ValueError(f"the default encode dtype must be 'auto', a torch.dtype or None, got {dtype!r}")
    _process_default["dtype"] = None if dtype == torch.float32 else dtype


def default_dtype() -> torch.dtype | str | None:
    """`encode`'s `dtype` when none is given: None (float32) unless `set_default_dtype` chose otherwise."""
    return _process_default["dtype"]


def native_cpu_bf16() -> bool:
    """Does the CPU compute in bf16 natively (AVX512-BF16 or AMX tiles), as /proc/cpuinfo reports it (torch's public
    capability elsewhere) and within this process's caps (`hfsiamese.utils.cpu_features`)?"""
    return effective_features().native_bf16


def probe_batch(vocab_size: int, device: torch.device, pad_id: int = 0) -> dict[str, torch.Tensor]:
    """16 texts of 32 random token ids (a fixed generator: the caller's random state is not moved)."""
    generator = torch.Generator().manual_seed(0)
    low = min(max(pad_id + 1, 5), max(vocab_size - 1, 1))
    input_ids = torch.randint(low, max(vocab_size, low + 1), (PROBE_TEXTS, PROBE_TOKENS), generator=generator)
    return {"input_ids": input_ids.to(device), "attention_mask": torch.ones_like(input_ids).to(device)}


def bf16_speedup(step: Callable[[bool], object], repeats: int = 3) -> float:
    """
    fp32 time over bf16-autocast time of `step(bf16)`: one warm-up each (kernels chosen, memory allocated), then
    `repeats` of each in turn, best of each. `HFSIAMESE_BF16_SPEEDUP` set to a number replaces the timing.
    """
    pinned = os.environ.get(PINNED_SPEEDUP)
    if pinned:
        return float(pinned)
    step(False), step(True)
    times: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(repeats):
        for bf16 in (False, True):
            start = time.perf_counter()
            step(bf16)
            times[bf16].append(time.perf_counter() - start)
    return min(times[False]) / min(times[True])


def choose_encode_precision(
    embed: Callable[[dict[str, torch.Tensor]], torch.Tensor],
    features: dict[str, torch.Tensor],
    device: torch.device,
    *,
    model_key: str | None = None,
) -> EncodePrecision:
    """
    What `dtype="auto"` means for the model whose batch embedding is `embed` on `device`, measured on `features`
    (`probe_batch`); see the module docstring. `model_key` names the model's architecture for the speed-up memory.
    """
    if device.type == "cuda":
        if not torch.cuda.is_bf16_supported():
            return EncodePrecision(None, "fp32: this GPU lacks bf16")
        speedup = None
    elif device.type != "cpu":
        return EncodePrecision(None, f"fp32 on {device.type}")
    elif not native_cpu_bf16():
        return EncodePrecision(None, "fp32: this CPU has no native bf16 (neither AVX512-BF16 nor AMX)")
    else:

        def measure() -> float:
            return _measured_speedup(embed, features, device)

        speedup = measure() if model_key is None else remembered_speedup(f"encode {model_key} on {device}", measure)
        if speedup < MIN_SPEEDUP:
            return EncodePrecision(
                None, f"fp32: bf16 autocast measured {speedup:.2f}× as fast on this CPU (needs ≥ {MIN_SPEEDUP}×)"
            )
    agreement = _agreement(embed, features, device)
    if agreement < MIN_AGREEMENT:
        return EncodePrecision(
            None, f"fp32: bf16 embeddings agree only to cosine {agreement:.4f} (needs ≥ {MIN_AGREEMENT})"
        )
    where = "on this GPU" if speedup is None else f"measured {speedup:.2f}× as fast on this CPU"
    return EncodePrecision(torch.bfloat16, f"bf16 autocast: {where}, embeddings agree to cosine {agreement:.4f}")


def _measured_speedup(embed: Callable, features: dict[str, torch.Tensor], device: torch.device) -> float:
    def run(bf16: bool) -> torch.Tensor:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            return embed(features)

    return bf16_speedup(run)


def _agreement(embed: Callable, features: dict[str, torch.Tensor], device: torch.device) -> float:
    full = embed(features).float()
    with torch.autocast(device.type, dtype=torch.bfloat16):
        reduced = embed(features).float()
    return float(F.cosine_similarity(full, reduced, dim=-1).min())
