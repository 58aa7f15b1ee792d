"""
The one way hfsiamese's tools load a model folder: a PyTorch checkpoint (`SiameseModel`) or an ONNX
export (`OnnxSiameseModel`, from `recipes/export.py`), told apart by the folder's `config.json`.
`DuplicateIndex`, the evaluation and search recipes and the web app all call `load_siamese_model`,
so each accepts an exported folder unchanged. Tools that only score pairs (`recipes/evaluate_pairs.py`,
`recipes/calibrate.py`) call `load_pair_model`, which also takes a cross-encoder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .onnx_model import OnnxSiameseConfig, OnnxSiameseModel


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

    if _is_cross_encoder(name_or_path):
        raise ValueError(
            f"{name_or_path} is a cross-encoder: it scores pairs but cannot embed texts for search; give a bi-encoder here "
            "and the cross-encoder as the reranker (cross_encoder=..., --cross_encoder)"
        )
    return AutoModel.from_pretrained(str(name_or_path), **kwargs)


def load_pair_model(name_or_path: str | os.PathLike, **kwargs: Any) -> Any:
    """
    A model that scores pairs (`score_pairs`, `predict`, `calibrate`): a cross-encoder (`hfsiamese.cross_encoder.CrossEncoder`,
    a one-logit sequence-classification folder), else what `load_siamese_model` loads.
    """
    if not is_onnx_folder(name_or_path) and _is_cross_encoder(name_or_path):
        from ..cross_encoder import CrossEncoder

        return CrossEncoder.from_pretrained(name_or_path, **kwargs)
    return load_siamese_model(name_or_path, **kwargs)


def _is_cross_encoder(name_or_path: str | os.PathLike) -> bool:
    from ..cross_encoder import is_cross_encoder_folder

    return is_cross_encoder_folder(name_or_path)


__all__ = ["is_onnx_folder", "load_pair_model", "load_siamese_model"]
