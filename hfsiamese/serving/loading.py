"""
The one way hfsiamese's tools load a model folder: a PyTorch checkpoint (`SiameseModel`) or an ONNX
export (`OnnxSiameseModel`, from `recipes/export.py`), told apart by the folder's `config.json`.
`DuplicateIndex`, the evaluation and search recipes and the web app all call `load_siamese_model`,
so each accepts an exported folder unchanged.
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

    return AutoModel.from_pretrained(str(name_or_path), **kwargs)


__all__ = ["is_onnx_folder", "load_siamese_model"]
