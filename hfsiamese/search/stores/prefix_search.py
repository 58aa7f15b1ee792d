"""
A search among the first rows of a store only: what duplicate groups are mined with (`groups.earlier_links`).

A question's group links go to its nearest EARLIER questions. Searched among all rows, a question with many later
near-copies and few earlier ones must be searched past every later one before its earlier list is known: on a
corpus of a million questions with dense clusters, that is thousands of rows deep for many questions (and, through
a quantised FAISS index, thousands of rescored candidates each). Searched among the rows before it, one search of
`k` rows answers. `earlier_links` asks, chunk after chunk in row order, for each chunk's nearest rows among the rows
before the chunk (`PrefixSearch.before`) and compares the chunk's rows among themselves exactly.

* `ExactPrefixSearch`: exact, over the embedding table's first rows (no extra memory).
* `AnnPrefixSearch`: through a copy of a FAISS index that is filled in row order as the prefix grows (an IVF
  index searched on a prefix probes the same cells and finds what a filter to the prefix would; FAISS has no such
  filter for binary indexes, the default above `EXACT_UP_TO` rows).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np
import torch

from hfsiamese.search.stores.embedding_table import CHUNK_ROWS, EmbeddingTable
from hfsiamese.utils.exact_topk import topk_cosine

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.stores.ann_index import FaissAnnIndex

# `ann_topk(ann, queries, depth) -> (scores, rows)`: a store's search through a FAISS index (`FaissStore.ann_topk`).
AnnTopk = Callable[["FaissAnnIndex", np.ndarray, int], tuple[torch.Tensor, torch.Tensor]]


class PrefixSearch(Protocol):
    """The rows' embeddings, and a search among the rows before a given one."""

    def vectors(self, start: int, stop: int) -> np.ndarray:
        """Rows `start:stop`'s embeddings, `(stop - start, dim)` float32."""
        ...

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        """These rows' embeddings, in their order, `(len(rows), dim)` float32."""
        ...

    def before(self, queries: np.ndarray, start: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """`(scores, rows)`, `(len(queries), <= depth)`: each query's `depth` nearest rows among rows `0:start`, best
        first, rows of -1 (scores -inf) where the search found no more. `start` never decreases from one call to the
        next (an index filled as the prefix grows relies on it)."""
        ...


class ExactPrefixSearch:
    """Exact search over the first rows of `table`, a corpus piece at a time."""

    def __init__(self, table: EmbeddingTable, *, query_chunk_size: int = 1024, corpus_chunk_size: int = CHUNK_ROWS):
        self.table = table
        self.query_chunk_size, self.corpus_chunk_size = query_chunk_size, corpus_chunk_size

    @classmethod
    def of_vectors(cls, vectors: np.ndarray) -> ExactPrefixSearch:
        """Over a few L2-normalised rows held in an array (a group's members)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        return cls(EmbeddingTable(vectors.shape[1] if vectors.ndim == 2 else 0, vectors))

    def vectors(self, start: int, stop: int) -> np.ndarray:
        return self.table.gather(np.arange(start, stop))

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        return self.table.gather(np.asarray(rows, dtype=np.int64))

    def before(self, queries: np.ndarray, start: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
        best_scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
        best_rows = np.full((len(queries), 0), -1, dtype=np.int64)
        if depth < 1 or start < 1:
            return best_scores, best_rows
        asked = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32))
        for offset, piece in self.table.chunks(self.corpus_chunk_size):
            if offset >= start:
                break
            piece = piece[: start - offset]
            scores, rows = topk_cosine(
                asked, piece, depth, query_chunk_size=self.query_chunk_size, corpus_chunk_size=self.corpus_chunk_size
            )
            rows = torch.where(rows >= 0, rows + offset, rows)
            merged = best_scores.shape[1] > 0
            best_scores = np.concatenate([best_scores, scores.numpy()], axis=1)
            best_rows = np.concatenate([best_rows, rows.numpy()], axis=1)
            if merged:
                keep = np.argsort(-best_scores, axis=1, kind="stable")[:, :depth]
                best_scores = np.take_along_axis(best_scores, keep, axis=1)
                best_rows = np.take_along_axis(best_rows, keep, axis=1)
        return best_scores, best_rows


class AnnPrefixSearch:
    """Search through `empty`, a trained copy of a store's FAISS index without rows, filled with the rows of `table`
    in row order up to each search's `start`; `ann_topk(ann, queries, depth)` is the store's search through a FAISS
    index (its candidates rescored as the store rescores its own)."""

    def __init__(self, table: EmbeddingTable, empty: FaissAnnIndex, ann_topk: AnnTopk) -> None:
        self.table, self.ann, self._ann_topk, self.filled = table, empty, ann_topk, 0

    def vectors(self, start: int, stop: int) -> np.ndarray:
        return self.table.gather(np.arange(start, stop))

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        return self.table.gather(np.asarray(rows, dtype=np.int64))

    def before(self, queries: np.ndarray, start: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
        if start < self.filled:
            raise ValueError(f"a prefix search goes forward only: it holds {self.filled} rows, asked for {start}")
        for first in range(self.filled, start, CHUNK_ROWS):
            self.ann.add(self.table.gather(np.arange(first, min(first + CHUNK_ROWS, start))))
        self.filled = start
        if depth < 1 or start < 1:
            return np.full((len(queries), 0), -np.inf, dtype=np.float32), np.full((len(queries), 0), -1, np.int64)
        scores, rows = self._ann_topk(self.ann, np.ascontiguousarray(queries, dtype=np.float32), depth)
        return scores.numpy(), rows.numpy()


__all__ = ["AnnPrefixSearch", "ExactPrefixSearch", "PrefixSearch"]
