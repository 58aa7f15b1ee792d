"""Is a checkpoint a cross-encoder? Told from its config alone (one logit, a sequence-classification architecture),
so that `hfsiamese.loading` and the bi-encoder's tools can tell the families apart without loading either."""

from __future__ import annotations

import os
from typing import Any


def is_cross_encoder_config(config: Any) -> bool:
    """
    Does a transformers config (or its dict) describe a one-logit sequence-classification model, a cross-encoder
    (`hfsiamese.cross_encoder.model.CrossEncoder`)? Asked in this small module so that the loaders can refuse one where a bi-encoder is needed without
    importing the cross-encoder's model.
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


__all__ = ["is_cross_encoder_config", "is_cross_encoder_folder"]
