"""
What `encode` runs with on this machine: the precision and the thread count it is given, decided nowhere in this folder.

How many threads a CPU run may use while other processes keep the cores busy, and whether `dtype="auto"` means
bfloat16 autocast here (a timing probe of the model, and speed-ups remembered between processes), are machine policy:
hfsiamese decides them (`hfsiamese.utils.core_sharing`, `hfsiamese.utils.encode_precision`, opted into through
`hfsiamese.cpu_policy`) and installs its decider as `EncodingPolicyMixin.encode_policy` when it is imported. This folder
travels with every checkpoint as remote code, so it keeps only the hook and a policy that decides nothing: torch's
threads as they are, float32 when no `dtype` is given, and float32 for `dtype="auto"` too (nothing here measures
whether bf16 pays, and a guess is not a decision), each saying so in its reason (`model.encode_precision()`).
Explicit `dtype=torch.bfloat16` / `torch.float32` and a precision fixed on the model (`set_encode_precision`) are
applied as given everywhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Protocol

import torch

logger = logging.getLogger(__name__)

__all__ = ["EncodePolicy", "EncodePrecision", "EncodingPolicyMixin", "ThreadAdapter"]


@dataclass(frozen=True)
class EncodePrecision:
    """The autocast type `encode` uses (None: float32) and why, in one phrase."""

    dtype: torch.dtype | None
    reason: str

    @property
    def name(self) -> str:
        return "bf16 autocast" if self.dtype == torch.bfloat16 else "fp32"


class ThreadAdapter(Protocol):
    """Sets torch's thread count between `encode`'s batches (`update`) and puts it back at the end (`restore`)."""

    changes: list[Any]

    def update(self) -> int: ...

    def restore(self) -> None: ...

    def describe(self) -> str: ...


class EncodePolicy:
    """
    The machine policy `encode` asks: this folder's own decides nothing (see the module docstring); hfsiamese
    installs a subclass that applies the process's CPU policy.
    """

    def default_dtype(self) -> torch.dtype | str | None:
        """`encode`'s `dtype` when none is given and none is fixed on the model: None (float32)."""
        return None

    def thread_adapter(self, device: torch.device) -> ThreadAdapter | None:
        """What adapts the threads of one `encode` call on `device`, or None: torch's threads as they are."""
        return None

    def check_dtype(self, model: Any, dtype: torch.dtype) -> None:
        """Refuse, before any work, an explicit autocast `dtype` that `model` cannot run in here (nothing by default:
        hfsiamese refuses bf16 for an LSTM on a CPU whose oneDNN cannot run it, with a line saying why)."""

    def choose_precision(self, model: Any) -> EncodePrecision:
        """
        What `dtype="auto"` means for `model` (an `InferenceHost`, in eval and inference mode) on its device; asked
        once per model and device.
        """
        return EncodePrecision(
            None, "fp32: dtype='auto' is decided by hfsiamese's measurement, which is not imported here"
        )


class EncodingPolicyMixin:
    """
    The precision and threads of `encode` (mixed into `SiameseInferenceMixin`): resolved from the call, the model and
    `encode_policy`, the hook hfsiamese replaces at import.
    """

    encode_policy: EncodePolicy = EncodePolicy()

    def _autocast(self, dtype: torch.dtype | None) -> Any:
        """`torch.autocast` on the model's device in `dtype`, or nothing when `dtype` is None."""
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    def _thread_adapter(self) -> ThreadAdapter | None:
        """What the policy gives one `encode` call to adapt torch's threads with (None: they stay as they are)."""
        return self.encode_policy.thread_adapter(self.device)

    def resolve_encode_dtype(self, dtype: torch.dtype | str | None = None) -> torch.dtype | None:
        """The autocast type `encode(dtype=dtype)` runs in here (None: float32, no autocast); "auto" decides now."""
        if dtype is None:
            fixed = self.fixed_encode_precision()
            if fixed is not None:
                return fixed.dtype
            dtype = self.encode_policy.default_dtype()
        if isinstance(dtype, str):
            if dtype != "auto":
                raise ValueError(
                    f"dtype must be 'auto', a torch.dtype (torch.bfloat16, torch.float32) or None, got {dtype!r}"
                )
            return self.encode_precision().dtype
        if dtype == torch.float32:
            return None
        self.encode_policy.check_dtype(self, dtype)
        return dtype

    def encode_precision(self) -> EncodePrecision:
        """
        What `encode(dtype="auto")` uses for this model on its current device, decided on first use and kept
        (by `encode_policy`: with hfsiamese, bf16 autocast only where measured faster and agreeing).
        """
        decided = self.__dict__.setdefault("_encode_precisions", {})
        if "*" in decided:
            return decided["*"]
        key = str(self.device)
        if key not in decided:
            if self.dtype != torch.float32:
                decided[key] = EncodePrecision(None, f"no autocast: the weights are {self.dtype}")
            else:
                was_training = self.training
                self.eval()
                try:
                    with torch.inference_mode():
                        decided[key] = self.encode_policy.choose_precision(self)
                finally:
                    self.train(was_training)
            logger.info("encode(dtype='auto') on %s: %s", key, decided[key].reason)
        return decided[key]

    def _architecture_key(self) -> str:
        """What an encoding's speed depends on (class, attention, parameter names and shapes), not the weights: a hash."""
        attention = getattr(getattr(self, "config", None), "_attn_implementation", None)
        shapes = (
            [f"{name}:{tuple(value.shape)}" for name, value in self.named_parameters()]
            if hasattr(self, "named_parameters")
            else []
        )
        text = "|".join([type(self).__name__, str(attention), *shapes])
        return f"{type(self).__name__}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"

    def fixed_encode_precision(self) -> EncodePrecision | None:
        """The precision `set_encode_precision` fixed on this model, or None where none was fixed."""
        return self.__dict__.get("_encode_precisions", {}).get("*")

    def set_encode_precision(self, dtype: torch.dtype | None, reason: str) -> None:
        """
        Fix what `encode` uses on every device when given no dtype or "auto" (a training run: its own `--bf16`),
        instead of the process default or a measurement.
        """
        self.__dict__["_encode_precisions"] = {"*": EncodePrecision(None if dtype == torch.float32 else dtype, reason)}
