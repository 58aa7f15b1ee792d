"""
The steps both ONNX exporters share (the bi-encoder's `hfsiamese.bi_encoder.onnx_export`, the cross-encoder's
`hfsiamese.cross_encoder.onnx_export`): the checks before any work, tracing the graph (either of torch.onnx's two
exporters, the other as the fallback, a transformer's attention written out), onnxruntime's int8 quantisation,
writing the graph and the source folder's side files, and the `onnx` entry that marks the folder as an export
(`hfsiamese.utils.onnx_runtime.onnx_entry`). What differs between the families (the graph, its probes, which exporter
goes first) stays there.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from hfsiamese.data.question_fingerprints import FINGERPRINT_FILE
from hfsiamese.utils.onnx_runtime import ONNX_FILE_NAME, require_onnxruntime
from hfsiamese.utils.output_dirs import ensure_writable_folder, is_same_folder

logger = logging.getLogger(__name__)

QUANTIZATIONS = ("int8",)
DEFAULT_OPSET = 18
# The lowest opset asked for: int8 weights are quantised per channel (`quantize_dynamic(per_channel=True)`), which
# needs DequantizeLinear's `axis` (opset 13). Below it PyTorch's exporters fail each in its own way (one printed
# the whole traced graph).
MIN_OPSET = 13
# fp32 graphs must match PyTorch to float rounding; the target is 1e-5 on real models.
FP32_TOLERANCE = 1e-4
# The operators int8 pays off on. The token embedding lookup (Gather) stays float: quantising it saves
# memory, not time, and cost all-MiniLM-L6-v2 0.03 of cosine to its fp32 embeddings.
QUANTIZED_OPERATORS = ("MatMul", "Gemm", "LSTM")
# The attention a transformer's graph is traced with (`traced_attention`). Traced through PyTorch's fused
# `scaled_dot_product_attention` ("sdpa", how transformers runs it), the graph holds that kernel's decomposition, with
# its NaN guards and extra transposes; traced as the plain softmax(QK^T/sqrt(d) + mask)V ("eager"), the same arithmetic
# is a pattern both runtimes fuse: the MiniLM recipe's dynamic int8 ONNX export encoded 1.12-1.13x faster, OpenVINO's
# static int8 1.02-1.04x (2 cores, AVX-512 Xeon, 2026-11-30). The graph is still checked against the model as it runs.
TRACED_ATTENTION = "eager"
# How `quantize_int8` stores the weights, recorded in the export's `onnx` entry (`int8_weights`): an export
# without it (made before reduced-range weights) may saturate on a CPU without VNNI, and loading it there warns.
INT8_WEIGHTS = "s8 per-channel, reduced range (7 bits)"
# Files of a model folder that the export does not copy: weights (replaced by the graph), remote code
# (an ONNX folder is loaded by hfsiamese), training state, and the card (rewritten).
_NOT_COPIED_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".onnx", ".py", ".data")
_NOT_COPIED_NAMES = ("README.md", "config.json", "training_args.bin")


def check_opset(opset: int) -> int:
    """`opset` if the export can be made at it: an integer of at least `MIN_OPSET`."""
    if isinstance(opset, bool) or not isinstance(opset, int) or opset < MIN_OPSET:
        raise ValueError(f"opset must be an integer of at least {MIN_OPSET} (default {DEFAULT_OPSET}), got {opset!r}")
    return opset


def check_export_request(
    output_dir: str | Path,
    *,
    quantize: str | None,
    overwrite: bool,
    source_dir: str | Path | None = None,
    opset: int = DEFAULT_OPSET,
) -> Path:
    """Checks before any work: the quantisation and opset asked for, onnxruntime installed, an output folder that may
    be written and is not the model folder `source_dir` itself (overwriting it would replace the model's own
    config.json)."""
    if quantize not in (None, *QUANTIZATIONS):
        raise ValueError(f"quantize must be one of {QUANTIZATIONS} or None, got {quantize!r}")
    check_opset(opset)
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


@contextlib.contextmanager
def traced_attention(model: Any) -> Iterator[None]:
    """
    Within the block, `model` (a transformers model, or one holding transformers models) runs its attention as
    `TRACED_ATTENTION`, for the exporter to trace; afterwards as before. A model without attention, or one whose
    attention cannot be switched, is traced as it is (the comparison with PyTorch after the export still holds it).
    """
    switch = getattr(model, "set_attn_implementation", None)
    before = getattr(getattr(model, "config", None), "_attn_implementation", None)
    if switch is None or before in (None, TRACED_ATTENTION):
        yield
        return
    try:
        _switch_attention(switch, TRACED_ATTENTION)
    except (ValueError, ImportError) as error:  # transformers refuses an implementation a model does not support
        logger.info("tracing the model's own attention (%s): %s", before, error)
        yield
        return
    try:
        yield
    finally:
        _switch_attention(switch, before)


# What transformers warns when a model's attention cannot be switched (MPNet: it keeps its own). The graph is then
# traced with that attention and checked as any other, which is nothing for the user to act on.
CANNOT_SWITCH_ATTENTION = "does not support setting its attention implementation dynamically"


def _switch_attention(switch: Callable[[str], None], implementation: str) -> None:
    """`switch(implementation)`, without transformers' warning for a model that keeps its own attention."""
    source = logging.getLogger("transformers.modeling_utils")
    quiet = DropMessage(CANNOT_SWITCH_ATTENTION, anywhere=True)
    source.addFilter(quiet)
    try:
        switch(implementation)
    finally:
        source.removeFilter(quiet)


# The two exporters `trace_onnx_graph` knows, in the order a transformer is traced with (TorchScript's graph is the
# one the runtimes fuse: see `hfsiamese.bi_encoder.onnx_export.EXPORTER_ORDER`): torch.onnx's TorchScript tracer,
# then its `torch.export` based exporter.
EXPORTERS = ("torchscript", "dynamo")
# PyTorch's C++ TorchScript exporter warns that an LSTM's packing ops "may result in wrong shape inference" on every
# export; the graph is checked against PyTorch on other shapes right after, so the line would only contradict the
# verified figure printed next.
SHAPE_INFERENCE_ADVICE = "may result in wrong shape inference"


def refuse_if_unlike_pytorch(difference: float, *, graph: str, measure: str) -> None:
    """
    Refuse (ValueError, before anything is written) a graph whose outputs differ from PyTorch's by more than
    `FP32_TOLERANCE`: `graph` names it ("the dynamo export of this model"), `measure` what `difference` is ("max abs").
    One sentence for every export and conversion, so a user meets the same refusal whichever path made the graph.
    """
    if difference > FP32_TOLERANCE:
        raise ValueError(
            f"{graph} differs from PyTorch by {difference:.2e} ({measure}, tolerance {FP32_TOLERANCE}) on batches of "
            "other shapes than the traced one; not writing it"
        )


def trace_onnx_graph(
    graph: nn.Module,
    example: tuple[torch.Tensor, ...],
    path: str | Path,
    *,
    input_names: Sequence[str],
    output_name: str,
    opset: int,
    exporters: Sequence[str] = EXPORTERS,
    attention_of: Any | None = None,
    check: Callable[[str], None] | None = None,
) -> str:
    """
    Write `graph` (a module whose inputs are `input_names`, each dynamic in batch and length) traced on `example` as an
    fp32 ONNX graph to `path`, by the first of `exporters` that captures it and whose graph passes `check` (called with
    the exporter's name once the graph is written; an error from it, like an exporter's failure, hands over to the
    next exporter, and the last one's error is raised); returns that exporter's name. The transformers model in
    it (`attention_of`, default `graph.model`) is traced with its attention written out (`traced_attention`). Weights
    over protobuf's 2 GB limit go beside the graph.
    """
    unknown = [name for name in exporters if name not in EXPORTERS]
    if unknown or not exporters:
        raise ValueError(f"exporters must be some of {EXPORTERS}, got {list(exporters)}")
    common = {
        "input_names": list(input_names),
        "output_names": [output_name],
        "opset_version": opset,
        "external_data": sum(p.numel() * p.element_size() for p in graph.parameters()) > 1.9 * 2**30,
    }
    attention = attention_of if attention_of is not None else getattr(graph, "model", graph)
    for position, exporter in enumerate(exporters):
        try:
            with traced_attention(attention), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _EXPORT[exporter](graph, example, path, common)
            if check is not None:
                check(exporter)
            return exporter
        except Exception as error:  # exporters and checks raise many types; the next exporter is the fallback
            if position == len(exporters) - 1:
                raise
            reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            logger.info("the %s exporter's graph was not used (%s); trying the next", exporter, reason)
    raise AssertionError("unreachable: the last exporter returns or raises")


# torch.onnx's dynamo exporter warns, once per torchvision operator it registers, that torchvision is not installed:
# four lines on every export of a model that uses no torchvision operator (none of ours does).
TORCHVISION_NOTICE = "torchvision is not installed"
REGISTRATION_LOGGER = "torch.onnx._internal.exporter._registration"


def _export_dynamo(graph: nn.Module, example: tuple, path: str | Path, common: dict[str, Any]) -> None:
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length")
    shapes = {name: {0: batch, 1: length} for name in common["input_names"]}
    registration, notice = logging.getLogger(REGISTRATION_LOGGER), DropMessage(TORCHVISION_NOTICE)
    registration.addFilter(notice)  # for this export only: the caller's logging is left as it was
    try:
        torch.onnx.export(graph, example, str(path), dynamo=True, dynamic_shapes=shapes, verbose=False, **common)
    finally:
        registration.removeFilter(notice)


def _export_torchscript(graph: nn.Module, example: tuple, path: str | Path, common: dict[str, Any]) -> None:
    axes = {name: {0: "batch", 1: "length"} for name in common["input_names"]}
    axes[common["output_names"][0]] = {0: "batch"}
    with _without_cpp_lines(SHAPE_INFERENCE_ADVICE):
        torch.onnx.export(graph, example, str(path), dynamo=False, dynamic_axes=axes, **common)


_EXPORT = {"dynamo": _export_dynamo, "torchscript": _export_torchscript}


@contextlib.contextmanager
def _without_cpp_lines(fragment: str) -> Iterator[None]:
    """
    Hold back the lines C++ code writes to standard error that contain `fragment`; pass the others on.
    Hand-written: the messages come from C++ (c10 logging, set up once by TORCH_CPP_LOG_LEVEL before torch
    is imported), below Python's `warnings` and `logging`, so only the file descriptor can be filtered.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            kept = [
                line for line in captured.read().decode("utf-8", "replace").splitlines(True) if fragment not in line
            ]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


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
    """Drops log records whose message starts with `prefix` (or, `anywhere=True`, holds it)."""

    def __init__(self, prefix: str, *, anywhere: bool = False) -> None:
        super().__init__()
        self.prefix = prefix
        self.anywhere = anywhere

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return self.prefix not in message if self.anywhere else not message.startswith(self.prefix)


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
    "EXPORTERS",
    "FP32_TOLERANCE",
    "INT8_WEIGHTS",
    "MIN_OPSET",
    "QUANTIZATIONS",
    "QUANTIZED_OPERATORS",
    "TRACED_ATTENTION",
    "check_export_request",
    "check_opset",
    "copy_side_files",
    "export_entry",
    "quantize_int8",
    "quantized_graph",
    "trace_onnx_graph",
    "traced_attention",
    "write_export_card",
    "write_graph",
]
