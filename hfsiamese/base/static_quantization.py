"""
Static int8: post-training quantisation whose activation ranges are fixed from calibration batches of the user's own
texts, by the two maintained quantisers (NNCF for an OpenVINO graph, onnxruntime's `quantize_static` for an ONNX
graph). Unlike dynamic int8 (`hfsiamese.base.onnx_export_steps.quantize_int8`), nothing is measured at run time.
Whether the result is accurate enough is judged afterwards on held-out texts (`hfsiamese.base.int8_accuracy`).
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hfsiamese.base.nncf_process import quantize_in_child
from hfsiamese.base.onnx_export_steps import DropMessage, quantized_graph
from hfsiamese.utils.onnx_runtime import open_session, require_onnxruntime
from hfsiamese.utils.openvino_runtime import require_openvino

logger = logging.getLogger(__name__)

# The operators static int8 quantises in an ONNX graph: the matrix products, as dynamic int8 does; onnxruntime has
# no static kernel for LSTM, and the token embedding lookup stays float (see QUANTIZED_OPERATORS).
STATIC_QUANTIZED_OPERATORS = ("MatMul", "Gemm")


# Operators whose output is a GELU's (exported whole, or decomposed around an Erf or, approximated, a Tanh).
_GELU_OPERATORS = ("Gelu", "FastGelu", "BiasGelu", "Erf", "Tanh")
# How many producers back from a matrix product's input a GELU is looked for, never past another matrix product:
# torch's export writes x * 0.5 * (1 + erf(x / sqrt(2))) with the Erf four producers back.
_GELU_DEPTH = 6


def gelu_fed_products(graph: Any) -> list[str]:
    """
    The names of the matrix products in the ONNX `graph` (a GraphProto) whose input is a GELU's output: static int8
    keeps them float. Their input has outlier channels that one u8 range per tensor cannot hold: in all-MiniLM-L6-v2
    fine-tuned on QQP, static int8 of every MatMul kept a mean cosine of 0.940 to fp32 on held-out texts, and of every
    MatMul but the six feed-forward down-projections 0.991 (the attention products changed nothing: 0.941).
    """
    producer = {output: node for node in graph.node for output in node.output}
    weights = {initializer.name for initializer in graph.initializer}
    found = []
    for node in graph.node:
        if node.op_type not in STATIC_QUANTIZED_OPERATORS or not node.input:
            continue
        frontier, depth, fed_by_gelu = [node.input[0]], 0, False
        while frontier and depth < _GELU_DEPTH and not fed_by_gelu:
            parents = [producer[name] for name in frontier if name in producer and name not in weights]
            parents = [parent for parent in parents if parent.op_type not in STATIC_QUANTIZED_OPERATORS]
            fed_by_gelu = any(parent.op_type in _GELU_OPERATORS for parent in parents)
            frontier, depth = [name for parent in parents for name in parent.input], depth + 1
        if fed_by_gelu:
            found.append(node.name)
    return found


def require_nncf() -> None:
    """
    Raise the one-line error saying how to install NNCF (it comes with the openvino extra) where it is missing. Found,
    not imported: NNCF runs in a child process (`hfsiamese.base.nncf_process`), never in this one.
    """
    from hfsiamese.utils.extras import install_hint

    if importlib.util.find_spec("nncf") is None:
        raise ImportError(f"static int8 for OpenVINO needs NNCF: {install_hint('openvino')}")


def quantize_openvino_static(model: Any, feeds: list[dict[str, np.ndarray]], *, transformer: bool) -> Any:
    """
    The OpenVINO model `model` quantised by NNCF on the calibration batches `feeds` (input name to array), every batch
    used. A transformer is quantised with NNCF's transformer scheme (SmoothQuant; softmax and norms kept float).
    NNCF runs in a child process, which leaves this one as it was (`hfsiamese.base.nncf_process`).
    """
    require_openvino()
    require_nncf()
    return quantize_in_child(model, feeds, transformer=transformer)


class _FeedReader:
    """onnxruntime's `CalibrationDataReader` over recorded batches: `get_next()` until None."""

    def __init__(self, feeds: list[dict[str, np.ndarray]]) -> None:
        self._feeds: Iterator[dict[str, np.ndarray]] = iter(feeds)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)


def quantize_onnx_static(source: str | Path, target: str | Path, feeds: list[dict[str, np.ndarray]]) -> None:
    """
    onnxruntime's static quantisation of the graph at `source` into `target` (QDQ format): weights s8 per output
    channel in the reduced 7-bit range that every CPU runs right (`hfsiamese.base.onnx_export_steps.INT8_WEIGHTS`),
    activations u8 with ranges from the calibration batches `feeds`; the products a GELU feeds stay float
    (`gelu_fed_products`).
    """
    require_onnxruntime()
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    kept_float = gelu_fed_products(onnx.load(str(source), load_external_data=False).graph)

    reader = _FeedReader(feeds)  # a CalibrationDataReader by its `get_next` (onnxruntime checks the method only)
    root = logging.getLogger()
    advice = DropMessage("Please consider pre-processing before quantization")  # the static quantiser's wording
    root.addFilter(advice)
    try:
        quantize_static(
            str(source),
            str(target),
            reader,
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            op_types_to_quantize=list(STATIC_QUANTIZED_OPERATORS),
            nodes_to_exclude=kept_float,
        )
    finally:
        root.removeFilter(advice)


def shipped_onnx_graph(
    fp32_path: Path,
    quantize: str | None,
    static: tuple[Callable[[Any], list[dict[str, np.ndarray]]], Callable[[Any], dict[str, Any]]] | None = None,
) -> tuple[Path, dict[str, Any] | None]:
    """
    The ONNX graph both families' exports write, and what its static int8 check measured. With `static`, two steps
    over onnxruntime sessions: the calibration batches as the fp32 graph is fed them, and the judgement of the int8
    graph on the held-out pairs (a refusal raises); the graph is then the static int8 of the fp32 one. Without it,
    `quantized_graph`'s: the fp32 graph, or its dynamic int8.
    """
    if static is None:
        return quantized_graph(fp32_path, quantize), None
    feeds_of, judged = static
    graph_path = fp32_path.with_name("model.int8.onnx")
    quantize_onnx_static(fp32_path, graph_path, feeds_of(open_session(fp32_path)))
    return graph_path, judged(open_session(graph_path))


__all__ = [
    "shipped_onnx_graph",
    "STATIC_QUANTIZED_OPERATORS",
    "gelu_fed_products",
    "quantize_onnx_static",
    "quantize_openvino_static",
    "require_nncf",
]
