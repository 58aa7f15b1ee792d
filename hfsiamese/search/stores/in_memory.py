"""
The `"exact"` store of a `DuplicateIndex`: ids and texts in a `datasets.Dataset`, the float32 embeddings in an
`EmbeddingTable` (in memory, or memory-mapped from a saved index folder), searched exactly and chunk by chunk
with `exact.topk_cosine` (no extra install). Rows are numbered in insertion order; `topk` answers with row
numbers, which `matches` turns into match dicts with one read of the corpus.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import torch

from hfsiamese.search.input_checks import check_metadata
from hfsiamese.search.stores.base import RowBatch, rows_dataset
from hfsiamese.search.stores.embedding_table import EmbeddingTable
from hfsiamese.search.stores.index_files import write_index_folder
from hfsiamese.search.stores.matches import match
from hfsiamese.search.stores.prefix_search import ExactPrefixSearch, PrefixSearch
from hfsiamese.search.stores.store_checks import check_batch_size
from hfsiamese.utils.exact_topk import topk_cosine

# Rows an `add` leaves pending at most before they are folded into the corpus (see `InMemoryStore.__init__`).
_PENDING_ROWS = 4096

NeighbourSearch = Callable[[int, int, int], tuple[torch.Tensor, torch.Tensor]]
"""`(start, stop, k) -> (scores, rows)`: rows `start:stop`'s `k` nearest other rows (`paraphrase_pairs`)."""


class InMemoryStore:
    """Rows kept in this process, searched exactly; `query_chunk_size * corpus_chunk_size * 4` bytes at most of
    scores at a time, whatever the corpus size."""

    database = False  # the rows live in this process; `save` writes them into the index folder
    numbered_rows = True

    def __init__(self, embedding_dim: int | None, *, query_chunk_size: int = 1024, corpus_chunk_size: int = 65536):
        self.embedding_dim = embedding_dim
        self.query_chunk_size = query_chunk_size
        self.corpus_chunk_size = corpus_chunk_size
        self.table = EmbeddingTable(embedding_dim or 0)
        self._corpus: datasets.Dataset | None = None
        # Rows added since the corpus was last read whole, kept as plain lists and folded into it in one go when
        # it is (`corpus`), or at `_PENDING_ROWS`: a `datasets` concatenation per `add` of one question cost ~5 ms
        # and enough short-lived objects to run a full garbage collection (~0.2 s with torch loaded) every ~60 adds,
        # the p99 of keeping groups current. Searches read pending rows directly (`_ids_and_texts`).
        self._pending_ids: list[Any] = []
        self._pending_texts: list[str] = []
        # id -> row number, built on first need (a loaded index searched only never pays for it), then kept current
        self._row_of: dict[Any, int] | None = None
        self._arrow_view: tuple[datasets.Dataset, datasets.Dataset] | None = None  # the corpus it formats, its view

    def __len__(self) -> int:
        return self._stored_rows() + len(self._pending_ids)

    def _stored_rows(self) -> int:
        return 0 if self._corpus is None else self._corpus.num_rows

    @property
    def corpus(self) -> datasets.Dataset | None:
        """Every id and text (`id`, `text`), in row order."""
        if self._pending_ids:
            rows = rows_dataset(self._pending_ids, self._pending_texts)
            self._corpus = rows if self._corpus is None else datasets.concatenate_datasets([self._corpus, rows])
            self._pending_ids, self._pending_texts = [], []
        return self._corpus

    @corpus.setter
    def corpus(self, rows: datasets.Dataset | None) -> None:
        self._corpus, self._pending_ids, self._pending_texts = rows, [], []

    def _ids_and_texts(self, rows: list[int]) -> tuple[list[Any], list[str]]:
        """The ids and texts of these row numbers, in their order, pending rows read where they wait."""
        stored = self._stored_rows()
        if not rows:
            return [], []
        if max(rows) < stored:
            found = self._stored_ids_and_texts(rows)
            return found["id"], found["text"]
        older = [row for row in rows if row < stored]
        found = self._stored_ids_and_texts(older) if older else {"id": [], "text": []}
        ids, texts = iter(found["id"]), iter(found["text"])
        pairs = [
            (next(ids), next(texts))
            if row < stored
            else (self._pending_ids[row - stored], self._pending_texts[row - stored])
            for row in rows
        ]
        return [member for member, _ in pairs], [text for _, text in pairs]

    def _stored_ids_and_texts(self, rows: list[int]) -> dict[str, list[Any]]:
        """The stored rows' ids and texts, taken as Arrow (datasets' Python formatting of each row was most of a
        served search's time after the model)."""
        assert self._corpus is not None
        if self._arrow_view is None or self._arrow_view[0] is not self._corpus:  # `with_format` copies the Dataset
            self._arrow_view = (self._corpus, self._corpus.with_format("arrow"))
        found = self._arrow_view[1][rows]
        return {"id": found.column("id").to_pylist(), "text": found.column("text").to_pylist()}

    # --- rows ------------------------------------------------------------------------------------

    def adopt(self, ids: list[Any], texts: list[str], table: EmbeddingTable) -> None:
        """Take a (memory-mapped) table of every row's embedding, with its ids and texts, as all this store holds."""
        self.corpus = rows_dataset(ids, texts)
        self.table = table
        self._row_of = None

    def add(
        self,
        ids: Sequence[int | str],
        texts: Sequence[str],
        embeddings: np.ndarray | torch.Tensor | EmbeddingTable,
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """Append rows (ids checked new by the index); the embeddings as given (the index normalises nothing)."""
        check_metadata(metadata, len(texts), database=False)
        table = embeddings if isinstance(embeddings, EmbeddingTable) else EmbeddingTable(self.embedding_dim, None)
        if not isinstance(embeddings, EmbeddingTable):
            table.append(embeddings)
        if len(table) != len(texts):
            raise ValueError(f"got {len(texts)} texts but {len(table)} embeddings")
        ids = list(ids)
        first = len(self)
        self._pending_ids.extend(ids)
        self._pending_texts.extend(texts)
        if len(self._pending_ids) >= _PENDING_ROWS:
            self.corpus  # noqa: B018  (folds the pending rows in)
        for _, chunk in table.chunks():
            self.table.append(chunk)
            self._appended(chunk)
        if self._row_of is not None:
            self._row_of.update(zip(ids, range(first, first + len(ids))))
        self._added()

    def _appended(self, chunk: torch.Tensor) -> None:
        """What a store that indexes the rows does with each chunk of new rows (a FAISS index takes them)."""

    def _added(self) -> None:
        """What a store that indexes the rows does once an add is done (a FAISS index may be measured again)."""

    def delete(self, ids: Sequence[int | str]) -> int:
        """Compact the rows: the kept ones are copied into memory."""
        doomed = set(ids) & self._row_numbers().keys()
        if not doomed:
            return 0
        keep = np.array([row for row, i in enumerate(self.corpus["id"]) if i not in doomed], dtype=np.int64)
        self.corpus = self.corpus.select(keep).flatten_indices() if len(keep) else None
        self.table = self.table.select(keep) if len(keep) else EmbeddingTable(self.embedding_dim)
        self._row_of = None  # the kept rows are numbered again
        return len(doomed)

    def contains(self, ids: Sequence[int | str]) -> list[bool]:
        existing = self._row_numbers()
        return [i in existing for i in ids]

    def _row_numbers(self) -> dict[Any, int]:
        """id -> row number."""
        if self._row_of is None:
            # The id column read as one Arrow column (a `Dataset` column iterated row by row formats each row: seconds
            # at 1M rows, and a service's first concurrent requests each started that build).
            corpus = self.corpus
            ids = [] if corpus is None else corpus.with_format("arrow")["id"].to_pylist()
            self._row_of = {member: row for row, member in enumerate(ids)}
        return self._row_of

    def rows_by_id(self, ids: Sequence[int | str]) -> tuple[list[str], np.ndarray]:
        """These ids' texts and embeddings, in their order: the id -> row map is read, never the whole corpus."""
        row_of = self._row_numbers()
        missing = [member for member in ids if member not in row_of]
        if missing:
            raise KeyError(f"ids not in the index: {missing[:5]}")
        if not ids:
            return [], np.empty((0, self.embedding_dim or 0), dtype=np.float32)
        rows = np.array([row_of[member] for member in ids], dtype=np.int64)
        return self._ids_and_texts(rows.tolist())[1], self.table.gather(rows)

    @property
    def int_ids(self) -> bool:
        """Whether the ids are ints (else strs), by the corpus's id column."""
        return self.corpus is not None and self.corpus.features["id"].dtype.startswith("int")

    @property
    def id_type(self) -> str | None:
        """`"int"` or `"str"` by the corpus's id column; None while empty."""
        return None if not len(self) else "int" if self.int_ids else "str"

    @property
    def memory_mapped(self) -> bool:
        return self.table.memory_mapped

    def finish_build(self) -> None:
        """Nothing: the rows are searched exactly as they are."""

    def iter_rows(self, batch_size: int = 10_000, *, with_vectors: bool = True) -> Iterator[RowBatch]:
        """Every row in row order, `batch_size` at a time (no metadata: an in-process store keeps none)."""
        check_batch_size(batch_size)
        for start in range(0, len(self), batch_size):
            rows = self.corpus[start : start + batch_size]
            vectors = self.table.gather(np.arange(start, start + len(rows["id"]))) if with_vectors else None
            yield rows["id"], rows["text"], vectors, [{} for _ in rows["id"]]

    # --- views (what `DuplicateIndex.corpus`, `.ids`, `.texts` and `.embeddings` give) --------------------

    def dataset(self) -> datasets.Dataset | None:
        return self.corpus

    def all_ids(self) -> list[int | str]:
        return [] if self.corpus is None else list(self.corpus["id"])

    def all_texts(self) -> list[str]:
        return [] if self.corpus is None else list(self.corpus["text"])

    def all_embeddings(self) -> torch.Tensor:
        return self.table.to_tensor()

    # --- search ----------------------------------------------------------------------------------

    def search(
        self, queries: np.ndarray | torch.Tensor, k: int, *, filter: dict[str, Any] | None = None
    ) -> list[list[dict[str, Any]]]:
        """The `k` nearest rows of each query, as match dicts (no filters: these rows carry no metadata)."""
        if filter is not None:
            raise ValueError('filter= needs a database backend ("lancedb" or "qdrant"): the texts there carry metadata')
        return self.matches(*self.topk(torch.as_tensor(queries).float(), k))

    def topk(self, queries: torch.Tensor, k: int, *, exact: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """`(scores, rows)` of each query's `k` nearest rows, best first (always exact here)."""
        return self.exact_topk(queries, k)

    def exact_topk(
        self, queries: torch.Tensor, k: int, exclude_indices: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact top-k over the embeddings, piece by piece (a memory-mapped file is read, never mapped whole), merged."""
        best: tuple[torch.Tensor, torch.Tensor] | None = None
        for offset, piece in self.table.chunks(self.corpus_chunk_size):
            scores, rows = topk_cosine(
                queries,
                piece,
                k,
                query_chunk_size=self.query_chunk_size,
                corpus_chunk_size=self.corpus_chunk_size,
                exclude_indices=None if exclude_indices is None else exclude_indices - offset,
            )
            rows = torch.where(rows >= 0, rows + offset, rows)
            if best is not None:
                scores, rows = torch.cat([best[0], scores], dim=1), torch.cat([best[1], rows], dim=1)
                scores, order = scores.topk(min(k, scores.shape[1]), dim=1)
                rows = rows.gather(1, order)
            best = (scores, rows)
        return best

    def prefix_search(self) -> PrefixSearch:
        """A search among the first rows only, exactly (`prefix_search`): what duplicate groups are mined with."""
        return ExactPrefixSearch(
            self.table, query_chunk_size=self.query_chunk_size, corpus_chunk_size=self.corpus_chunk_size
        )

    def neighbour_search(self) -> NeighbourSearch:
        """Each row's nearest other rows, exactly."""

        def neighbours(start: int, stop: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
            own = torch.arange(start, stop)
            return self.exact_topk(torch.from_numpy(self.table.gather(own.numpy())), k, exclude_indices=own)

        return neighbours

    def matches(
        self, scores: torch.Tensor, rows: torch.Tensor, threshold: float | None = None
    ) -> list[list[dict[str, Any]]]:
        """Per-query lists of match dicts from `(scores, rows)`, all rows fetched in one read (rows of -1 skipped)."""
        found_rows = rows.flatten()
        wanted = found_rows[found_rows >= 0].tolist()
        found_ids, found_texts = self._ids_and_texts(wanted)
        ids, texts = iter(found_ids), iter(found_texts)
        flat_scores = scores.flatten().tolist()
        per_query = rows.shape[1]
        return [
            [
                match(next(ids), next(texts), flat_scores[i], threshold=threshold)
                for i in range(start, start + per_query)
                if found_rows[i] >= 0
            ]
            for start in range(0, rows.numel(), per_query)
        ]

    # --- lifecycle -------------------------------------------------------------------------------

    def save(self, directory: str | os.PathLike, config: dict[str, Any], *, overwrite: bool = False) -> None:
        """The index folder: config, the corpus as Arrow and the embeddings as `.npy` (`index_files`)."""
        write_index_folder(Path(directory), self.table, self.corpus, config, overwrite=overwrite)

    def close(self) -> None:
        """Nothing to release: the rows live in this process (a memory map closes with the table)."""


__all__ = ["InMemoryStore", "NeighbourSearch"]
