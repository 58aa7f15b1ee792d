"""
A cross-encoder whose transformer is an OpenVINO graph (`hfsiamese.cross_encoder.openvino_export` writes such
folders): `OnnxSequenceClassifier`, whose only runtime call is its session's `run`, over an `OpenVinoSession`
(`hfsiamese.utils.openvino_runtime`), so `CrossEncoder` runs it as it runs the ONNX graph.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hfsiamese.cross_encoder.onnx_model import OnnxSequenceClassifier
from hfsiamese.utils.openvino_runtime import open_openvino_session


class OpenVinoSequenceClassifier(OnnxSequenceClassifier):
    """A one-logit sequence classifier served by OpenVINO on the CPU (a `CrossEncoder`'s model)."""

    @classmethod
    def from_folder(  # type: ignore[override]  # OpenVINO's options (ov_config) instead of onnxruntime's
        cls, folder: str | Path, config: Any, *, ov_config: dict[str, Any] | None = None
    ) -> OpenVinoSequenceClassifier:
        """The graph named by `config.openvino["file"]` in `folder`, compiled for the CPU (`ov_config`: its options)."""
        padding_id = int(getattr(config, "pad_token_id", None) or 0)
        session = open_openvino_session(folder, config.openvino, ov_config=ov_config, padding_id=padding_id)
        return cls(config, session, name_or_path=str(folder))


__all__ = ["OpenVinoSequenceClassifier"]
