"""
The steps both families' OpenVINO exports share: the fp32 ONNX graph (made and checked against PyTorch by the
family's ONNX exporter) converted by OpenVINO's `convert_model`, whether it must be served with static shapes, and
the IR written with its weights in float32 (`save_model` halves them to fp16 unless told not to).

Converting the checked ONNX graph rather than the PyTorch module reuses the one capture that works for every encoder:
OpenVINO's PyTorch frontend traces an LSTM over packed sequences no better than `torch.export` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hfsiamese.utils.openvino_runtime import OPENVINO_FILE_NAME, holds_operator, require_openvino

# Operators whose per-row sequence lengths OpenVINO 2026.4's CPU plugin gets wrong under dynamic shapes (see
# `hfsiamese.utils.openvino_runtime.OpenVinoSession`): a graph holding one is served with static shapes.
STATIC_SHAPE_OPERATORS = ("LSTMSequence", "LSTMCell", "RNNSequence", "GRUSequence")
# How a static int8 export's weights are stored (NNCF's overflow fix, `hfsiamese.base.nncf_process`), recorded in its
# `openvino` entry (`int8_weights`): an export without it (made before) may saturate on a CPU without VNNI, and
# loading it there warns.
OPENVINO_INT8_WEIGHTS = "s8 per-channel, 7 bits (NNCF overflow fix)"


def convert_onnx_graph(onnx_path: str | Path) -> Any:
    """The OpenVINO model of the ONNX graph at `onnx_path` (inputs, outputs and dynamic axes as exported)."""
    openvino = require_openvino()
    return openvino.convert_model(str(onnx_path))


def needs_static_shapes(model: Any) -> bool:
    """Does the OpenVINO `model` hold a recurrent operator that must run with static shapes?"""
    return holds_operator(model, STATIC_SHAPE_OPERATORS)


def save_openvino_graph(model: Any, output_dir: Path) -> None:
    """Write `model` into `output_dir` as `openvino_model.xml` + `.bin`, weights kept as they are (fp32 or int8)."""
    openvino = require_openvino()
    output_dir.mkdir(parents=True, exist_ok=True)
    openvino.save_model(model, str(output_dir / OPENVINO_FILE_NAME), compress_to_fp16=False)


def openvino_export_entry(quantize: str | None, *, static_shapes: bool, **measured: Any) -> dict[str, Any]:
    """The `openvino` entry of an export's config.json: the IR file, how it was made, and what was measured of it."""
    openvino = require_openvino()
    entry: dict[str, Any] = {
        "file": OPENVINO_FILE_NAME,
        "quantization": quantize,
        "converted_from": "onnx",
        "openvino_version": openvino.__version__,
        "static_shapes": static_shapes,
    }
    if quantize == "int8":
        entry["int8_mode"] = "static"
        entry["int8_weights"] = OPENVINO_INT8_WEIGHTS
    return {**entry, **measured}


__all__ = [
    "OPENVINO_INT8_WEIGHTS",
    "STATIC_SHAPE_OPERATORS",
    "convert_onnx_graph",
    "needs_static_shapes",
    "openvino_export_entry",
    "save_openvino_graph",
]
