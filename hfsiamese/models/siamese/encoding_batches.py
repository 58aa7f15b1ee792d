"""
The batches `encode` feeds the model: texts tokenised in large chunks on a background thread while the
model embeds the previous chunk, each chunk sorted by token length and cut into padded batches with
array operations; or the token columns of a pre-tokenised `datasets.Dataset`, read without tokenising.

Tokenising one batch at a time with padding (`tokenizer(batch, padding=True, return_tensors="pt")`)
runs at less than half the tokenizer's own rate (its Python padding), and the model then waits for
it; here a fast tokenizer's Rust core encodes thousands of texts at once (in parallel, releasing the
GIL) without transformers' per-text Python wrapping, padding is a numpy scatter, and tokenising
overlaps the model. This file travels with every
checkpoint as remote code (the inference API imports it), so it imports only numpy, torch, the
standard library and its siblings (pyarrow, for a Dataset, is imported when one is given).
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .padding import pad_ragged, padded_width, ragged_from_arrow, ragged_from_rows, token_positions
from .token_fields import truncated_flags

# Texts tokenised per call of the tokenizer: large enough for its parallel batch encoder, small
# enough that the model starts early and that a chunk's token lists stay small.
CHUNK_TEXTS = 8192


@dataclass
class TokenChunk:
    """Ragged token ids (and token type ids, if the tokenizer makes them) of some texts, by position in the input."""

    positions: np.ndarray
    values: np.ndarray
    lengths: np.ndarray
    type_values: np.ndarray | None = None
    truncated: int = 0


@dataclass
class EncodeBatch:
    """One padded model batch and the input positions of its rows."""

    positions: np.ndarray
    features: dict[str, torch.Tensor]


def tokenize_chunk(tokenizer: Any, texts: Sequence[str], positions: np.ndarray, max_length: int) -> TokenChunk:
    """Tokenise `texts` unpadded (truncated to `max_length`) into one ragged chunk."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False):
        encoded = tokenizer(list(texts), truncation=True, max_length=max_length, return_attention_mask=False)
        values, lengths = ragged_from_rows(encoded["input_ids"])
        type_values = ragged_from_rows(encoded["token_type_ids"])[0] if "token_type_ids" in encoded else None
        return TokenChunk(positions, values, lengths, type_values, sum(truncated_flags(encoded, max_length)))
    encodings = _encode_with_backend(tokenizer, backend, texts, max_length)
    values, lengths = ragged_from_rows([encoding.ids for encoding in encodings])
    type_values = None
    if "token_type_ids" in getattr(tokenizer, "model_input_names", ()):
        type_values = ragged_from_rows([encoding.type_ids for encoding in encodings])[0]
    return TokenChunk(
        positions, values, lengths, type_values, sum(bool(encoding.overflowing) for encoding in encodings)
    )


def _encode_with_backend(tokenizer: Any, backend: Any, texts: Sequence[str], max_length: int) -> list[Any]:
    """
    The `tokenizers` library's own batch encoder, without transformers' Python wrapping: the same ids
    and type ids as `tokenizer(texts, truncation=True, max_length=...)` (special tokens added, cut on
    the tokenizer's truncation side), at ~2.5× its rate on QQP questions, since no per-text dicts of
    lists are built. The backend's truncation and padding settings are restored afterwards.
    """
    truncation, padding = backend.truncation, backend.padding
    try:
        backend.no_padding()
        backend.enable_truncation(max_length, direction=getattr(tokenizer, "truncation_side", "right"))
        encode = getattr(backend, "encode_batch_fast", backend.encode_batch)  # no character offsets needed
        return encode(list(texts), add_special_tokens=True)
    finally:
        if truncation is None:
            backend.no_truncation()
        else:
            backend.enable_truncation(**truncation)
        if padding is not None:
            backend.enable_padding(**padding)


def padded_batches(chunk: TokenChunk, batch_size: int, pad_token_id: int, padding_side: str) -> Iterator[EncodeBatch]:
    """The chunk's texts sorted by length (longest first) and cut into batches padded to their own longest text."""
    order = np.argsort(-chunk.lengths, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(chunk.lengths)])
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        lengths = chunk.lengths[rows]
        take = _token_indices(offsets[rows], lengths)
        width = padded_width(lengths)
        where = token_positions(lengths, width, padding_side)
        features = {
            "input_ids": pad_ragged(chunk.values[take], where, pad_token_id),
            "attention_mask": torch.from_numpy(where.astype(np.int64)),
        }
        if chunk.type_values is not None:
            features["token_type_ids"] = pad_ragged(chunk.type_values[take], where, 0)
        yield EncodeBatch(chunk.positions[rows], features)


def text_chunks(
    texts: Sequence[str], tokenizer: Any, max_length: int, chunk_texts: int = CHUNK_TEXTS
) -> Iterator[TokenChunk]:
    """Tokenised chunks of `texts`, in input order, produced on a background thread one chunk ahead."""
    starts = range(0, len(texts), chunk_texts)
    return _ahead(
        tokenize_chunk(
            tokenizer, texts[s : s + chunk_texts], np.arange(s, min(s + chunk_texts, len(texts))), max_length
        )
        for s in starts
    )


def dataset_chunk(dataset: Any, max_length: int | None) -> TokenChunk:
    """
    The token columns of a pre-tokenised `datasets.Dataset` (`input_ids`, optional `token_type_ids`) as one
    ragged chunk, read from Arrow without a Python object per token. Rows longer than `max_length` are cut
    (counted as truncated), as the tokenizer would have cut them.
    """
    if "input_ids" not in dataset.column_names:
        raise ValueError(
            f"a Dataset given to encode needs an `input_ids` column (tokenise it first); columns: {dataset.column_names}"
        )
    indices = getattr(dataset, "_indices", None)  # after select/shuffle/split: one take, not a copy of every column

    def ragged(name: str) -> tuple[np.ndarray, np.ndarray]:
        column = dataset.data.column(name)
        return ragged_from_arrow(column.take(indices.column(0)) if indices is not None else column, name)

    values, lengths = ragged("input_ids")
    type_values = ragged("token_type_ids")[0] if "token_type_ids" in dataset.column_names else None
    truncated = 0
    if max_length is not None and len(lengths) and int(lengths.max()) > max_length:
        keep = _token_indices(np.cumsum(lengths) - lengths, np.minimum(lengths, max_length))
        truncated = int((lengths > max_length).sum())
        values = values[keep]
        type_values = type_values[keep] if type_values is not None else None
        lengths = np.minimum(lengths, max_length)
    return TokenChunk(np.arange(len(lengths)), values, lengths, type_values, truncated)


def _token_indices(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Indices into a flat token array of `counts[i]` tokens from `starts[i]`, row after row, as one array."""
    counts = counts.astype(np.int64, copy=False)
    firsts = np.cumsum(counts) - counts  # where each row begins in the output
    return np.arange(int(counts.sum()), dtype=np.int64) + np.repeat(starts.astype(np.int64) - firsts, counts)


def _ahead(items: Iterator[Any]) -> Iterator[Any]:
    """
    Run the iterator `items` on a background thread, one item ahead of the consumer. An exception raised
    while producing reaches the consumer at the item where it happened; a consumer that stops early
    (an exception of its own) stops the producer after the item in hand.
    """
    handoff: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                handoff.put((item, None))
            handoff.put((done, None))
        except BaseException as err:  # noqa: BLE001  handed to the consumer, which raises it
            handoff.put((done, err))

    worker = threading.Thread(target=produce, name="hfsiamese-tokenizer", daemon=True)
    worker.start()
    try:
        while True:
            item, err = handoff.get()
            if err is not None:
                raise err
            if item is done:
                return
            yield item
    finally:
        stop.set()
        while worker.is_alive():  # unblock a producer waiting to hand over an item
            with contextlib.suppress(queue.Empty):
                handoff.get(timeout=0.05)
        worker.join()


__all__ = [
    "CHUNK_TEXTS",
    "EncodeBatch",
    "TokenChunk",
    "dataset_chunk",
    "padded_batches",
    "text_chunks",
    "tokenize_chunk",
]
