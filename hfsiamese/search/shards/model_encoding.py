"""
The model's side of a sharded encoding, the same for every way of running it: the model loaded onto its
device, the precision every process encodes in (the folder's recorded one on a restart, so a restarted
process encodes as the first did), the fingerprint the manifest records, and a shard's texts encoded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hfsiamese.search.shards.manifest import PROBE_TEXTS, read_manifest

# The manifest's names of the precisions (`EncodePrecision.name`), and the autocast type of each.
PRECISIONS = {"fp32": "float32", "bf16 autocast": "bfloat16"}


def resolve_model(model: Any, device: Any) -> Any:
    """`model` itself, or the model saved at that folder / Hub id loaded onto `device`."""
    if isinstance(model, (str, os.PathLike)):
        from hfsiamese.loading import load_siamese_model

        loaded = load_siamese_model(model)
        return loaded.to(device) if hasattr(loaded, "to") else loaded  # an ONNX model runs where its session does
    if not hasattr(model, "encode"):
        raise TypeError(f"model must be a SiameseModel (or its folder), got {type(model).__name__}")
    return model


def encoding_dtype(model: Any, shards_dir: Path, dtype: Any = None) -> Any:
    """
    The dtype every `encode` call of a sharded encoding passes: `dtype` where given, else the precision fixed on the
    model (`set_encode_precision`), else the one recorded in the folder's manifest (written by the first process
    that encoded into it: a restart reuses it rather than deciding, or measuring, again), else what `encode` uses
    by default here. A torch dtype (float32 for float32), or None for a model without PyTorch precisions (ONNX).
    """
    if not hasattr(model, "resolve_encode_dtype"):
        return None
    import torch

    fixed = model.fixed_encode_precision() if hasattr(model, "fixed_encode_precision") else None
    if dtype is None and fixed is None and not _exported_precision(model):
        try:
            saved = read_manifest(shards_dir)
        except (OSError, ValueError):
            saved = None  # the main process reports a damaged manifest
        if saved is not None:
            recorded = saved["model"].get("precision", "fp32")  # folders written before it was recorded: fp32
            if recorded in PRECISIONS:
                return getattr(torch, PRECISIONS[recorded])
    resolved = model.resolve_encode_dtype(dtype)
    return torch.float32 if resolved is None else resolved


def _exported_precision(model: Any) -> bool:
    """An ONNX model: its precision was fixed at export, `encode` takes no autocast type."""
    return getattr(getattr(model, "config", None), "onnx", None) is not None


def _dtype_kwargs(dtype: Any) -> dict[str, Any]:
    return {} if dtype is None else {"dtype": dtype}


def model_fingerprint(
    model: Any, tokenizer: Any | None, max_length: int | None, truncate_dim: int | None, *, dtype: Any = None
) -> dict[str, Any]:
    """The model's name, the precision it encodes in, and its embeddings of `PROBE_TEXTS` under these encoding settings."""
    probes = model.encode(list(PROBE_TEXTS), tokenizer, max_length=max_length, truncate_dim=truncate_dim,
                          **_dtype_kwargs(dtype)).float().cpu()  # fmt: skip
    resolved = model.resolve_encode_dtype(dtype) if hasattr(model, "resolve_encode_dtype") else None
    precision = (
        "fp32" if resolved is None else "bf16 autocast" if str(resolved) == "torch.bfloat16" else f"{resolved} autocast"
    )
    return {
        "name_or_path": str(getattr(model, "name_or_path", "") or ""),
        "precision": precision,  # what this encoding runs in (`encoding_dtype`)
        "embedding_dim": int(probes.shape[1]),
        "probe_texts": list(PROBE_TEXTS),
        "probe_embeddings": [[round(value, 7) for value in row] for row in probes.tolist()],
    }


def encode_texts(
    model: Any,
    tokenizer: Any | None,
    texts: Sequence[str],
    start: int,
    end: int,
    batch_size: int,
    max_length: int | None,
    truncate_dim: int | None,
    dtype: Any = None,
) -> np.ndarray:
    """float32 `(end - start, dim)` embeddings of `texts[start:end]`, encoded in `dtype` (see `encoding_dtype`)."""
    embeddings = model.encode(list(texts[start:end]), tokenizer, batch_size=batch_size, max_length=max_length,
                              truncate_dim=truncate_dim, **_dtype_kwargs(dtype))  # fmt: skip
    return np.ascontiguousarray(embeddings.float().cpu().numpy(), dtype=np.float32)
