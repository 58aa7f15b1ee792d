"""
The one way hfsiamese's tools load a model folder: a PyTorch checkpoint (`SiameseModel`) or an ONNX
export (`OnnxSiameseModel`, from `hfsiamese export`), told apart by the folder's `config.json`.
`DuplicateIndex`, the evaluation and search recipes and the web app all call `load_siamese_model`,
so each accepts an exported folder unchanged, and each refuses a cross-encoder (`is_cross_encoder_folder`), which
cannot embed texts; the tools that only score pairs take one through `hfsiamese.cross_encoder.model.load_pair_model`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hfsiamese.bi_encoder.onnx_model import OnnxSiameseConfig, OnnxSiameseModel


def is_onnx_folder(name_or_path: str | os.PathLike) -> bool:
    """Does `name_or_path` name a local folder whose config.json describes an ONNX-exported Siamese model?"""
    config_file = Path(name_or_path) / "config.json"
    if not config_file.is_file():
        return False
    try:
        model_type = json.loads(config_file.read_text(encoding="utf-8")).get("model_type")
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"{config_file} is not valid JSON: {err}") from err
    return model_type == OnnxSiameseConfig.model_type


def load_siamese_model(name_or_path: str | os.PathLike, **kwargs: Any) -> Any:
    """
    A Siamese model from a folder or Hub id: `OnnxSiameseModel` for an ONNX export (needs
    onnxruntime), else `SiameseModel` (`AutoModel.from_pretrained`, safetensors only). `kwargs` go
    to that class's `from_pretrained`.
    """
    if is_onnx_folder(name_or_path):
        return OnnxSiameseModel.from_pretrained(name_or_path, **kwargs)
    from transformers import AutoModel

    if is_cross_encoder_folder(name_or_path):
        raise ValueError(
            f"{name_or_path} is a cross-encoder: it scores pairs but cannot embed texts for search; give a bi-encoder here "
            "and the cross-encoder as the reranker (cross_encoder=..., --cross_encoder)"
        )
    return AutoModel.from_pretrained(str(name_or_path), **kwargs)


def is_cross_encoder_config(config: Any) -> bool:
    """
    Does a transformers config (or its dict) describe a one-logit sequence-classification model, a cross-encoder
    (`hfsiamese.cross_encoder.model.CrossEncoder`)? Asked here, below the cross-encoder, so that the loaders can refuse one
    where a bi-encoder is needed without importing it.
    """
    values = config if isinstance(config, dict) else config.to_dict()
    labels = len(values.get("id2label") or {}) or values.get("num_labels")
    return labels == 1 and any(name.endswith("ForSequenceClassification") for name in values.get("architectures") or [])


def is_cross_encoder_folder(name_or_path: str | os.PathLike) -> bool:
    """Does `name_or_path` name a local folder (or a cached Hub id) holding a cross-encoder's config?"""
    from transformers import AutoConfig

    try:
        return is_cross_encoder_config(AutoConfig.from_pretrained(str(name_or_path)))
    except (OSError, ValueError):
        return False


__all__ = ["is_cross_encoder_config", "is_cross_encoder_folder", "is_onnx_folder", "load_siamese_model"]
