"""
The warning an int8 export made with full-range weights gets when it is opened on a CPU without VNNI.

Without VNNI (AVX2, plain AVX-512) both runtimes multiply u8 activations by s8 weights with an instruction that sums
pairs of products into int16, which full-range weights overflow (`hfsiamese.utils.cpu_features`). Exports made since
store 7-bit weights and say so in their entry (`int8_weights`); one without that record is served as it is, with this
warning on such a CPU, and quietly where VNNI or AMX sums it exactly.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any


def warn_if_int8_saturates(folder: str | Path, entry: dict[str, Any], *, runtime: str, export_again: str) -> None:
    """Warn once if `entry` (an export's `onnx` or `openvino` entry) is int8 without 7-bit weights and this CPU lacks
    VNNI: `runtime` names who saturates it, `export_again` the command that makes it anew."""
    if entry.get("quantization") != "int8" or "int8_weights" in entry:
        return
    from hfsiamese.utils.cpu_features import effective_features

    features = effective_features()
    if not (features.vnni or features.amx):
        warnings.warn(
            f"{folder}: this int8 export has full-range weights, which {runtime} saturates on a CPU without VNNI "
            f"such as this one (embeddings can be several percent off the model): export it again with "
            f"`{export_again}`",
            UserWarning,
            stacklevel=3,
        )


__all__ = ["warn_if_int8_saturates"]
