"""
The steps both ONNX exporters share (the bi-encoder's `hfsiamese.bi_encoder.onnx_export`, the cross-encoder's
`hfsiamese.cross_encoder.onnx_export`): the checks before any work, onnxruntime's int8 quantisation, writing the
graph and the source folder's side files, and the `onnx` entry that marks the folder as an export
(`hfsiamese.utils.onnx_runtime.onnx_entry`). What differs between the families (the graph, its probes) stays there.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from hfsiamese.data.question_fingerprints import FINGERPRINT_FILE
from hfsiamese.utils.onnx_runtime import ONNX_FILE_NAME, require_onnxruntime
from hfsiamese.utils.output_dirs import ensure_writable_folder

QUANTIZATIONS = ("int8",)
DEFAULT_OPSET = 18
# fp32 graphs must match PyTorch to float rounding; the target is 1e-5 on real models.
FP32_TOLERANCE = 1e-4
# The operators int8 pays off on. The token embedding lookup (Gather) stays float: quantising it saves
# memory, not time, and cost all-MiniLM-L6-v2 0.03 of cosine to its fp32 embeddings.
QUANTIZED_OPERATORS = ("MatMul", "Gemm", "LSTM")
# How `quantize_int8` stores the weights, recorded in the export's `onnx` entry (`int8_weights`): an export
# without it (made before reduced-range weights) may saturate on a CPU without VNNI, and loading it there warns.
INT8_WEIGHTS = "s8 per-channel, reduced range (7 bits)"
# Files of a model folder that the export does not copy: weights (replaced by the graph), remote code
# (an ONNX folder is loaded by hfsiamese), training state, and the card (rewritten).
_NOT_COPIED_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".onnx", ".py", ".data")
_NOT_COPIED_NAMES = ("README.md", "config.json", "training_args.bin")


def check_export_request(
    output_dir: str | Path, *, quantize: str | None, overwrite: bool, source_dir: str | Path | None = None
) -> Path:
    """Checks before any work: the quantisation asked for, onnxruntime installed, an output folder that may be written
    and is not the model folder `source_dir` itself (overwriting it would replace the model's own config.json)."""
    if quantize not in (None, *QUANTIZATIONS):
        raise ValueError(f"quantize must be one of {QUANTIZATIONS} or None, got {quantize!r}")
    require_onnxruntime()
    output_dir = Path(output_dir)
    if is_same_folder(output_dir, source_dir):
        raise ValueError(
            f"output_dir {output_dir} is the model folder being exported: choose another folder for the export"
        )
    ensure_writable_folder(
        output_dir,
        overwrite=overwrite,
        label="output_dir",
        remedy="pass --overwrite_output_dir, or choose another folder",
    )
    return output_dir


def is_same_folder(folder: Path, other: str | Path | None) -> bool:
    """Whether `other` (None, a Hub id or a folder) is the existing folder `folder`, under any name (a link too)."""
    return other is not None and folder.is_dir() and Path(other).is_dir() and os.path.samefile(folder, other)


def quantize_int8(source: str | Path, target: str | Path) -> None:
    """
    onnxruntime's dynamic quantisation: int8 weights, one scale per output channel (per-tensor scales
    gave all-MiniLM-L6-v2 a mean cosine of 0.967 to its fp32 embeddings, per-channel 0.994, and ran
    faster), activations quantised per batch at run time. The weights use a reduced range (7 bits,
    `INT8_WEIGHTS`) on every CPU: without VNNI onnxruntime's u8 x s8 kernel sums pairs of products in
    int16 and saturates full-range weights (a tiny LSTM's cosine to PyTorch 0.834 on an AVX2 EPYC, with
    reduced range 0.9997); an export is made on one CPU and served on others, so one setting right on
    all of them (`hfsiamese.utils.cpu_features`).
    """
    require_onnxruntime()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # onnxruntime advises its pre-processing (symbolic shape inference) on every call; that fails on
    # `torch.export` graphs ("Incomplete symbolic shape inference"), so the graph is quantised as exported.
    root = logging.getLogger()
    advice = DropMessage("Please consider to run pre-processing before quantization")
    root.addFilter(advice)
    try:
        quantize_dynamic(
            str(source),
            str(target),
            weight_type=QuantType.QInt8,
            per_channel=True,
            reduce_range=True,
            op_types_to_quantize=list(QUANTIZED_OPERATORS),
        )
    finally:
        root.removeFilter(advice)


class DropMessage(logging.Filter):
    """Drops log records whose message starts with `prefix`."""

    def __init__(self, prefix: str) -> None:
        super().__init__()
        self.prefix = prefix

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.prefix)


def quantized_graph(fp32_path: Path, quantize: str | None) -> Path:
    """The graph to ship: the fp32 graph as it is, or (`quantize="int8"`) its int8 quantisation written beside it."""
    if quantize != "int8":
        return fp32_path
    int8_path = fp32_path.with_name("model.int8.onnx")
    quantize_int8(fp32_path, int8_path)
    return int8_path


def write_graph(graph_path: Path, output_dir: Path) -> None:
    """Copy the graph into `output_dir` as `model.onnx`, with the weights stored beside it for models over 2 GB."""
    output_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(graph_path, output_dir / ONNX_FILE_NAME)
    if Path(f"{graph_path}.data").is_file():
        shutil.copyfile(f"{graph_path}.data", output_dir / f"{ONNX_FILE_NAME}.data")


def export_entry(quantize: str | None, opset: int, exporter: str, **measured: Any) -> dict[str, Any]:
    """The `onnx` entry of an export's config.json: the graph file, how it was made, and what was measured of it."""
    entry = {"file": ONNX_FILE_NAME, "quantization": quantize, "opset": opset, "exporter": exporter}
    if quantize == "int8":
        entry["int8_weights"] = INT8_WEIGHTS
    return {**entry, **measured}


def copy_side_files(source: Path, target: Path) -> None:
    """Files beside the weights (e.g. all_results.json, the training questions' fingerprint), not weights, code or the card."""
    for path in source.iterdir():
        if path.name == FINGERPRINT_FILE or (
            path.is_file() and path.name not in _NOT_COPIED_NAMES and not path.name.endswith(_NOT_COPIED_SUFFIXES)
        ):
            shutil.copy2(path, target / path.name)


def write_export_card(output_dir: Path, source_dir: str | Path | None, tag: str, section: str) -> None:
    """
    The source folder's model card (if any; else a minimal one) with an export's `tag` and its `section` (Markdown,
    from its "## ..." heading on) appended, saved as the export folder's README.md. Both exports of a bi-encoder (ONNX,
    OpenVINO) write their card through this.
    """
    from huggingface_hub import ModelCard, ModelCardData

    source_card = Path(source_dir) / "README.md" if source_dir is not None else None
    if source_card is not None and source_card.is_file():
        card = ModelCard.load(source_card)
        data, text = card.data, card.text
    else:
        data, text = (
            ModelCardData(library_name="hfsiamese", tags=["hfsiamese", "sentence-similarity"]),
            f"# {output_dir.name}\n",
        )
    tags = list(data.tags or [])
    data.tags = [*tags, tag] if tag not in tags else tags
    ModelCard(f"---\n{data.to_yaml()}\n---\n{text.rstrip()}\n{section}").save(output_dir / "README.md")


__all__ = [
    "DEFAULT_OPSET",
    "DropMessage",
    "FP32_TOLERANCE",
    "INT8_WEIGHTS",
    "QUANTIZATIONS",
    "QUANTIZED_OPERATORS",
    "check_export_request",
    "copy_side_files",
    "export_entry",
    "quantize_int8",
    "quantized_graph",
    "write_export_card",
    "write_graph",
]
