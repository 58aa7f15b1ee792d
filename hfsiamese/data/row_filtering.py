"""The rows of a data set where a mask is true, kept as a flat memory-mapped Arrow table (for millions of rows)."""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa

__all__ = ["keep_rows"]


def keep_rows(dataset: datasets.Dataset, keep: np.ndarray, *, desc: str | None = None) -> datasets.Dataset:
    """
    The rows where `keep` (a bool per row) is true, as a flat Arrow data set in `dataset`'s format.

    `select` + `flatten_indices` would do, but flattening gathers row by row (minutes for millions
    of rows); a batched Arrow `map` that returns fewer rows filters whole batches, and writes a
    cache file next to `dataset`'s when it has some (memory-mapped, like the input). `desc` names
    the step on its progress bar.
    """
    fmt = dataset.format
    kept = dataset.with_format("arrow").map(
        _filter_batch,
        batched=True,
        batch_size=10_000,
        with_indices=True,
        features=dataset.features,
        fn_kwargs={"keep": keep},
        desc=desc,
    )
    return kept.with_format(
        fmt["type"], columns=fmt["columns"], output_all_columns=fmt["output_all_columns"], **fmt["format_kwargs"]
    )


def _filter_batch(batch: pa.Table, indices: list[int], *, keep: np.ndarray) -> pa.Table:
    return batch.filter(pa.array(keep[np.asarray(indices, dtype=np.int64)]))
