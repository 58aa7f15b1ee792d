"""
Export a trained Siamese model to an ONNX model folder (optionally int8), for `OnnxSiameseModel`.

The graph is the model's `embed`: token ids and attention mask (dynamic batch and length) in, the
L2-normalised embedding out, whatever the encoder (LSTM, static, transformer). torch.onnx does the
export, with one of its two exporters and the other as the fallback (`EXPORTER_ORDER`): a transformer
by its TorchScript tracer, with the attention written out (a graph whose GELU, layer norms and
attention onnxruntime fuses: measured faster, see `EXPORTER_ORDER`); the others first by the
`torch.export`-based exporter, and where it cannot capture the encoder (an LSTM over packed sequences
has data-dependent shapes) by the TorchScript one, which maps packed sequences onto ONNX's LSTM with
per-row lengths. Either way the graph is checked against PyTorch on batches of other shapes than
the one it was traced with (a tracer can silently freeze a shape), and refused if it differs.
onnxruntime's dynamic quantisation makes the int8 graph (weights int8, activations quantised on
the fly: no calibration data needed).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn
from transformers import PretrainedConfig

from hfsiamese.base.calibration_sample import (
    DEFAULT_CALIBRATION_SIZE,
    DEFAULT_CHECK_SIZE,
    CalibrationSample,
    RecordingSession,
    check_calibration_request,
    check_sample_sizes,
    read_calibration_sample,
)
from hfsiamese.base.int8_accuracy import DEFAULT_MAX_SCORE_DIFF, DEFAULT_MIN_COSINE, ON_FAILURE, Int8AccuracyCheck
from hfsiamese.base.onnx_export_steps import (
    DEFAULT_OPSET,
    EXPORTERS,
    QUANTIZATIONS,
    check_export_request,
    check_opset,
    copy_side_files,
    export_entry,
    quantize_int8,
    refuse_if_unlike_pytorch,
    trace_onnx_graph,
    write_export_card,
    write_graph,
)
from hfsiamese.base.static_quantization import shipped_onnx_graph
from hfsiamese.bi_encoder.onnx_model import (
    CLASSIFIER_FILE_NAME,
    INPUT_NAMES,
    OUTPUT_NAME,
    OnnxSiameseConfig,
    OnnxSiameseModel,
)
from hfsiamese.models.siamese.adapters import merged_copy
from hfsiamese.utils.onnx_runtime import ONNX_FILE_NAME, open_session
from hfsiamese.utils.output_dirs import give_umask_mode

ConfigT = TypeVar("ConfigT", bound=PretrainedConfig)

EXPORT_FORMATS = ("onnx", "openvino")
# (batch, length) of the probe batches the exported graph is checked on: other shapes than the traced one.
PROBE_SHAPES = ((1, 3), (7, 40))


@dataclass
class ExportArguments:
    """Flags of `hfsiamese export`."""

    model_name_or_path: str = field(metadata={"help": "Folder of a trained Siamese model (hfsiamese train output)."})
    output_dir: str = field(
        metadata={"help": "Folder to write the exported model to (a model folder, like the input)."}
    )
    format: str = field(
        default="onnx",
        metadata={"help": "onnx (onnxruntime) or openvino (OpenVINO's CPU runtime).", "choices": EXPORT_FORMATS},
    )
    quantize: str | None = field(
        default=None,
        metadata={
            "help": "int8: dynamic int8 weights (ONNX) or, with --calibration_file, static int8 (ONNX: onnxruntime; "
            "OpenVINO, where int8 is always static: NNCF).",
            "choices": QUANTIZATIONS,
        },
    )
    calibration_file: str | None = field(
        default=None,
        metadata={
            "help": "Pair file of your own questions (any format hfsiamese reads) for static int8: a seeded sample "
            "calibrates the int8 ranges, a disjoint one checks the int8 graph against PyTorch."
        },
    )
    calibration_size: int = field(
        default=DEFAULT_CALIBRATION_SIZE, metadata={"help": "Pairs of --calibration_file to calibrate on."}
    )
    check_size: int = field(
        default=DEFAULT_CHECK_SIZE, metadata={"help": "Held-out pairs of --calibration_file to check int8 on."}
    )
    int8_min_cosine: float = field(
        default=DEFAULT_MIN_COSINE,
        metadata={"help": "Bi-encoder bar: mean cosine of the int8 embeddings to PyTorch's on the held-out texts."},
    )
    int8_max_score_diff: float = field(
        default=DEFAULT_MAX_SCORE_DIFF,
        metadata={"help": "Cross-encoder bar: mean |P(duplicate) difference| to PyTorch on the held-out pairs."},
    )
    int8_on_failure: str = field(
        default="refuse",
        metadata={
            "help": "When static int8 falls past its bar: refuse (write nothing) or warn.",
            "choices": ON_FAILURE,
        },
    )
    opset: int = field(default=DEFAULT_OPSET, metadata={"help": "ONNX opset version, 13 or above."})
    overwrite_output_dir: bool = field(default=False, metadata={"help": "Write into a non-empty --output_dir."})

    def __post_init__(self) -> None:
        if self.format not in EXPORT_FORMATS:
            raise ValueError(f"--format must be one of {EXPORT_FORMATS}, got {self.format!r}")
        if self.calibration_file is not None and self.quantize != "int8":
            raise ValueError("--calibration_file is for static int8: pass --quantize int8 with it")
        if self.format == "openvino" and self.quantize == "int8" and self.calibration_file is None:
            raise ValueError(
                "OpenVINO int8 is static: give --calibration_file (pairs of your own questions) to calibrate it on"
            )
        self.int8_check()  # the bars and the failure mode checked before any work
        check_opset(self.opset)
        check_sample_sizes(self.calibration_size, self.check_size)

    def int8_check(self) -> Int8AccuracyCheck:
        """The bars static int8 is held to, and what a failure does."""
        return Int8AccuracyCheck(
            min_cosine=self.int8_min_cosine, max_score_diff=self.int8_max_score_diff, on_failure=self.int8_on_failure
        )

    def calibration_sample(self) -> CalibrationSample | None:
        """The calibration and held-out pairs of --calibration_file (None without it)."""
        if self.calibration_file is None:
            return None
        return read_calibration_sample(
            self.calibration_file, calibration_size=self.calibration_size, check_size=self.check_size
        )


class EmbeddingGraph(nn.Module):
    """What the ONNX graph computes: one side's L2-normalised embedding from token ids and attention mask."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model.embed(input_ids, attention_mask)


def _right_padded_batch(model: Any, batch: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random token ids of ragged lengths (one row full, one of a single token), right-padded with the model's pad id."""
    generator = torch.Generator().manual_seed(seed)
    rows, pad = model.get_input_embeddings().num_embeddings, model.padding_id()
    ids = torch.randint(0, rows, (batch, length), generator=generator)
    ids[ids == pad] = (pad + 1) % rows
    lengths = torch.randint(1, length + 1, (batch,), generator=generator)
    lengths[0] = length
    if batch > 1:
        lengths[-1] = 1
    mask = (torch.arange(length).unsqueeze(0) < lengths.unsqueeze(1)).long()
    return ids.masked_fill(mask == 0, pad), mask


def _max_length(model: Any) -> int:
    positions = (model.config.encoder_config or {}).get("max_position_embeddings")
    return int(positions) if model.config.encoder_type == "transformer" and positions else 512


# The exporter tried first for each encoder, the other being the fallback (`trace_onnx_graph`). A transformer traced
# by TorchScript gives a graph whose GELU and layer norms onnxruntime fuses (`torch.export`'s spelling of them it does
# not): the MiniLM recipe's dynamic int8 export encoded 1.30x faster (OpenVINO's static int8 1.02x; 2 cores,
# AVX-512 Xeon, 2026-11-30). `torch.export` stays first for the others (an LSTM over packed sequences falls back).
EXPORTER_ORDER = {"transformer": EXPORTERS}
DEFAULT_EXPORTER_ORDER = ("dynamo", "torchscript")


def export_graph(
    model: nn.Module, path: str | Path, *, opset: int = DEFAULT_OPSET, check: Callable[[str], None] | None = None
) -> str:
    """
    Write `model.embed` as an fp32 ONNX graph to `path`; returns the exporter used ("dynamo" or
    "torchscript", tried in `EXPORTER_ORDER`; with `check`, the first whose graph it passes: see
    `trace_onnx_graph`). Inputs `input_ids`, `attention_mask` (int64, dynamic batch and length), output
    `sentence_embedding`. A transformer is traced with its attention written out (`traced_attention`).
    """
    return trace_onnx_graph(
        EmbeddingGraph(model).eval(),
        _right_padded_batch(model, 3, min(9, _max_length(model)), seed=0),
        path,
        input_names=INPUT_NAMES,
        output_name=OUTPUT_NAME,
        opset=opset,
        exporters=EXPORTER_ORDER.get(model.config.encoder_type, DEFAULT_EXPORTER_ORDER),
        check=check,
    )


def compare_with_pytorch(model: nn.Module, session: Any) -> dict[str, float]:
    """Max abs difference and min cosine of the graph's embeddings vs `model.embed` on the probe batches."""
    max_abs, min_cosine = 0.0, 1.0
    for seed, (batch, length) in enumerate(PROBE_SHAPES, start=1):
        ids, mask = _right_padded_batch(model, batch, min(length, _max_length(model)), seed=seed)
        with torch.inference_mode():
            expected = model.embed(ids, mask).float().numpy()
        (got,) = session.run([OUTPUT_NAME], {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})
        max_abs = max(max_abs, float(np.abs(got - expected).max()))
        cosine = (got * expected).sum(-1) / (np.linalg.norm(got, axis=-1) * np.linalg.norm(expected, axis=-1))
        min_cosine = min(min_cosine, float(cosine.min()))
    return {"max_abs_diff": max_abs, "min_cosine": min_cosine}


def export_onnx(
    model: nn.Module,
    tokenizer: Any,
    output_dir: str | Path,
    *,
    quantize: str | None = None,
    opset: int = DEFAULT_OPSET,
    source_dir: str | Path | None = None,
    overwrite: bool = False,
    calibration: CalibrationSample | None = None,
    int8_check: Int8AccuracyCheck | None = None,
) -> OnnxSiameseConfig:
    """
    Write an ONNX model folder to `output_dir`: `model.onnx`, `config.json` (`OnnxSiameseConfig`: the
    model's config, threshold and calibration included, plus how the graph was made), the tokenizer,
    the classification head's weights if any, the other files of `source_dir` (if given) and a model
    card noting the export. Raises if the fp32 graph differs from PyTorch by more than `FP32_TOLERANCE`.

    `quantize="int8"` alone is dynamic int8; with a `calibration` sample of the user's pairs it is static int8
    (onnxruntime's `quantize_static` on the graph's inputs for the calibration texts), checked on the held-out texts
    against `int8_check`'s bar (default `Int8AccuracyCheck()`) before anything is written.
    """
    output_dir = check_export_request(
        output_dir, quantize=quantize, overwrite=overwrite, source_dir=source_dir, opset=opset
    )
    check_calibration_request(quantize, calibration)
    model = merged_copy(model).eval()  # a LoRA-trained model in memory: its adapters merged, into a copy
    with tempfile.TemporaryDirectory() as scratch:
        fp32_path = Path(scratch) / ONNX_FILE_NAME
        exporter, fp32 = checked_fp32_graph(model, fp32_path, opset=opset)
        steps = None
        if calibration is not None:
            texts = calibration.calibration_texts()
            steps = (
                lambda session: calibration_feeds(model, tokenizer, session, texts),
                lambda session: judge_static_int8(model, tokenizer, session, calibration, int8_check),
            )
        graph_path, static = shipped_onnx_graph(fp32_path, quantize, steps)
        quantized = compare_with_pytorch(model, open_session(graph_path)) if quantize is not None else None
        write_graph(graph_path, output_dir)
    onnx_entry = export_entry(
        quantize,
        opset,
        exporter,
        embedding_rows=model.get_input_embeddings().num_embeddings,
        fp32_max_abs_diff=fp32["max_abs_diff"],
    )
    if quantized is not None:
        onnx_entry["int8_min_cosine"] = quantized["min_cosine"]
    if static is not None:
        onnx_entry.update(static)
    config = exported_config(model.config, OnnxSiameseConfig, "OnnxSiameseModel", onnx=onnx_entry)
    write_side_files(model, tokenizer, config, output_dir, source_dir)
    _write_card(output_dir, source_dir, onnx_entry)
    return config


def checked_fp32_graph(model: nn.Module, path: Path, *, opset: int) -> tuple[str, dict[str, float]]:
    """
    `model.embed` exported as an fp32 ONNX graph to `path` and compared with PyTorch: a graph that differs is made
    again by the other exporter, and refused when that one differs too. Returns the exporter and the comparison.
    """
    fp32: dict[str, float] = {}

    def matches_pytorch(exporter: str) -> None:
        measured = compare_with_pytorch(model, open_session(path))
        refuse_if_unlike_pytorch(
            measured["max_abs_diff"], graph=f"the {exporter} export of this model", measure="max abs"
        )
        fp32.update(measured)

    exporter = export_graph(model, path, opset=opset, check=matches_pytorch)
    return exporter, fp32


def served_model(model: Any, session: Any) -> OnnxSiameseModel:
    """`model`'s graph as served (`OnnxSiameseModel` over `session`, an onnxruntime or OpenVINO session), in memory."""
    rows = model.get_input_embeddings().num_embeddings
    config = exported_config(model.config, OnnxSiameseConfig, "OnnxSiameseModel", onnx={"embedding_rows": rows})
    return OnnxSiameseModel(config, session)


def calibration_feeds(model: Any, tokenizer: Any, session: Any, texts: list[str]) -> list[dict[str, np.ndarray]]:
    """The batches `encode` feeds the graph for `texts` (padding, truncation, order as served): what static int8 calibrates on."""
    recorder = RecordingSession(session)
    served_model(model, recorder).encode(texts, tokenizer)
    return recorder.feeds


def judge_static_int8(
    model: Any, tokenizer: Any, session: Any, calibration: CalibrationSample, check: Int8AccuracyCheck | None
) -> dict[str, Any]:
    """
    The held-out texts embedded by PyTorch (fp32) and by the int8 graph in `session`; the check's bar applied to their
    mean cosine (a refusal raises). Returns what the export's entry records of it.
    """
    check = check if check is not None else Int8AccuracyCheck()
    texts = calibration.check_texts()
    with torch.inference_mode():
        expected = model.encode(texts, tokenizer)
    got = served_model(model, session).encode(texts, tokenizer)
    cosine = torch.nn.functional.cosine_similarity(got.float(), expected.float(), dim=-1)
    check.judge_cosine(float(cosine.mean()), len(texts))
    return {
        "int8_mode": "static",
        "calibration_pairs": len(calibration.calibration_pairs),
        "int8_check_texts": len(texts),
        "int8_check_mean_cosine": round(float(cosine.mean()), 6),
        "int8_check_min_cosine": round(float(cosine.min()), 6),
        "int8_min_cosine_bar": check.min_cosine,
    }


def write_side_files(model: Any, tokenizer: Any, config: Any, output_dir: Path, source_dir: str | Path | None) -> None:
    """Everything of an export folder but the graph and the card: side files, tokenizer, config, the head's weights."""
    if source_dir is not None:
        copy_side_files(Path(source_dir), output_dir)
    tokenizer.save_pretrained(output_dir)
    config.save_pretrained(output_dir)  # after the tokenizer, which may write a config of its own
    if model.classifier is not None:
        from safetensors.torch import save_file

        save_file(
            {k: v.contiguous() for k, v in model.classifier.state_dict().items()}, output_dir / CLASSIFIER_FILE_NAME
        )
        give_umask_mode(output_dir / CLASSIFIER_FILE_NAME)


def exported_config(config: Any, config_class: type[ConfigT], architecture: str, **entry: dict[str, Any]) -> ConfigT:
    """
    The config an export's folder carries: the model's values (threshold and calibration included) without what names
    the PyTorch model and its remote code, plus the runtime's entry (`onnx=...` or `openvino=...`).
    """
    values = config.to_dict()
    for key in ("model_type", "auto_map", "architectures", "custom_pipelines", "transformers_version"):
        values.pop(key, None)
    exported = config_class(**entry, **values)
    exported.architectures = [architecture]
    return exported


def _write_card(output_dir: Path, source_dir: str | Path | None, onnx_entry: dict[str, Any]) -> None:
    """The source's model card (if any) with an "ONNX export" section and an `onnx` tag."""
    precision = (
        f"int8 (onnxruntime {onnx_entry.get('int8_mode', 'dynamic')} quantisation)"
        if onnx_entry["quantization"]
        else "float32"
    )
    note = (
        "\n## ONNX export\n\n"
        f"This folder holds the model exported to ONNX ({ONNX_FILE_NAME}, {precision}, opset {onnx_entry['opset']}, "
        f"torch.onnx {onnx_entry['exporter']} exporter)"
        + (f" from `{Path(source_dir).name}`" if source_dir is not None else "")
        + ". Its float32 graph matched PyTorch's embeddings within "
        f"{onnx_entry['fp32_max_abs_diff']:.1e} (max abs)"
        + (
            f"; the int8 graph's cosine to them is at least {onnx_entry['int8_min_cosine']:.4f}"
            if "int8_min_cosine" in onnx_entry
            else ""
        )
        + ". The threshold and calibration are those of the exported model. Load it with hfsiamese and onnxruntime "
        '(`pip install "hfsiamese[onnx] @ git+https://github.com/hfsiamese/hfsiamese"`):\n\n'
        "```python\nfrom hfsiamese import load_siamese_model\n\n"
        f'model = load_siamese_model("{output_dir.name}")\n'
        'model.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])\n```\n'
    )
    write_export_card(output_dir, source_dir, "onnx", note)


__all__ = ["EmbeddingGraph", "ExportArguments", "compare_with_pytorch", "export_graph", "export_onnx", "quantize_int8"]
