"""
A torch view of a tokenised `datasets.Dataset` that hands the DataLoader whole batches as Arrow tables.

A `datasets.Dataset` gives a DataLoader a list of row dicts: every token id becomes a Python int,
and the collator turns them back into arrays. At batch 1024 on a small encoder that round trip costs
more than the model. The torch DataLoader calls `__getitems__` with a batch sampler's whole list of
indices; here it returns one Arrow table of those rows, which `SiamesePairCollator` pads with array
operations.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import torch

from hfsiamese.data.collator import PAIR_BATCH_COLUMNS

__all__ = ["ArrowBatchDataset", "arrow_batch_dataset"]


class ArrowBatchDataset(torch.utils.data.Dataset):
    """
    Rows of `dataset` for a DataLoader: `__getitems__(indices)` is one Arrow table of those rows (only
    the `columns` the collator reads, in the order asked), `__getitem__(i)` one row as `dataset[i]`
    gives it, `len` the number of rows. `dataset` is kept as `.dataset` (samplers read its columns).

    The columns are gathered into one contiguous Arrow chunk when the view is made: a data set
    written by `map` is stored as one chunk per 1,000 rows, and Arrow's `take` over many chunks
    concatenates them on every call (~19 ms per batch at 400k rows, against ~1.5 ms from one chunk).
    That costs memory about the size of the token columns, once per process; it is made before a
    DataLoader forks its workers, which then share it. Text columns (pairs a collator tokenises, millions of
    them in memory-mapped shards) are not gathered: a batch takes its rows chunk by chunk (`take_rows`).

    A data set with a custom formatting transform (`set_transform`/`with_transform`) is served as the
    transform gives it, row dicts, since its rows are not its Arrow columns.
    """

    def __init__(self, dataset: datasets.Dataset, columns: Sequence[str] = PAIR_BATCH_COLUMNS) -> None:
        if not isinstance(dataset, datasets.Dataset):
            raise TypeError(f"arrow_batch_dataset takes a datasets.Dataset, got {type(dataset).__name__}")
        self.dataset = dataset
        self.columns = tuple(columns)
        self._table: pa.Table | None = None
        self._chunks: ChunkedRows | None = None
        self._indices: np.ndarray | None = None
        form = dataset.format
        if form["type"] == "custom":
            return
        shown = dataset.column_names if form["output_all_columns"] else form["columns"]
        names = [name for name in self.columns if name in shown]
        selected = dataset.data.table.select(names)
        if any(pa.types.is_string(kind) or pa.types.is_large_string(kind) for kind in selected.schema.types):
            self._chunks = ChunkedRows(selected)
        else:
            self._table = selected.combine_chunks()
        indices = getattr(dataset, "_indices", None)  # private, but stable since datasets 1.x (see arrow_columns.py)
        if indices is not None:
            self._indices = indices.column(0).to_numpy().astype(np.int64)

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.dataset[index]

    def __getitems__(self, indices: Sequence[int]) -> pa.Table | list[dict[str, Any]]:
        if self._table is None and self._chunks is None:
            return self.dataset.__getitems__(list(indices))
        rows = np.asarray(indices, dtype=np.int64).reshape(-1)
        size = len(self)
        if rows.size and (rows.min() < -size or rows.max() >= size):
            bad = rows[(rows < -size) | (rows >= size)][0]
            raise IndexError(f"Invalid key: {bad} is out of bounds for size {size}")
        rows = np.where(rows < 0, rows + size, rows)
        if self._indices is not None:
            rows = self._indices[rows]
        if self._chunks is not None:
            return self._chunks.take(rows)
        assert self._table is not None
        return self._table.take(rows)

    def __getstate__(self) -> dict[str, Any]:
        # The data set pickles by reference to its cache files; the gathered chunk would be copied whole.
        return {"dataset": self.dataset, "columns": self.columns}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["dataset"], state["columns"])


class ChunkedRows:
    """
    Rows of a table of many chunks, taken chunk by chunk: Arrow's `take` on such a table concatenates every chunk it
    holds first (hundreds of milliseconds per batch on a few million memory-mapped pairs); taking each row from its
    own chunk reads only those rows. A chunk asked for one row gives it as a one-row slice (no compute call: the rows
    of a batch drawn from tens of millions of pairs are nearly all in different chunks, and a `take` call per row was
    ~3 ms a batch of 64); a chunk asked for several gives them with one `take`. Written by hand because Arrow offers
    no take that leaves the other chunks alone.
    """

    def __init__(self, table: pa.Table) -> None:
        self._batches = table.to_batches()  # zero-copy slices of the (memory-mapped) chunks
        self._schema = table.schema
        self._starts = np.cumsum([0] + [batch.num_rows for batch in self._batches])

    def take(self, rows: np.ndarray) -> pa.Table:
        """The rows `rows` (non-negative, in range), in that order."""
        if not len(rows):
            return self._schema.empty_table()
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        chunk_of = np.searchsorted(self._starts, ordered, side="right") - 1
        local = ordered - self._starts[chunk_of]
        bounds = np.flatnonzero(np.r_[True, chunk_of[1:] != chunk_of[:-1], True]).tolist()
        chunks, offsets = chunk_of.tolist(), local.tolist()
        parts = []
        for first, last in itertools.pairwise(bounds):
            batch = self._batches[chunks[first]]
            if last - first == 1:
                parts.append(batch.slice(offsets[first], 1))
            else:
                parts.append(batch.take(pa.array(local[first:last])))
        gathered = pa.Table.from_batches(parts, schema=self._schema).combine_chunks()
        if np.array_equal(order, np.arange(len(rows))):
            return gathered
        return gathered.take(pa.array(np.argsort(order, kind="stable")))  # back to the order asked


def arrow_batch_dataset(dataset: datasets.Dataset, columns: Sequence[str] = PAIR_BATCH_COLUMNS) -> ArrowBatchDataset:
    """`dataset` as a DataLoader dataset whose batches are Arrow tables of the pair columns (see `ArrowBatchDataset`)."""
    return ArrowBatchDataset(dataset, columns)
