"""
Export a trained Siamese model to an OpenVINO model folder (fp32, or static int8 calibrated on the user's own texts),
for `OpenVinoSiameseModel`.

The graph is the ONNX export's (`hfsiamese.bi_encoder.onnx_export`: `model.embed`, checked against PyTorch on batches
of other shapes than the traced one), converted by OpenVINO and checked against PyTorch again on the same probes, as
it will be served (an LSTM with static shapes: `hfsiamese.utils.openvino_runtime`). Static int8 is NNCF's
post-training quantisation on the batches `encode` feeds the graph for the calibration texts; the held-out texts
are then embedded in both precisions and the export refused (or warned about) past the bar (`Int8AccuracyCheck`).
Nothing is written to the output folder before every check has passed.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from torch import nn

from hfsiamese.base.calibration_sample import CalibrationSample, check_calibration_request
from hfsiamese.base.int8_accuracy import Int8AccuracyCheck
from hfsiamese.base.onnx_export_steps import (
    DEFAULT_OPSET,
    check_export_request,
    refuse_if_unlike_pytorch,
    write_export_card,
)
from hfsiamese.base.openvino_export_steps import (
    convert_onnx_graph,
    needs_static_shapes,
    openvino_export_entry,
    save_openvino_graph,
)
from hfsiamese.base.static_quantization import quantize_openvino_static
from hfsiamese.bi_encoder.onnx_export import (
    calibration_feeds,
    checked_fp32_graph,
    compare_with_pytorch,
    exported_config,
    judge_static_int8,
    write_side_files,
)
from hfsiamese.bi_encoder.onnx_model import padding_id_of
from hfsiamese.bi_encoder.openvino_model import OpenVinoSiameseConfig
from hfsiamese.models.siamese.adapters import merged_copy
from hfsiamese.utils.onnx_runtime import ONNX_FILE_NAME
from hfsiamese.utils.openvino_runtime import OpenVinoSession, require_openvino


def export_openvino(
    model: nn.Module,
    tokenizer: Any,
    output_dir: str | Path,
    *,
    quantize: str | None = None,
    calibration: CalibrationSample | None = None,
    int8_check: Int8AccuracyCheck | None = None,
    opset: int = DEFAULT_OPSET,
    source_dir: str | Path | None = None,
    overwrite: bool = False,
) -> OpenVinoSiameseConfig:
    """
    Write an OpenVINO model folder to `output_dir`: `openvino_model.xml` + `.bin`, config.json
    (`OpenVinoSiameseConfig`: the model's config, threshold and calibration included, plus the `openvino` entry), the
    tokenizer, the classification head's weights if any and the other files of `source_dir`. `quantize="int8"` needs a
    `calibration` sample (static int8; OpenVINO has no dynamic int8 of its own). Raises when the fp32 graph differs
    from PyTorch by more than `FP32_TOLERANCE`, or when int8 falls past `int8_check`'s bar (unless it says warn).
    """
    require_openvino()
    output_dir = check_export_request(
        output_dir, quantize=quantize, overwrite=overwrite, source_dir=source_dir, opset=opset
    )
    check_calibration_request(quantize, calibration)
    if quantize == "int8" and calibration is None:
        raise ValueError("OpenVINO int8 is static: give a calibration sample of your own pairs (--calibration_file)")
    model = merged_copy(model).eval()  # a LoRA-trained model in memory: its adapters merged, into a copy
    with tempfile.TemporaryDirectory() as scratch:
        onnx_path = Path(scratch) / ONNX_FILE_NAME
        exporter, onnx_fp32 = checked_fp32_graph(model, onnx_path, opset=opset)
        ov_model = convert_onnx_graph(onnx_path)
    static_shapes = needs_static_shapes(ov_model)
    session_options = {"static_shapes": static_shapes, "padding_id": padding_id_of(model.config)}
    fp32_session = OpenVinoSession(ov_model, **session_options)
    fp32 = compare_with_pytorch(model, fp32_session)
    refuse_if_unlike_pytorch(fp32["max_abs_diff"], graph="the OpenVINO conversion of this model", measure="max abs")
    measured: dict[str, Any] = {
        "onnx_exporter": exporter,
        "opset": opset,
        "embedding_rows": model.get_input_embeddings().num_embeddings,
        "fp32_max_abs_diff": max(fp32["max_abs_diff"], onnx_fp32["max_abs_diff"]),
    }
    if calibration is not None:
        feeds = calibration_feeds(model, tokenizer, fp32_session, calibration.calibration_texts())
        transformer = model.config.encoder_type == "transformer"
        ov_model = quantize_openvino_static(ov_model, feeds, transformer=transformer)
        int8_session = OpenVinoSession(ov_model, **session_options)
        measured.update(judge_static_int8(model, tokenizer, int8_session, calibration, int8_check))
        measured["int8_min_cosine"] = compare_with_pytorch(model, int8_session)["min_cosine"]
    entry = openvino_export_entry(quantize, static_shapes=static_shapes, **measured)
    config = exported_config(model.config, OpenVinoSiameseConfig, "OpenVinoSiameseModel", openvino=entry)
    save_openvino_graph(ov_model, output_dir)
    write_side_files(model, tokenizer, config, output_dir, source_dir)
    _write_card(output_dir, source_dir, entry)
    return config


def _write_card(output_dir: Path, source_dir: str | Path | None, entry: dict[str, Any]) -> None:
    """The source's model card (if any) with an "OpenVINO export" section and an `openvino` tag."""
    precision = "static int8 (NNCF)" if entry["quantization"] else "float32"
    check = (
        f"; on {entry['int8_check_texts']} held-out texts the int8 embeddings' mean cosine to PyTorch's is "
        f"{entry['int8_check_mean_cosine']:.4f}"
        if "int8_check_texts" in entry
        else ""
    )
    note = (
        "\n## OpenVINO export\n\n"
        f"This folder holds the model converted to OpenVINO ({entry['file']}, {precision}, OpenVINO "
        f"{entry['openvino_version'].split('-')[0]})"
        + (f" from `{Path(source_dir).name}`" if source_dir is not None else "")
        + f". Its float32 graph matched PyTorch's embeddings within {entry['fp32_max_abs_diff']:.1e} (max abs){check}. "
        "The threshold and calibration are those of the exported model. Load it with hfsiamese and OpenVINO "
        '(`pip install "hfsiamese[openvino] @ git+https://github.com/hfsiamese/hfsiamese"`):\n\n'
        "```python\nfrom hfsiamese import load_model\n\n"
        f'model = load_model("{output_dir.name}")\n'
        'model.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])\n```\n'
    )
    write_export_card(output_dir, source_dir, "openvino", note)


__all__ = ["export_openvino"]
