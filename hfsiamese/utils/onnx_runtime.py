"""
What both families' ONNX exports share when they are served: the one marker of an export, and its onnxruntime session.

An ONNX export of either family (`hfsiamese export`) keeps the model's own config.json with an `onnx` entry
(`file`, the graph in the folder; `quantization`; `opset`; `exporter`; how close the graph came to PyTorch): that
entry is what tells an export from a PyTorch checkpoint (`onnx_entry`). `OnnxSiameseModel` and the cross-encoder's
`OnnxSequenceClassifier` both open the graph it names with `open_graph_session`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hfsiamese.utils.extras import install_hint
from hfsiamese.utils.int8_saturation import warn_if_int8_saturates

ONNX_FILE_NAME = "model.onnx"
# The config.json entry that marks an ONNX export and says how its graph was made.
ONNX_ENTRY = "onnx"


def onnx_entry(config: Any) -> dict[str, Any] | None:
    """The `onnx` entry of a config (a transformers config or its dict) if it describes an ONNX export, else None."""
    entry = config.get(ONNX_ENTRY) if isinstance(config, dict) else getattr(config, ONNX_ENTRY, None)
    return dict(entry) if entry else None


def require_onnxruntime() -> Any:
    """The onnxruntime module, or the one-line error saying how to install it."""
    try:
        import onnxruntime
    except ImportError as err:
        raise ImportError(f"running an ONNX-exported Siamese model needs onnxruntime: {install_hint('onnx')}") from err
    return onnxruntime


def open_session(graph: str | Path, *, providers: list[str] | None = None, session_options: Any | None = None) -> Any:
    """An onnxruntime session over the graph file `graph` (default: the CPU provider, onnxruntime's own threads)."""
    onnxruntime = require_onnxruntime()
    try:
        return onnxruntime.InferenceSession(
            str(graph), sess_options=session_options, providers=providers or ["CPUExecutionProvider"]
        )
    except Exception as err:  # onnxruntime raises its own types for unreadable or invalid graphs
        raise ValueError(f"{graph}: onnxruntime cannot load this graph: {err}") from err


def session_options(*, thread_spinning: bool = True) -> Any:
    """
    onnxruntime session options. `thread_spinning=False`: the session's threads sleep between runs instead of
    spinning on the cores for more work (onnxruntime's default), which a service needs: its requests arrive one at a
    time, and a spinning pool takes the cores its event loop, tokenizer and index search run on (2 cores,
    docs/benchmarks.md: a search service 1.56x faster at one client without spinning). An export's session opens
    without spinning unless given options: `open_graph_session` says why.
    """
    onnxruntime = require_onnxruntime()
    options = onnxruntime.SessionOptions()
    if not thread_spinning:
        for pool in ("intra_op", "inter_op"):
            options.add_session_config_entry(f"session.{pool}.allow_spinning", "0")
    return options


def default_session_options() -> Any:
    """The options an export's session opens with when the caller gives none: threads that sleep between runs."""
    return session_options(thread_spinning=False)


def request_runtime_options(*, thread_spinning: bool = False) -> dict[str, dict[str, Any]]:
    """
    `runtime_options` (as `hfsiamese.load_model` takes them) for a model that answers requests (`hfsiamese serve`,
    `hfsiamese app`): what differs from an export's default session (`default_session_options`, threads that sleep
    between runs): onnxruntime's spinning threads where `thread_spinning`. Empty where nothing differs, or onnxruntime
    is not installed (no ONNX model loads then).
    """
    if not thread_spinning or importlib.util.find_spec("onnxruntime") is None:
        return {}
    return {"onnx": {"session_options": session_options(thread_spinning=True)}}


def open_graph_session(
    folder: str | Path, entry: dict[str, Any], *, providers: list[str] | None = None, session_options: Any | None = None
) -> Any:
    """
    The session over the graph that the export's `onnx` entry names in `folder`; a missing graph is named. Without
    `session_options`, its threads sleep between runs (`default_session_options`): between two runs a
    model tokenises and pads the next batch (a bi-encoder's `encode` on a thread of its own), on the cores a spinning
    pool, onnxruntime's default, held. 2 cores (docs/benchmarks.md): the LSTM recipe's int8 export encodes 1.95-2.41x
    PyTorch fp32 instead of 1.04x, the cross-encoder recipe's scores 1.03-1.05x the pairs a second.
    """
    require_onnxruntime()  # before the folder is looked at: without onnxruntime nothing here can run
    graph = Path(folder) / entry.get("file", ONNX_FILE_NAME)
    if not graph.is_file():
        raise FileNotFoundError(f"{graph}: the ONNX graph named by {Path(folder) / 'config.json'} is missing")
    warn_if_int8_saturates(folder, entry, runtime="onnxruntime", export_again="hfsiamese export --quantize int8")
    if session_options is None:
        session_options = default_session_options()
    return open_session(graph, providers=providers, session_options=session_options)


__all__ = [
    "ONNX_ENTRY",
    "ONNX_FILE_NAME",
    "default_session_options",
    "onnx_entry",
    "open_graph_session",
    "open_session",
    "request_runtime_options",
    "require_onnxruntime",
    "session_options",
]
