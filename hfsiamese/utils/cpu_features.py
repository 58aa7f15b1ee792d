"""
The CPU's instruction sets that decide this library's numerics, and the caps a process puts on them.

Two paths depend on them, and both fail quietly or loudly on the wrong CPU:

- **bf16.** Matrix products run in bf16 on any x86 CPU (emulated, slowly, below AVX512-BF16), but oneDNN runs an
  LSTM in bf16 only from AVX-512 up (its bf16 RNN needs `avx512_core`): on an AVX2-only CPU it refuses with "could
  not create a primitive descriptor for the LSTM forward propagation primitive", and only for some batches (a
  batch whose texts all have one length; packed batches of several lengths take PyTorch's own kernel). So a bf16
  request for an LSTM model is refused in one line before any work (`check_bf16_runs`), decided by running a
  tiny LSTM under bf16 autocast once per process (`runs_lstm_in_bf16`): a probe, not a table of CPU models, so
  it honours the caps below and any build of torch.
- **int8.** onnxruntime's int8 and OpenVINO's CPU plugin multiply u8 activations by s8 weights. With VNNI
  (AVX512-VNNI or AVX-VNNI) that is exact; without it (AVX2, plain AVX-512) the kernel sums pairs of products into
  int16 and saturates, so an LSTM exported to ONNX with full-range int8 weights was 5% off its model (cosine 0.953)
  on an AVX2 EPYC, and an OpenVINO graph quantised by NNCF with full-range weights up to 25% of its output.
  hfsiamese's int8 exports therefore use reduced-range (7-bit) weights on every CPU
  (`hfsiamese.base.onnx_export_steps`, `hfsiamese.base.nncf_process`), which no CPU saturates: an export made on
  one CPU is served on another.

The flags are read from /proc/cpuinfo on Linux (what the kernel reports; no private torch name that a release may
rename), else from torch's public capability string. A process may cap what oneDNN and ATen use with
`ONEDNN_MAX_CPU_ISA` and `ATEN_CPU_CAPABILITY` (the suite's capped runs do, `tests/cpu_capabilities.py`);
`effective_features` honours both. onnxruntime has no such cap: VNNI is what the CPU has.

Hand-written: no installed library reports these flags together with what they mean for torch and onnxruntime.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

__all__ = [
    "CpuFeatures",
    "bf16_path",
    "check_bf16_runs",
    "cpu_flags",
    "detected_features",
    "effective_features",
    "has_lstm",
    "int8_path",
    "runs_lstm_in_bf16",
]

# oneDNN's ISA names in increasing order (its documented values of ONEDNN_MAX_CPU_ISA; AVX10_1_512 is
# AVX512_CORE_FP16's later name, AVX10_1_512_AMX AVX512_CORE_AMX's). ALL / DEFAULT: no cap.
_ONEDNN_ISAS = (
    "SSE41",
    "AVX",
    "AVX2",
    "AVX2_VNNI",
    "AVX2_VNNI_2",
    "AVX512_CORE",
    "AVX512_CORE_VNNI",
    "AVX512_CORE_BF16",
    "AVX10_1_512",
    "AVX512_CORE_FP16",
    "AVX10_1_512_AMX",
    "AVX512_CORE_AMX",
    "AVX10_1_512_AMX_FP16",
    "AVX512_CORE_AMX_FP16",
)
_RANK = {name: rank for rank, name in enumerate(_ONEDNN_ISAS)}
_RANK.update({"AVX512_CORE_FP16": _RANK["AVX10_1_512"], "AVX512_CORE_AMX": _RANK["AVX10_1_512_AMX"]})
_RANK.update({"AVX512_CORE_AMX_FP16": _RANK["AVX10_1_512_AMX_FP16"]})


@dataclass(frozen=True)
class CpuFeatures:
    """The instruction sets that matter here (True: present and usable), and where the answer came from."""

    avx2: bool
    avx512: bool  # AVX-512 F/BW/VL ("avx512_core" in oneDNN's words): bf16 LSTMs run, emulated
    avx512_bf16: bool  # native bf16 dot products
    amx: bool  # AMX tiles with bf16 (and int8): the matrix engine of recent Xeons
    vnni: bool  # AVX512-VNNI or AVX-VNNI: int8 dot products without int16 saturation
    source: str  # "/proc/cpuinfo", "torch", plus the caps applied

    @property
    def native_bf16(self) -> bool:
        """bf16 computed natively (AVX512-BF16 or AMX), where bf16 autocast can pay."""
        return self.avx512_bf16 or self.amx

    @property
    def name(self) -> str:
        """The highest of the kinds this project meets: "amx", "avx512_bf16", "avx512", "avx2" or "older"."""
        for kind in ("amx", "avx512_bf16", "avx512", "avx2"):
            if getattr(self, kind):
                return kind
        return "older"

    def as_dict(self) -> dict[str, Any]:
        return {
            "avx2": self.avx2,
            "avx512": self.avx512,
            "avx512_bf16": self.avx512_bf16,
            "amx": self.amx,
            "vnni": self.vnni,
            "source": self.source,
        }


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str] | None:
    """The first CPU's flags as the Linux kernel reports them, or None where there is no such file."""
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        return None
    return frozenset()


def features_from_flags(flags: frozenset[str], source: str = "/proc/cpuinfo") -> CpuFeatures:
    """What /proc/cpuinfo's flags say (AVX-512 counts only with F, BW and VL: oneDNN's avx512_core)."""
    avx512 = {"avx512f", "avx512bw", "avx512vl"} <= flags
    return CpuFeatures(
        avx2="avx2" in flags,
        avx512=avx512,
        avx512_bf16=avx512 and "avx512_bf16" in flags,
        amx=avx512 and {"amx_tile", "amx_bf16"} <= flags,
        vnni=bool({"avx512_vnni", "avx_vnni"} & flags),
        source=source,
    )


@functools.lru_cache(maxsize=1)
def detected_features() -> CpuFeatures:
    """The CPU's own features, before any cap: /proc/cpuinfo on Linux, else torch's capability string."""
    flags = cpu_flags()
    if flags:
        return features_from_flags(flags)
    import torch

    capability = torch.backends.cpu.get_cpu_capability().upper()  # "DEFAULT", "AVX2", "AVX512", ...
    avx512 = capability.startswith("AVX512")
    return CpuFeatures(
        avx2=avx512 or capability == "AVX2",
        avx512=avx512,
        avx512_bf16=False,  # not told by a public torch API: bf16 "auto" stays fp32 there
        amx=False,
        vnni=False,
        source="torch",
    )


def effective_features(environ: Mapping[str, str] | None = None) -> CpuFeatures:
    """`detected_features()` lowered to the caps of `environ` (default: this process's): ONEDNN_MAX_CPU_ISA for
    oneDNN's bf16 and AMX, ATEN_CPU_CAPABILITY for ATen's vector kernels. VNNI (onnxruntime's) is never capped."""
    environ = os.environ if environ is None else environ
    features = detected_features()
    caps = []
    onednn = environ.get("ONEDNN_MAX_CPU_ISA", "").strip().upper()
    if onednn and onednn not in ("ALL", "DEFAULT"):
        rank = _RANK.get(onednn)
        if rank is not None:
            caps.append(f"ONEDNN_MAX_CPU_ISA={onednn}")
            features = replace(
                features,
                avx2=features.avx2 and rank >= _RANK["AVX2"],
                avx512=features.avx512 and rank >= _RANK["AVX512_CORE"],
                avx512_bf16=features.avx512_bf16 and rank >= _RANK["AVX512_CORE_BF16"],
                amx=features.amx and rank >= _RANK["AVX10_1_512_AMX"],
            )
    aten = environ.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    if aten in ("default", "avx2"):
        caps.append(f"ATEN_CPU_CAPABILITY={aten}")
        features = replace(
            features,
            avx2=features.avx2 and aten == "avx2",
            avx512=False,
            avx512_bf16=False,
            amx=False,
        )
    if caps:
        features = replace(features, source=f"{features.source}, capped by {' '.join(caps)}")
    return features


@functools.lru_cache(maxsize=1)
def runs_lstm_in_bf16() -> bool:
    """Does this process's torch run an LSTM under CPU bf16 autocast? A tiny one is run once to see (oneDNN decides,
    caps included); the caller's random generators are left as they were."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        lstm = torch.nn.LSTM(4, 4, batch_first=True)
        inputs = torch.randn(2, 3, 4)
    try:
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            lstm(inputs)
    except RuntimeError:
        return False
    return True


def has_lstm(model: Any) -> bool:
    """Does `model` (a torch module) hold an LSTM?"""
    import torch

    modules = getattr(model, "modules", None)
    return callable(modules) and any(isinstance(module, torch.nn.LSTM) for module in modules())


def check_bf16_runs(model: Any, *, requested_by: str) -> None:
    """Refuse, in one line, bf16 on this CPU for a model it cannot run in bf16 (an LSTM below AVX-512), before any
    work; `requested_by` names what asked for it (`--bf16 true`, `dtype=torch.bfloat16`)."""
    if has_lstm(model):
        check_bf16_lstm(requested_by=requested_by)


def check_bf16_lstm(*, requested_by: str) -> None:
    """As `check_bf16_runs`, for a model known to be an LSTM before it is built."""
    if not runs_lstm_in_bf16():
        features = effective_features()
        raise ValueError(
            f"{requested_by}: this CPU cannot run an LSTM in bfloat16 (oneDNN needs AVX-512; this CPU offers "
            f"{features.name.upper()} as used here, {features.source}): run it in float32; `hfsiamese env` shows "
            "which bf16 and int8 paths this CPU takes"
        )


def bf16_path(features: CpuFeatures | None = None) -> str:
    """One line: how bf16 runs here (what `--bf16 auto` and `encode(dtype="auto")` can choose)."""
    features = effective_features() if features is None else features
    if features.amx:
        return "native on AMX tiles (bf16 'auto' measures and may choose it)"
    if features.avx512_bf16:
        return "native with AVX512-BF16 (bf16 'auto' measures and may choose it)"
    if features.avx512:
        return "emulated on AVX-512 (runs, LSTMs too, but slower: 'auto' stays fp32)"
    return "emulated for matrix products only; an LSTM in bf16 is refused (no AVX-512): 'auto' stays fp32"


def int8_path(features: CpuFeatures | None = None) -> str:
    """One line: which int8 kernel onnxruntime and OpenVINO take on this CPU, and what hfsiamese's exports do about it."""
    features = effective_features() if features is None else features
    if features.amx:
        return "u8 x s8 on AMX tiles (exact); exports use reduced-range (7-bit) weights, right on every CPU"
    if features.vnni:
        return "u8 x s8 with VNNI (exact); exports use reduced-range (7-bit) weights, right on every CPU"
    return (
        "u8 x s8 without VNNI (int16 sums saturate full-range weights); exports use reduced-range (7-bit) weights, "
        "which do not saturate"
    )
