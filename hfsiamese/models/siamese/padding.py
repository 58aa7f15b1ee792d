"""
Padding ragged token columns into int64 matrices with whole-batch array operations.

A batch of tokenised texts is ragged: one flat array of token ids and one length per text. Padding
it row by row in Python (as `tokenizer.pad` does over lists of lists) costs more than a small
encoder's forward pass at large batches; here the padded matrix is one `np.full` and one boolean
scatter, whatever the batch size. The collator and `encode` both pad here; this file travels with
every checkpoint as remote code, so it imports only numpy, torch and the standard library.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np
import torch

__all__ = ["is_right_padded", "pad_ragged", "padded_width", "ragged_from_arrow", "ragged_from_rows", "token_positions"]


def ragged_from_arrow(column: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """
    The flat int64 values and per-row lengths of an Arrow list column, without Python objects per row.
    `list_flatten` and `list_value_length` respect slices and chunks (a taken batch may be a slice of a
    larger buffer, whose raw `.values` child would hold rows outside it). pyarrow is imported here, not at
    the top: it is there whenever an Arrow column is, but not everywhere this file runs as remote code.
    """
    pc = importlib.import_module("pyarrow.compute")
    if column.null_count:
        raise ValueError(f"column {name!r} holds {column.null_count} null rows: tokenise every text first")
    values = pc.list_flatten(column).to_numpy().astype(np.int64, copy=False)
    return values, pc.list_value_length(column).to_numpy().astype(np.int64)


def ragged_from_rows(rows: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The flat values and per-row lengths of a list of token sequences (lists, numpy arrays or tensors)."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    if rows and isinstance(rows[0], (np.ndarray, torch.Tensor)):
        values = np.concatenate([np.asarray(row, dtype=np.int64).reshape(-1) for row in rows])
    else:
        values = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
    return values, lengths


def padded_width(lengths: np.ndarray, pad_to_multiple_of: int | None = None) -> int:
    """The longest row, rounded up to a multiple of `pad_to_multiple_of` (as `tokenizer.pad` rounds)."""
    width = int(lengths.max()) if len(lengths) else 0
    if pad_to_multiple_of is not None and width % pad_to_multiple_of != 0:
        width = (width // pad_to_multiple_of + 1) * pad_to_multiple_of
    return width


def token_positions(lengths: np.ndarray, width: int, padding_side: str) -> np.ndarray:
    """Boolean `(rows, width)` matrix: True where a row's tokens go, on the side away from the padding."""
    columns = np.arange(width)
    if padding_side == "right":
        return columns < lengths[:, None]
    if padding_side == "left":
        return columns >= (width - lengths)[:, None]
    raise ValueError(f"Invalid padding strategy:{padding_side}")  # tokenizer.pad's own words


def pad_ragged(values: np.ndarray, positions: np.ndarray, pad_value: int) -> torch.Tensor:
    """An int64 tensor of `positions`' shape: `values` at the True positions in row order, `pad_value` elsewhere."""
    padded = np.full(positions.shape, pad_value, dtype=np.int64)
    padded[positions] = values
    return torch.from_numpy(padded)


def is_right_padded(attention_mask: torch.Tensor) -> bool:
    """Is every row of the mask of the form ``1…1 0…0``?"""
    lengths = attention_mask.sum(dim=1)
    positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
    return torch.equal(attention_mask.bool(), positions.unsqueeze(0) < lengths.unsqueeze(1))
