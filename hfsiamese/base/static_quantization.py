"""
Static int8: post-training quantisation whose activation ranges are fixed from calibration batches of the user's own
texts, by the two maintained quantisers (NNCF for an OpenVINO graph, onnxruntime's `quantize_static` for an ONNX
graph). Unlike dynamic int8 (`hfsiamese.base.onnx_export_steps.quantize_int8`), nothing is measured at run time.
Whether the result is accurate enough is judged afterwards on held-out texts (`hfsiamese.base.int8_accuracy`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hfsiamese.base.onnx_export_steps import DropMessage
from hfsiamese.utils.onnx_runtime import require_onnxruntime
from hfsiamese.utils.openvino_runtime import require_openvino

logger = logging.getLogger(__name__)

# The operators static int8 quantises in an ONNX graph: the matrix products, as dynamic int8 does; onnxruntime has
# no static kernel for LSTM, and the token embedding lookup stays float (see QUANTIZED_OPERATORS).
STATIC_QUANTIZED_OPERATORS = ("MatMul", "Gemm")


def require_nncf() -> Any:
    """The nncf module, or the one-line error saying how to install it (it comes with the openvino extra)."""
    from hfsiamese.utils.extras import install_hint

    try:
        import nncf
    except ImportError as err:
        raise ImportError(f"static int8 for OpenVINO needs NNCF: {install_hint('openvino')}") from err
    return nncf


def quantize_openvino_static(model: Any, feeds: list[dict[str, np.ndarray]], *, transformer: bool) -> Any:
    """
    The OpenVINO model `model` quantised by NNCF on the calibration batches `feeds` (input name to array), every batch
    used. A transformer is quantised with NNCF's transformer scheme (SmoothQuant; softmax and norms kept float).
    """
    require_openvino()
    nncf = require_nncf()
    options: dict[str, Any] = {"subset_size": max(1, len(feeds))}
    if transformer:
        options["model_type"] = nncf.ModelType.TRANSFORMER
    with _nncf_output_on_stderr():
        return nncf.quantize(model, nncf.Dataset(feeds), **options)


@contextlib.contextmanager
def _nncf_output_on_stderr() -> Iterator[None]:
    """
    NNCF writes its log lines (a handler it binds to stdout at import) and its progress bars (rich, on `sys.stdout`) to
    standard output, where `hfsiamese export` prints its one JSON object. For the call only: the log records go to
    this module's logger instead, the bars to standard error; both are restored after.
    """
    nncf_logger = logging.getLogger("nncf")
    forward = _ForwardRecords(logger)
    nncf_logger.addFilter(forward)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        nncf_logger.removeFilter(forward)


class _ForwardRecords(logging.Filter):
    """Hands each record to `target` (the library's logging, on standard error) instead of the logger it came to."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__()
        self.target = target

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            self.target.log(record.levelno, "NNCF: %s", record.getMessage())
        return False


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
    activations u8 with ranges from the calibration batches `feeds`.
    """
    require_onnxruntime()
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

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
        )
    finally:
        root.removeFilter(advice)


__all__ = ["STATIC_QUANTIZED_OPERATORS", "quantize_onnx_static", "quantize_openvino_static", "require_nncf"]
