"""
What both families' OpenVINO exports share when they are served: the marker of an export, and a session over its
graph that answers as an onnxruntime session does (`get_inputs()`, `run(output_names, feeds)`), so that the ONNX
model classes (`OnnxSiameseModel`, `OnnxSequenceClassifier`) run an OpenVINO graph unchanged.

An OpenVINO export (`hfsiamese export --format openvino`) keeps the model's config.json with an `openvino` entry
(`file`, the IR's .xml in the folder, its weights in the .bin beside it; `quantization`; how the graph was made and
how close it came to PyTorch): that entry is what tells it from a PyTorch checkpoint or an ONNX export.

Precision: OpenVINO's CPU plugin runs an fp32 graph in bf16 on CPUs with native bf16 unless told otherwise; a session
here asks for f32 (`INFERENCE_PRECISION_HINT`), so that an fp32 export gives the embeddings it was checked to give on
every CPU. A caller who wants bf16 says so with `ov_config={"INFERENCE_PRECISION_HINT": "bf16"}`.

Attention on AMX CPUs: the plugin compiles a transformer's attention (`ScaledDotProductAttention`) into one "snippets"
kernel by default, which on an AMX Xeon (CPU family 6, model 167; 2026-12-04) spent a third of the MiniLM recipe's
int8 encode in it, about 1.7 ms a call for a batch of 64 questions, whatever the precision. With snippets off
(`SNIPPETS_MODE: DISABLE`) the attention runs as its matrix products and softmax, the products on AMX: encode
throughput +17% to +18% (int8 export, two runs in one process each), +6% on the fp32 one, embeddings unchanged,
and +3% to +8% on texts of 4 and 12 questions joined; a cross-encoder of the recipe's kind scored pairs +9% faster
in int8, +4% in fp32, scores unchanged. So a session over a graph with attention on a CPU with AMX
turns snippets off (`session_defaults`); elsewhere it was not measured and the plugin's default stays. A caller's
`ov_config` overrides either.

One `openvino.Core` for the process (`shared_core`): OpenVINO 2026.4's CPU plugin gives the thread that first
compiles with a Core an alternate signal stack of its own (for AMX's larger signal frames) and, when that Core is
destroyed, puts back the stack it found and unmaps its own. Two Cores destroyed in another order than made (a
session per model, freed whenever Python frees them) leave the thread's alternate stack pointing at unmapped
memory, and the next signal handled on it kills the process (SIGSEGV, si_code SI_KERNEL; a pytest run of the
OpenVINO tests and then a training test died so, issue 51). A Core made once and kept is never destroyed early.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hfsiamese.utils.cpu_features import CpuFeatures, detected_features
from hfsiamese.utils.extras import install_hint
from hfsiamese.utils.int8_saturation import warn_if_int8_saturates

OPENVINO_FILE_NAME = "openvino_model.xml"
# The config.json entry that marks an OpenVINO export and says how its graph was made.
OPENVINO_ENTRY = "openvino"
# What a session asks the CPU plugin for unless the caller says otherwise (see the module docstring).
DEFAULT_OV_CONFIG = {"INFERENCE_PRECISION_HINT": "f32"}
# What a graph with attention is compiled with on a CPU with AMX (see the module docstring).
AMX_ATTENTION_OV_CONFIG = {"SNIPPETS_MODE": "DISABLE"}
ATTENTION_OPERATORS = frozenset({"ScaledDotProductAttention"})
# Static-shape graphs (`static_shapes` in the entry) are compiled once per input shape; the lengths are padded up
# to a multiple of this, so that a stream of batches meets a few shapes, not one per length.
STATIC_LENGTH_STEP = 8
# Compiled shapes kept per session (least recently used dropped first).
STATIC_SHAPES_KEPT = 16


_shared: dict[str, Any] = {}
_shared_lock = threading.Lock()


def shared_core() -> Any:
    """The `openvino.Core` every graph here is read and compiled with: made on first use, kept for the process."""
    openvino = require_openvino()
    with _shared_lock:
        if "core" not in _shared:
            _shared["core"] = openvino.Core()
        return _shared["core"]


def openvino_entry(config: Any) -> dict[str, Any] | None:
    """The `openvino` entry of a config (a transformers config or its dict) if it describes an OpenVINO export."""
    entry = config.get(OPENVINO_ENTRY) if isinstance(config, dict) else getattr(config, OPENVINO_ENTRY, None)
    return dict(entry) if entry else None


def require_openvino() -> Any:
    """The openvino module, or the one-line error saying how to install it."""
    try:
        import openvino
    except ImportError as err:
        raise ImportError(
            f"OpenVINO export and inference need the openvino package: {install_hint('openvino')}"
        ) from err
    return openvino


def holds_operator(model: Any, operators: Collection[str]) -> bool:
    """Does the OpenVINO `model` hold an operator of one of the types `operators` names?"""
    return any(op.get_type_name() in operators for op in model.get_ops())


def session_defaults(model: Any, features: CpuFeatures | None = None) -> dict[str, Any]:
    """
    The CPU plugin's options a session over `model` asks for unless its caller says otherwise: f32 inference, and
    snippets off for a graph with attention on a CPU with AMX (`features`, default: this CPU's; module docstring).
    """
    features = detected_features() if features is None else features
    config = dict(DEFAULT_OV_CONFIG)
    if features.amx and holds_operator(model, ATTENTION_OPERATORS):
        config.update(AMX_ATTENTION_OV_CONFIG)
    return config


@dataclass(frozen=True)
class GraphInput:
    """One input of a graph, as onnxruntime's `NodeArg` names it."""

    name: str


class OpenVinoSession:
    """
    An OpenVINO model compiled for the CPU, with onnxruntime's session interface. Each `run` takes its own infer
    request, so concurrent calls (the service's threads) do not share one.

    `static_shapes=True` compiles the graph for each input shape it meets (lengths padded up to a multiple of
    `STATIC_LENGTH_STEP` with the padding id, masked out): OpenVINO 2026.4's CPU plugin runs an ONNX LSTM with
    per-row lengths wrongly when any dimension is dynamic (a tiny bidirectional 2-layer LSTM: 0.089 max abs off
    PyTorch on ragged rows, 1e-7 with static shapes), so an exported LSTM is served this way.
    """

    def __init__(
        self,
        model: Any,
        *,
        ov_config: dict[str, Any] | None = None,
        static_shapes: bool = False,
        padding_id: int = 0,
    ) -> None:
        self._core = shared_core()
        self._model = model
        self._config = {**session_defaults(model), **(ov_config or {})}
        self._static_shapes = static_shapes
        self._padding_id = padding_id
        self._inputs = [GraphInput(port.get_any_name()) for port in model.inputs]
        self._compiled: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()
        if not static_shapes:
            self._compiled[()] = self._core.compile_model(model, "CPU", self._config)

    @property
    def ov_config(self) -> dict[str, Any]:
        """The options the graph is compiled with: `session_defaults` under the caller's `ov_config`."""
        return dict(self._config)

    def get_inputs(self) -> list[GraphInput]:
        return list(self._inputs)

    def run(self, output_names: list[str] | None, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """The outputs named (all when None) for one batch of inputs, as numpy arrays, like `InferenceSession.run`."""
        rows = next(iter(feeds.values())).shape[0]
        if self._static_shapes:
            feeds = self._padded(feeds)
        compiled = self._compiled_for(feeds)
        results = compiled.create_infer_request().infer(feeds)
        names = output_names or [port.get_any_name() for port in compiled.outputs]
        return [np.asarray(results[compiled.output(name)])[:rows] for name in names]

    def _padded(self, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Token fields padded on the right up to a multiple of `STATIC_LENGTH_STEP` (ids with the padding id, masks with 0)."""
        length = next(iter(feeds.values())).shape[1]
        extra = -length % STATIC_LENGTH_STEP
        if extra == 0:
            return feeds
        fill = {"input_ids": self._padding_id}
        return {
            name: np.pad(value, ((0, 0), (0, extra)), constant_values=fill.get(name, 0))
            for name, value in feeds.items()
        }

    def _compiled_for(self, feeds: dict[str, np.ndarray]) -> Any:
        key = tuple((name, value.shape) for name, value in sorted(feeds.items())) if self._static_shapes else ()
        with self._lock:
            compiled = self._compiled.get(key)
            if compiled is not None:
                self._compiled.move_to_end(key)
                return compiled
            model = self._model.clone()
            model.reshape({name: list(value.shape) for name, value in feeds.items()})
            compiled = self._core.compile_model(model, "CPU", self._config)
            self._compiled[key] = compiled
            while len(self._compiled) > STATIC_SHAPES_KEPT:
                self._compiled.popitem(last=False)
            return compiled


def open_openvino_graph(
    path: str | Path, *, ov_config: dict[str, Any] | None = None, **options: Any
) -> OpenVinoSession:
    """A session over the OpenVINO IR (or any graph file OpenVINO reads) at `path`; `options` go to `OpenVinoSession`."""
    core = shared_core()
    try:
        model = core.read_model(str(path))
    except Exception as err:  # OpenVINO raises its own types for unreadable or invalid graphs
        raise ValueError(f"{path}: OpenVINO cannot read this graph: {err}") from err
    return OpenVinoSession(model, ov_config=ov_config, **options)


def open_openvino_session(
    folder: str | Path, entry: dict[str, Any], *, ov_config: dict[str, Any] | None = None, padding_id: int = 0
) -> OpenVinoSession:
    """The session over the graph that the export's `openvino` entry names in `folder`; a missing graph is named."""
    require_openvino()  # before the folder is looked at: without openvino nothing here can run
    graph = Path(folder) / entry.get("file", OPENVINO_FILE_NAME)
    if not graph.is_file() or not graph.with_suffix(".bin").is_file():
        raise FileNotFoundError(
            f"{graph}: the OpenVINO graph (.xml and .bin) named by {Path(folder) / 'config.json'} is missing"
        )
    warn_if_int8_saturates(
        folder,
        entry,
        runtime="OpenVINO",
        export_again="hfsiamese export --format openvino --quantize int8 --calibration_file PAIRS",
    )
    return open_openvino_graph(
        graph, ov_config=ov_config, static_shapes=bool(entry.get("static_shapes")), padding_id=padding_id
    )


__all__ = [
    "AMX_ATTENTION_OV_CONFIG",
    "DEFAULT_OV_CONFIG",
    "OPENVINO_ENTRY",
    "OPENVINO_FILE_NAME",
    "OpenVinoSession",
    "holds_operator",
    "open_openvino_graph",
    "open_openvino_session",
    "openvino_entry",
    "require_openvino",
    "session_defaults",
    "shared_core",
]
