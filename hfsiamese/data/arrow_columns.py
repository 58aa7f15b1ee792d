"""Reading whole columns of a `datasets.Dataset` fast, as Arrow or numpy, and telling their Arrow types apart."""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def column_arrow(dataset: datasets.Dataset, name: str) -> pa.ChunkedArray:
    """
    One column as Arrow, in the data set's row order, without Python objects per row.

    `dataset.with_format("arrow")[name]` would do, but on a data set with an indices mapping
    (after `select`/`filter`/`shuffle`, e.g. a split) it gathers row by row into one Arrow chunk
    per row, which makes every later compute call crawl (seconds per 100k rows). One `take` over
    the indices mapping gives the same values in a few chunks.
    """
    if name not in dataset.column_names:
        raise ValueError(f"the data set has no {name!r} column (columns: {dataset.column_names})")
    column = dataset.data.column(name)
    indices = getattr(dataset, "_indices", None)  # private, but stable since datasets 1.x
    if indices is not None:
        column = column.take(indices.column(0))
    return column


def column_numpy(dataset: datasets.Dataset, name: str) -> np.ndarray:
    """One column as a numpy array, in the data set's row order (see `column_arrow`)."""
    return column_arrow(dataset, name).to_numpy()


def distinct_count(dataset: datasets.Dataset, name: str) -> int:
    """How many distinct values one column holds (Arrow's hash-based count: no Python object per row)."""
    return int(pc.count_distinct(column_arrow(dataset, name)).as_py())


def is_json_type(kind: pa.DataType) -> bool:
    """Arrow's JSON extension type: what `datasets` gives a JSON column whose values mix types."""
    return getattr(kind, "extension_name", None) == "arrow.json"
