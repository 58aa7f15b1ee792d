"""
A Siamese model whose encoder is an OpenVINO graph (`hfsiamese export --format openvino` writes such folders): the
inference API of `OnnxSiameseModel`, whose only runtime call is its session's `run`, over an `OpenVinoSession`
(`hfsiamese.utils.openvino_runtime`), which answers as onnxruntime's does.

The folder's config.json is the exported model's `SiameseConfig` plus the `openvino` entry; its `model_type` is
`"siamese_openvino"`, so that with hfsiamese imported `AutoModel.from_pretrained(folder)` returns this class.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hfsiamese.bi_encoder.onnx_model import OnnxSiameseModel, padding_id_of
from hfsiamese.models.siamese.configuration_siamese import SiameseConfig
from hfsiamese.utils.openvino_runtime import open_openvino_session, require_openvino


class OpenVinoSiameseConfig(SiameseConfig):
    """
    The config of an OpenVINO-exported Siamese model: the exported model's `SiameseConfig`, plus `openvino` (a dict:
    `file`, the IR's .xml in the folder; `quantization`, `None` or `"int8"`, with `int8_mode` `"static"`; how the graph
    was made; `embedding_rows`; `static_shapes`, a graph compiled per input shape; and its measured agreement with
    PyTorch).
    """

    model_type = "siamese_openvino"
    # As for the ONNX export: the folder is loaded by hfsiamese and carries no modeling code.
    _auto_class = None

    def __init__(self, openvino: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.openvino = dict(openvino or {})
        super().__init__(**kwargs)


class OpenVinoSiameseModel(OnnxSiameseModel):
    r"""
    A Siamese model served by OpenVINO on the CPU, with the inference API of `SiameseModel`.

    Examples:

    ```python
    >>> from hfsiamese import load_model
    >>> model = load_model("outputs/minilm_qqp_openvino")  # a folder written by hfsiamese export --format openvino
    >>> model.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])
    ```
    """

    config_class = OpenVinoSiameseConfig
    runtime_name = "OpenVINO"

    @classmethod
    def from_pretrained(  # type: ignore[override]  # OpenVINO's options (ov_config) instead of onnxruntime's
        cls,
        pretrained_model_name_or_path: str | os.PathLike,
        *,
        config: OpenVinoSiameseConfig | None = None,
        ov_config: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> OpenVinoSiameseModel:
        """
        Load an exported folder. `ov_config` goes to OpenVINO's `compile_model` for the CPU (e.g.
        `{"INFERENCE_NUM_THREADS": 2}`, `{"INFERENCE_PRECISION_HINT": "bf16"}`); the default runs in f32 with
        OpenVINO's own thread settings.
        """
        require_openvino()

        def open_session(folder: Path, config: Any) -> Any:
            return open_openvino_session(folder, config.openvino, ov_config=ov_config, padding_id=padding_id_of(config))

        return cls.from_folder(pretrained_model_name_or_path, config, open_session)

    def graph_entry(self) -> dict[str, Any]:
        return dict(self.config.openvino)


__all__ = ["OpenVinoSiameseConfig", "OpenVinoSiameseModel"]
