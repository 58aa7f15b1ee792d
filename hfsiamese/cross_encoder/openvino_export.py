"""
Export a cross-encoder to an OpenVINO model folder (fp32, or static int8 calibrated on the user's own pairs), which
`CrossEncoder.from_pretrained` serves with OpenVINO (`hfsiamese.cross_encoder.openvino_model`).

The graph is the ONNX export's one-logit classifier (`hfsiamese.cross_encoder.onnx_export`, checked against PyTorch),
converted by OpenVINO and checked against PyTorch again on the same probes. Static int8 is NNCF's transformer
quantisation on the batches `score_pairs` feeds the graph for the calibration pairs; the held-out pairs are then
scored in both precisions and the export refused (or warned about) past the bar. Nothing is written to the output
folder before every check has passed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hfsiamese.base.calibration_sample import CalibrationSample, check_calibration_request
from hfsiamese.base.int8_accuracy import Int8AccuracyCheck
from hfsiamese.base.onnx_export_steps import (
    DEFAULT_OPSET,
    check_export_request,
    refuse_if_unlike_pytorch,
)
from hfsiamese.base.openvino_export_steps import (
    convert_onnx_graph,
    needs_static_shapes,
    openvino_export_entry,
    save_openvino_graph,
)
from hfsiamese.base.static_quantization import quantize_openvino_static
from hfsiamese.cross_encoder.onnx_export import (
    check_not_exported,
    checked_fp32_cross_graph,
    compare_logits,
    cross_calibration_feeds,
    input_names,
    judge_cross_static_int8,
    save_cross_encoder_folder,
)
from hfsiamese.utils.onnx_runtime import ONNX_FILE_NAME
from hfsiamese.utils.openvino_runtime import OpenVinoSession, require_openvino


def export_cross_encoder_openvino(
    cross_encoder: Any,
    output_dir: str | Path,
    *,
    quantize: str | None = None,
    calibration: CalibrationSample | None = None,
    int8_check: Int8AccuracyCheck | None = None,
    opset: int = DEFAULT_OPSET,
    source_dir: str | Path | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """
    Write an OpenVINO folder of `cross_encoder` to `output_dir`: `openvino_model.xml` + `.bin`, config.json (the
    model's, with an `openvino` entry), the tokenizer and the other files of `source_dir`. Returns the entry.
    `quantize="int8"` needs a `calibration` sample (static int8). Raises when the fp32 graph differs from PyTorch by
    more than `FP32_TOLERANCE`, or when int8 falls past `int8_check`'s bar (unless it says warn).
    """
    require_openvino()
    check_not_exported(cross_encoder)
    output_dir = check_export_request(
        output_dir, quantize=quantize, overwrite=overwrite, source_dir=source_dir, opset=opset
    )
    check_calibration_request(quantize, calibration)
    if quantize == "int8" and calibration is None:
        raise ValueError("OpenVINO int8 is static: give a calibration sample of your own pairs (--calibration_file)")
    cross_encoder.model.eval()
    with tempfile.TemporaryDirectory() as scratch:
        onnx_path = Path(scratch) / ONNX_FILE_NAME
        _, onnx_difference = checked_fp32_cross_graph(cross_encoder, onnx_path, opset=opset)
        ov_model = convert_onnx_graph(onnx_path)
    static_shapes = needs_static_shapes(ov_model)
    padding_id = int(getattr(cross_encoder.config, "pad_token_id", None) or 0)
    fp32_session = OpenVinoSession(ov_model, static_shapes=static_shapes, padding_id=padding_id)
    difference = compare_logits(cross_encoder, fp32_session, input_names(cross_encoder))
    refuse_if_unlike_pytorch(difference, graph="the OpenVINO conversion of this cross-encoder", measure="max abs logit")
    measured: dict[str, Any] = {"opset": opset, "fp32_max_abs_logit_diff": max(difference, onnx_difference)}
    if calibration is not None:
        feeds = cross_calibration_feeds(cross_encoder, fp32_session, calibration.calibration_pairs)
        ov_model = quantize_openvino_static(ov_model, feeds, transformer=True)
        int8_session = OpenVinoSession(ov_model, static_shapes=static_shapes, padding_id=padding_id)
        measured.update(judge_cross_static_int8(cross_encoder, int8_session, calibration, int8_check))
    entry = openvino_export_entry(quantize, static_shapes=static_shapes, **measured)
    save_openvino_graph(ov_model, output_dir)
    save_cross_encoder_folder(cross_encoder, output_dir, source_dir, "openvino", entry)
    return entry


__all__ = ["export_cross_encoder_openvino"]
