"""
A cross-encoder whose transformer is an ONNX graph run by onnxruntime (`hfsiamese.cross_encoder.onnx_export`
writes such folders): the same `CrossEncoder` API (`predict`, `score_pairs`, `rank`, reranking), one session
call per batch instead of PyTorch's per-op dispatch.

`OnnxSequenceClassifier` stands where `CrossEncoder` keeps its torch model: it takes the token fields of a
batch and returns the one-logit output, so nothing in `CrossEncoder` knows which of the two it runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from transformers.modeling_outputs import SequenceClassifierOutput

from hfsiamese.utils.onnx_runtime import open_graph_session

# The graph's output, fixed by `hfsiamese.cross_encoder.onnx_export`.
LOGITS_NAME = "logits"


class OnnxSequenceClassifier(nn.Module):
    """A one-logit sequence classifier served by an onnxruntime session (a `CrossEncoder`'s model)."""

    def __init__(self, config: Any, session: Any, name_or_path: str = "") -> None:
        super().__init__()
        self.config = config
        self.session = session
        self.name_or_path = name_or_path
        self.input_names = [item.name for item in session.get_inputs()]

    @classmethod
    def from_folder(
        cls, folder: str | Path, config: Any, *, providers: list[str] | None = None, session_options: Any | None = None
    ) -> OnnxSequenceClassifier:
        """The graph named by `config.onnx["file"]` in `folder`, in an onnxruntime session (CPU by default)."""
        session = open_graph_session(folder, config.onnx, providers=providers, session_options=session_options)
        return cls(config, session, name_or_path=str(folder))

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    def forward(self, **features: torch.Tensor) -> SequenceClassifierOutput:
        feed = {name: features[name].cpu().numpy().astype(np.int64) for name in self.input_names if name in features}
        missing = [name for name in self.input_names if name not in feed]
        if missing:
            raise ValueError(f"{self.name_or_path or 'the ONNX graph'} needs the inputs {missing}")
        (logits,) = self.session.run([LOGITS_NAME], feed)
        return SequenceClassifierOutput(logits=torch.from_numpy(np.ascontiguousarray(logits, dtype=np.float32)))


__all__ = ["LOGITS_NAME", "OnnxSequenceClassifier"]
