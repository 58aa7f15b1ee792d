"""Precomputed embeddings handed to a `DuplicateIndex` (a tensor, an array, or `EmbeddingShards` read shard by
shard), checked against the index's size, and the shards of a sharded build assembled into one memory-mapped file."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hfsiamese.search.shards.shard_files import partial_name
from hfsiamese.search.stores.embedding_table import EmbeddingTable

ASSEMBLED_NAME = "embeddings.npy"  # a sharded build's embeddings, assembled beside its shards


def check_embedding_shape(embeddings: Any, count: int, dim: int | None) -> None:
    if tuple(embeddings.shape) != (count, dim):
        raise ValueError(f"the model gave embeddings of shape {tuple(embeddings.shape)}, expected ({count}, {dim})")


def embedding_batches(embeddings: Any, count: int, dim: int | None) -> Iterable[tuple[int, Any]]:
    """`(first_row, batch)` pieces of precomputed embeddings: one tensor/array, or `EmbeddingShards` (shard by
    shard), each checked to be `dim` wide."""
    if hasattr(embeddings, "iter_batches"):
        if embeddings.num_texts != count:
            raise ValueError(f"the shards hold {embeddings.num_texts} embeddings but {count} texts were given")
        pieces: Iterable[tuple[int, Any]] = ((int(rows[0]), batch) for rows, batch in embeddings.iter_batches())
    else:
        if isinstance(embeddings, torch.Tensor):
            embeddings = embeddings.detach().float().cpu().numpy()
        embeddings = np.asarray(embeddings, dtype=np.float32)
        if embeddings.ndim != 2 or len(embeddings) != count:
            raise ValueError(f"got {count} texts but embeddings of shape {tuple(embeddings.shape)}")
        pieces = [(0, embeddings)]
    for start, batch in pieces:
        check_embedding_shape(batch, len(batch), dim)
        yield start, batch


def embedding_table(embeddings: Any, count: int, dim: int | None) -> EmbeddingTable:
    """Every precomputed embedding in one in-memory table, checked to be one `dim`-wide row per text."""
    table = EmbeddingTable(dim)
    for _, batch in embedding_batches(embeddings, count, dim):
        table.append(batch)
    if len(table) != count:
        raise ValueError(f"got {count} texts but {len(table)} embeddings")
    return table


def assembled_embeddings(shards: Any, shards_dir: Path) -> EmbeddingTable:
    """The shards' embeddings as one memory-mapped `.npy` beside them, written once (by the main process under
    `accelerate launch`, the others waiting) and reused by a build that is started again."""
    from accelerate import PartialState

    file = shards_dir / ASSEMBLED_NAME
    state = PartialState()
    if state.is_main_process and not file.is_file():
        staging = partial_name(file)  # a writer's own temporary name: `remove_partial_files` knows it
        shards.write_npy(staging)
        os.replace(staging, file)  # never a half-written file under the final name
    state.wait_for_everyone()
    return EmbeddingTable.open_npy(file, mmap=True)


__all__ = ["ASSEMBLED_NAME", "assembled_embeddings", "check_embedding_shape", "embedding_batches", "embedding_table"]
