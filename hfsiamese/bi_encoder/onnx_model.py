"""
A Siamese model whose encoder is an ONNX graph, run by onnxruntime: CPU serving without PyTorch's
per-op overhead, optionally int8-quantised (`hfsiamese.bi_encoder.onnx_export` writes such folders).

`OnnxSiameseModel` inherits the same inference API as `SiameseModel` (`encode`, `similarity`,
`predict`, `score_pairs`, `classify`, from `inference`): only `_embed_batch` differs, which feeds one
padded batch to the onnxruntime session instead of the torch encoder. A classification head, when the
model has one, is a few hundred weights applied to the embeddings and stays in torch.

The folder's `config.json` is the `SiameseConfig` of the exported model (threshold, calibration, encoder
settings) plus the `onnx` entry that marks every ONNX export of hfsiamese, a cross-encoder's too
(`hfsiamese.utils.onnx_runtime`): which graph file to run and how it was made. Its `model_type` is
`"siamese_onnx"`, so that with hfsiamese imported `AutoModel.from_pretrained(folder)` returns an `OnnxSiameseModel`;
`hfsiamese.load_model` tells it from the other folders.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import numpy as np
import torch
from torch import nn

from hfsiamese.models.siamese.configuration_siamese import SiameseConfig
from hfsiamese.models.siamese.encoding_policy import EncodePrecision
from hfsiamese.models.siamese.inference import SiameseInferenceMixin
from hfsiamese.models.siamese.modeling_siamese import PairClassificationHead, SiameseModelOutput
from hfsiamese.models.siamese.safe_loading import check_finite
from hfsiamese.utils.onnx_runtime import ONNX_FILE_NAME, open_graph_session, require_onnxruntime

CLASSIFIER_FILE_NAME = "classifier.safetensors"
# The graph's inputs and output, fixed by `hfsiamese.bi_encoder.onnx_export`.
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "sentence_embedding"


def padding_id_of(config: SiameseConfig) -> int:
    """The token id the graph's inputs are padded with: the LSTM/static vocabulary's, or the transformer's."""
    if config.encoder_type != "transformer":
        return int(config.pad_token_id or 0)
    return int((config.encoder_config or {}).get("pad_token_id") or 0)


class OnnxSiameseConfig(SiameseConfig):
    """
    The config of an ONNX-exported Siamese model: the exported model's `SiameseConfig`, plus
    `onnx` (a dict: `file`, the graph file in the folder; `quantization`, `None` or `"int8"`; `opset`;
    `exporter`; `embedding_rows`, the size of the token embedding table inside the graph; and the
    export's measured agreement with PyTorch).
    """

    model_type = "siamese_onnx"
    # SiameseConfig registers itself for AutoConfig, which would make `save_pretrained` copy the modeling
    # code beside the config; an ONNX folder is loaded by hfsiamese and carries no code.
    _auto_class = None

    def __init__(self, onnx: dict[str, Any] | None = None, **kwargs: Any) -> None:
        self.onnx = dict(onnx or {})
        super().__init__(**kwargs)


class OnnxSiameseModel(SiameseInferenceMixin, nn.Module):
    r"""
    A Siamese model served by onnxruntime, with the inference API of `SiameseModel`.

    Examples:

    ```python
    >>> from hfsiamese import load_siamese_model
    >>> model = load_siamese_model("outputs/lstm_qqp_onnx")  # a folder written by hfsiamese export
    >>> model.predict(["How do I learn Python?"], ["What is the best way to learn Python?"])
    ```
    """

    config_class: type[SiameseConfig] = OnnxSiameseConfig
    main_input_name = "input_ids_a"
    # The runtime named in messages; a subclass serving another runtime's graph names its own.
    runtime_name = "ONNX"

    def __init__(self, config: SiameseConfig, session: Any, name_or_path: str = "") -> None:
        super().__init__()
        self.config = config
        self.session = session
        self.name_or_path = name_or_path
        self._input_names = {item.name for item in session.get_inputs()}
        missing = set(INPUT_NAMES) - self._input_names
        if missing:
            raise ValueError(f"{name_or_path or 'the ONNX graph'}: the graph lacks the inputs {sorted(missing)}")
        self.classifier = (
            PairClassificationHead(config.sentence_embedding_dim, config.classifier_hidden_size)
            if config.classifier_head
            else None
        )
        self._tokenizer = None

    @classmethod
    def from_pretrained(
        cls,
        pretrained_model_name_or_path: str | os.PathLike,
        *,
        config: OnnxSiameseConfig | None = None,
        providers: list[str] | None = None,
        session_options: Any | None = None,
        **kwargs: Any,
    ) -> OnnxSiameseModel:
        """
        Load an exported folder. `providers` and `session_options` go to `onnxruntime.InferenceSession`
        (default: the CPU provider, onnxruntime's threads, which sleep between runs instead of spinning:
        `hfsiamese.utils.onnx_runtime.session_options(thread_spinning=True)` for onnxruntime's own default).
        """
        require_onnxruntime()
        options = {"providers": providers, "session_options": session_options}
        return cls.from_folder(
            pretrained_model_name_or_path,
            config,
            lambda folder, config: open_graph_session(folder, config.onnx, **options),
        )

    @classmethod
    def from_folder(cls, path: str | os.PathLike, config: Any | None, open_session: Callable[[Path, Any], Any]) -> Self:
        """An exported folder's model, whichever runtime serves it: its config (unless given), the session
        `open_session(folder, config)` opens on its graph, and the classification head's weights."""
        folder = Path(path)
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder} is not a folder holding an {cls.runtime_name}-exported Siamese model")
        if config is None:
            config = cls.config_class.from_pretrained(folder)
        model = cls(config, open_session(folder, config), name_or_path=str(folder))
        model.load_classifier(folder)
        return model.eval()

    def load_classifier(self, folder: Path) -> None:
        """The classification head's weights from `folder`, when the model has a head (the export writes them there)."""
        if self.classifier is None:
            return
        from safetensors.torch import load_file

        weights_path = folder / CLASSIFIER_FILE_NAME
        if not weights_path.is_file():
            raise FileNotFoundError(f"{weights_path}: the model has a classification head but its weights are missing")
        self.classifier.load_state_dict(load_file(str(weights_path)))
        check_finite(self.classifier, str(weights_path))

    # ----------------------------------------------------------------------------------------
    # What the inference mixin asks of a model
    # ----------------------------------------------------------------------------------------
    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def dtype(self) -> torch.dtype:
        return torch.float32

    def can_generate(self) -> bool:
        return False

    def graph_entry(self) -> dict[str, Any]:
        """The config.json entry that says how the graph was made (`onnx` here; `openvino` for an OpenVINO export)."""
        return dict(self.config.onnx)

    def embedding_rows(self) -> int:
        """Rows of the token embedding table inside the graph (the tokenizer may not be larger)."""
        return int(self.graph_entry()["embedding_rows"])

    def padding_id(self) -> int:
        return padding_id_of(self.config)

    def encode_precision(self) -> EncodePrecision:
        """`encode(dtype="auto")` on an exported model: the precision its export fixed, nothing measured."""
        return EncodePrecision(None, f"{self.runtime_name} graph exported as {self._exported_precision()}")

    def _exported_precision(self) -> str:
        entry = self.graph_entry()
        if entry.get("quantization") is None:
            return "float32"
        return f"{entry['quantization']} ({entry.get('int8_mode', 'dynamic')})"

    def _autocast(self, dtype: torch.dtype | None) -> Any:
        if dtype is not None:
            raise ValueError(
                f"dtype={dtype} is a PyTorch option: an {self.runtime_name} model's precision was fixed when it was "
                f"exported ({self._exported_precision()}); export with --quantize int8 for a smaller one"
            )
        return contextlib.nullcontext()

    def _embed_batch(self, features: dict[str, torch.Tensor]) -> torch.Tensor:
        """One padded batch through the graph (inputs as int64 arrays; extra fields it does not take are left out)."""
        feeds = {
            name: np.ascontiguousarray(value.detach().cpu().numpy(), dtype=np.int64)
            for name, value in features.items()
            if name in self._input_names
        }
        if "attention_mask" not in feeds:
            feeds["attention_mask"] = (feeds["input_ids"] != self.padding_id()).astype(np.int64)
        (embeddings,) = self.session.run([OUTPUT_NAME], feeds)
        return torch.from_numpy(embeddings)

    def embed(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **_: Any) -> torch.Tensor:
        """Embed one tokenised side, like `SiameseModel.embed`."""
        features = {"input_ids": input_ids}
        if attention_mask is not None:
            features["attention_mask"] = attention_mask
        return self._embed_batch(features)

    def forward(
        self,
        input_ids_a: torch.Tensor,
        attention_mask_a: torch.Tensor | None = None,
        input_ids_b: torch.Tensor | None = None,
        attention_mask_b: torch.Tensor | None = None,
        return_dict: bool | None = None,
        **_: Any,
    ) -> SiameseModelOutput | tuple:
        """Score tokenised pairs, as `SiameseModel.forward` does (the `question-duplicates` pipeline calls it)."""
        if input_ids_b is None:
            raise ValueError("OnnxSiameseModel.forward needs both input_ids_a and input_ids_b")
        embeddings_a = self.embed(input_ids_a, attention_mask_a)
        embeddings_b = self.embed(input_ids_b, attention_mask_b)
        head = self._head_logits if self.classifier is not None else None
        return SiameseModelOutput.returned(embeddings_a, embeddings_b, classifier=head, return_dict=return_dict)

    @torch.inference_mode()
    def _head_logits(self, embeddings_a: torch.Tensor, embeddings_b: torch.Tensor) -> torch.Tensor:
        """The classification head's logits (its PyTorch weights beside the graph), with no autograd record."""
        assert self.classifier is not None  # called only when the folder has a head
        return self.classifier(embeddings_a, embeddings_b)


__all__ = [
    "CLASSIFIER_FILE_NAME",
    "INPUT_NAMES",
    "ONNX_FILE_NAME",
    "OUTPUT_NAME",
    "OnnxSiameseConfig",
    "OnnxSiameseModel",
    "padding_id_of",
    "require_onnxruntime",
]
