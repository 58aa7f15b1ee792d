"""
The `mteb.models.ModelMeta` of a hfsiamese model, read from the checkpoint in memory: its name, a revision, the
embedding size, the tokens it keeps, its parameters and framework.

MTEB keys its result cache by model name and revision, and by default skips a task whose results it already holds
for them (`overwrite_strategy="only-missing"`). A model trained again into the same folder keeps its name, so
unless a revision is given, the revision is a fingerprint of what decides the scores (the weights, or the ONNX
graph, and the config): a retrained model never reads the previous one's cached results.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import torch

from hfsiamese.utils.onnx_runtime import ONNX_FILE_NAME, onnx_entry

# Config values that say where a model came from, not what it computes: left out of the fingerprint.
_PROVENANCE_KEYS = ("_name_or_path", "_commit_hash", "transformers_version")
# The fingerprint's length in hex digits (48 bits: no two checkpoints of one model name collide in practice).
_FINGERPRINT_DIGITS = 12
_READ_CHUNK = 1 << 20


def model_name(name_or_path: str, *, unsaved: str) -> str:
    """
    The name MTEB files the results under (it wants `organization/model`): a Hub id or a path as given, a folder
    without a `/` as its absolute path, and `hfsiamese/<unsaved>` for a model that was never saved nor loaded.
    """
    if not name_or_path:
        return f"hfsiamese/{unsaved}"
    if "/" in name_or_path:
        return name_or_path
    return str(Path(name_or_path).resolve()) if os.path.isdir(name_or_path) else f"hfsiamese/{name_or_path}"


def weights_fingerprint(module: torch.nn.Module, config: Any, folder: str | None) -> str:
    """
    A short hash of what decides the model's scores: every tensor of its state (in name order), the ONNX graph
    an export runs (the file its config's `onnx` entry names in `folder`), and the config without provenance keys.
    """
    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        digest.update(name.encode())
        digest.update(str(tensor.dtype).encode())
        digest.update(tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    entry = onnx_entry(config)
    if entry and folder:
        graph = Path(folder) / entry.get("file", ONNX_FILE_NAME)
        with graph.open("rb") as stream:
            while chunk := stream.read(_READ_CHUNK):
                digest.update(chunk)
    values = {key: value for key, value in config.to_dict().items() if key not in _PROVENANCE_KEYS}
    digest.update(json.dumps(values, sort_keys=True, default=str).encode())
    return f"sha256-{digest.hexdigest()[:_FINGERPRINT_DIGITS]}"


def parameter_count(module: torch.nn.Module) -> int | None:
    """Parameters of a PyTorch model; None for an ONNX export, whose weights live in its graph."""
    count = sum(parameter.numel() for parameter in module.parameters())
    return count or None


def memory_mb(module: torch.nn.Module) -> float | None:
    """The size of the model's tensors in MiB (None for an ONNX export)."""
    size = sum(t.numel() * t.element_size() for t in module.state_dict().values())
    return round(size / 2**20, 2) if size else None


def model_meta(
    *,
    loader: Any,
    module: torch.nn.Module,
    config: Any,
    name_or_path: str,
    name: str | None,
    revision: str | None,
    embed_dim: int | None,
    max_tokens: int,
    cross_encoder: bool,
) -> Any:
    """
    The `ModelMeta` MTEB records with every result: `name` and `revision` when given, else as `model_name` and
    `weights_fingerprint` say; cosine similarity for a bi-encoder (its embeddings are L2-normalised).
    """
    from mteb.models import ModelMeta
    from mteb.models.model_meta import ScoringFunction

    onnx = onnx_entry(config) is not None
    prompts = getattr(config, "prompts", None)
    return ModelMeta.create_empty(
        overwrites=dict(
            loader=loader,
            name=name or model_name(name_or_path, unsaved="cross-encoder" if cross_encoder else "bi-encoder"),
            revision=revision or weights_fingerprint(module, config, name_or_path or None),
            n_parameters=parameter_count(module),
            memory_usage_mb=memory_mb(module),
            max_tokens=max_tokens,
            embed_dim=embed_dim,
            framework=["ONNX"] if onnx else ["PyTorch", "Transformers"],
            similarity_fn_name=None if cross_encoder else ScoringFunction.COSINE,
            use_instructions=bool(prompts),
            model_type=["cross-encoder"] if cross_encoder else ["dense"],
        )
    )


__all__ = ["memory_mb", "model_meta", "model_name", "parameter_count", "weights_fingerprint"]
