"""
Export a cross-encoder to an ONNX model folder (optionally int8), which `CrossEncoder.from_pretrained` serves with
onnxruntime (`hfsiamese.cross_encoder.onnx_model`).

The graph is the one-logit classifier: the pair's token fields (`input_ids`, `attention_mask` and, where the
tokenizer makes them, `token_type_ids`; dynamic batch and length) in, `logits` out. torch.onnx's TorchScript tracer
captures it (`torch.export` where it cannot), with the attention written out (`traced_attention`): a graph the
runtimes fuse, the MiniLM cross-encoder's dynamic int8 export scoring pairs at 1.77x PyTorch fp32 against 1.18x when
traced by `torch.export` through the fused attention kernel (2 cores, AVX-512 Xeon, 2026-11-30). The graph is checked
against PyTorch on batches of other shapes than the traced one and refused when it differs. The folder keeps the
model's config.json (threshold, calibration, pair order) with an `onnx` entry naming the graph, and the tokenizer.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from hfsiamese.base.calibration_sample import CalibrationSample, RecordingSession, check_calibration_request
from hfsiamese.base.int8_accuracy import Int8AccuracyCheck
from hfsiamese.base.onnx_export_steps import (
    DEFAULT_OPSET,
    EXPORTERS,
    check_export_request,
    copy_side_files,
    export_entry,
    refuse_if_unlike_pytorch,
    trace_onnx_graph,
    write_graph,
)
from hfsiamese.base.static_quantization import shipped_onnx_graph
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.cross_encoder.onnx_model import LOGITS_NAME, OnnxSequenceClassifier
from hfsiamese.utils.onnx_runtime import ONNX_FILE_NAME, onnx_entry, open_session
from hfsiamese.utils.openvino_runtime import openvino_entry

# (batch, length) of the probe batches the exported graph is checked on: other shapes than the traced one.
PROBE_SHAPES = ((1, 5), (6, 40))


class LogitsGraph(nn.Module):
    """What the ONNX graph computes: the one logit of each pair from its token fields."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        extra = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **extra).logits


def _probe_pairs(cross_encoder: Any, batch: int, length: int, seed: int) -> dict[str, torch.Tensor]:
    """A right-padded batch of random pair inputs: token ids, a mask with rows of several lengths, segment ids."""
    generator = torch.Generator().manual_seed(seed)
    rows = cross_encoder.model.config.vocab_size
    ids = torch.randint(5, rows, (batch, length), generator=generator)
    lengths = torch.randint(2, length + 1, (batch,), generator=generator)
    lengths[0] = length
    mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).long()
    types = ((torch.arange(length).unsqueeze(0) >= (lengths // 2).unsqueeze(1)) & mask.bool()).long()
    return {"input_ids": ids * mask, "attention_mask": mask, "token_type_ids": types}


def input_names(cross_encoder: Any) -> tuple[str, ...]:
    """The token fields the cross-encoder's tokenizer makes for a pair, in the graph's input order."""
    made = cross_encoder.tokenizer("a", "b")
    return tuple(name for name in ("input_ids", "attention_mask", "token_type_ids") if name in made)


def export_cross_encoder_graph(
    cross_encoder: Any,
    path: str | Path,
    *,
    opset: int = DEFAULT_OPSET,
    check: Callable[[str, tuple[str, ...]], None] | None = None,
) -> tuple[str, tuple[str, ...]]:
    """
    Write the cross-encoder's one-logit classifier as an fp32 ONNX graph to `path`, traced with its attention written
    out by the first of `EXPORTERS` that captures it (and whose graph passes `check`, given the exporter and the input
    names: see `trace_onnx_graph`); returns that exporter and the input names.
    """
    names = input_names(cross_encoder)
    example = _probe_pairs(cross_encoder, 3, 9, seed=0)
    exporter = trace_onnx_graph(
        LogitsGraph(cross_encoder.model).eval(),
        tuple(example[name] for name in names),
        path,
        input_names=names,
        output_name=LOGITS_NAME,
        opset=opset,
        exporters=EXPORTERS,
        check=None if check is None else lambda exporter: check(exporter, names),
    )
    return exporter, names


def compare_logits(cross_encoder: Any, session: Any, names: tuple[str, ...]) -> float:
    """Max abs difference of the graph's logits to PyTorch's on the probe batches."""
    worst = 0.0
    for seed, (batch, length) in enumerate(PROBE_SHAPES, start=1):
        inputs = _probe_pairs(
            cross_encoder, batch, min(length, cross_encoder.model.config.max_position_embeddings), seed
        )
        with torch.inference_mode():
            expected = cross_encoder.model(**{name: inputs[name] for name in names}).logits.float().numpy()
        (got,) = session.run([LOGITS_NAME], {name: inputs[name].numpy() for name in names})
        worst = max(worst, float(np.abs(got - expected).max()))
    return worst


def export_cross_encoder_onnx(
    cross_encoder: Any,
    output_dir: str | Path,
    *,
    quantize: str | None = None,
    opset: int = DEFAULT_OPSET,
    source_dir: str | Path | None = None,
    overwrite: bool = False,
    calibration: CalibrationSample | None = None,
    int8_check: Int8AccuracyCheck | None = None,
) -> dict[str, Any]:
    """
    Write an ONNX folder of `cross_encoder` to `output_dir`: `model.onnx`, config.json (the model's, with an `onnx`
    entry) and the tokenizer, and the other files of `source_dir` (e.g. all_results.json). Returns the `onnx` entry.
    Raises when the fp32 graph differs from PyTorch by more than `FP32_TOLERANCE`. `quantize="int8"` is dynamic int8,
    or with a `calibration` sample static int8 (onnxruntime's `quantize_static`), refused before anything is written
    when its held-out scores fall past `int8_check`'s bar.
    """
    check_not_exported(cross_encoder)
    output_dir = check_export_request(
        output_dir, quantize=quantize, overwrite=overwrite, source_dir=source_dir, opset=opset
    )
    check_calibration_request(quantize, calibration)
    cross_encoder.model.eval()
    steps = None
    if calibration is not None:
        steps = (
            lambda session: cross_calibration_feeds(cross_encoder, session, calibration.calibration_pairs),
            lambda session: judge_cross_static_int8(cross_encoder, session, calibration, int8_check),
        )
    with tempfile.TemporaryDirectory() as scratch:
        fp32_path = Path(scratch) / ONNX_FILE_NAME
        exporter, difference = checked_fp32_cross_graph(cross_encoder, fp32_path, opset=opset)
        graph_path, static = shipped_onnx_graph(fp32_path, quantize, steps)
        write_graph(graph_path, output_dir)
    entry = export_entry(quantize, opset, exporter, fp32_max_abs_logit_diff=difference)
    entry.update(static or {})
    save_cross_encoder_folder(cross_encoder, output_dir, source_dir, "onnx", entry)
    return entry


def check_not_exported(cross_encoder: Any) -> None:
    """An export is made from the PyTorch model: a cross-encoder already running a graph is refused."""
    for runtime, entry in (
        ("ONNX", onnx_entry(cross_encoder.config)),
        ("OpenVINO", openvino_entry(cross_encoder.config)),
    ):
        if entry:
            raise ValueError(
                f"this cross-encoder is already an {runtime} export: export the PyTorch model it came from"
            )


def checked_fp32_cross_graph(cross_encoder: Any, path: Path, *, opset: int) -> tuple[str, float]:
    """
    The cross-encoder's fp32 ONNX graph written to `path` and compared with PyTorch: a graph that differs is made again
    by the next exporter, and refused when the last one differs too. Returns the exporter and the largest logit
    difference.
    """
    differences: list[float] = []

    def matches_pytorch(exporter: str, names: tuple[str, ...]) -> None:
        difference = compare_logits(cross_encoder, open_session(path), names)
        refuse_if_unlike_pytorch(
            difference, graph=f"the {exporter} export of this cross-encoder", measure="max abs logit"
        )
        differences.append(difference)

    exporter, _ = export_cross_encoder_graph(cross_encoder, path, opset=opset, check=matches_pytorch)
    return exporter, differences[-1]


def served_cross_encoder(cross_encoder: Any, session: Any) -> Any:
    """`cross_encoder` with its graph as served (over `session`, onnxruntime's or OpenVINO's), in memory."""
    return CrossEncoder(OnnxSequenceClassifier(cross_encoder.config, session), cross_encoder.tokenizer)


def cross_calibration_feeds(
    cross_encoder: Any, session: Any, pairs: list[tuple[str, str]]
) -> list[dict[str, np.ndarray]]:
    """The batches `score_pairs` feeds the graph for `pairs` (both orders where the model reads both): calibration."""
    recorder = RecordingSession(session)
    first, second = zip(*pairs, strict=True)
    served_cross_encoder(cross_encoder, recorder).score_pairs(list(first), list(second))
    return recorder.feeds


def judge_cross_static_int8(
    cross_encoder: Any, session: Any, calibration: CalibrationSample, check: Int8AccuracyCheck | None
) -> dict[str, Any]:
    """
    The held-out pairs scored by PyTorch (fp32) and by the int8 graph in `session`; the check's bar applied to the mean
    absolute difference of their scores (a refusal raises). Returns what the export's entry records of it.
    """
    check = check if check is not None else Int8AccuracyCheck()
    first, second = (list(side) for side in zip(*calibration.check_pairs, strict=True))
    with torch.inference_mode():
        expected = cross_encoder.score_pairs(first, second)
    got = served_cross_encoder(cross_encoder, session).score_pairs(first, second)
    difference = (got.float() - expected.float()).abs()
    check.judge_score_diff(float(difference.mean()), len(first))
    return {
        "int8_mode": "static",
        "calibration_pairs": len(calibration.calibration_pairs),
        "int8_check_pairs": len(first),
        "int8_check_mean_score_diff": round(float(difference.mean()), 6),
        "int8_check_max_score_diff": round(float(difference.max()), 6),
        "int8_max_score_diff_bar": check.max_score_diff,
    }


def save_cross_encoder_folder(
    cross_encoder: Any, output_dir: Path, source_dir: str | Path | None, entry_name: str, entry: dict[str, Any]
) -> None:
    """The export folder's other files: `source_dir`'s side files, the tokenizer, and config.json with the entry."""
    if source_dir is not None:
        copy_side_files(Path(source_dir), output_dir)
    cross_encoder.tokenizer.save_pretrained(output_dir)
    config = cross_encoder.config
    setattr(config, entry_name, entry)
    try:
        config.save_pretrained(output_dir)  # after the tokenizer, which may write a config of its own
    finally:
        delattr(config, entry_name)


__all__ = [
    "LogitsGraph",
    "check_not_exported",
    "checked_fp32_cross_graph",
    "compare_logits",
    "cross_calibration_feeds",
    "export_cross_encoder_graph",
    "export_cross_encoder_onnx",
    "input_names",
    "judge_cross_static_int8",
    "save_cross_encoder_folder",
    "served_cross_encoder",
]
