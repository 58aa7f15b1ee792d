"""
The shard files of a shards folder: which rows each shard holds, its name, and writing and reading one.

A shard is written under a temporary name and moved into place whole (`os.replace`), so a file named
`shard-00000.parquet` is complete, and whoever finds it there skips that shard; a writer killed mid-write
leaves only a `.partial` file, which never counts.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SHARD_PATTERN = "shard-*.parquet"
PARTIAL_SUFFIX = ".partial"
_PARTIAL_NAME = re.compile(rf"\..+\.[0-9a-f]{{12}}{re.escape(PARTIAL_SUFFIX)}")  # what `partial_name` makes


def num_shards(num_texts: int, shard_size: int) -> int:
    return -(-num_texts // shard_size)


def shard_range(index: int, shard_size: int, num_texts: int) -> tuple[int, int]:
    """`(start, end)` rows of shard `index`."""
    return index * shard_size, min((index + 1) * shard_size, num_texts)


def shard_rows(index: int, shard_size: int, num_texts: int) -> range:
    return range(*shard_range(index, shard_size, num_texts))


def shard_path(shards_dir: Path, index: int) -> Path:
    return shards_dir / f"shard-{index:05d}.parquet"


def present_shards(shards_dir: Path, total: int) -> set[int]:
    """Indices (below `total`) of the shard files in `shards_dir`: each one is complete, as it was moved in whole."""
    names = {shard_path(shards_dir, index).name: index for index in range(total)}
    try:
        return {names[entry.name] for entry in os.scandir(shards_dir) if entry.name in names}
    except FileNotFoundError:
        return set()


def write_shard(shards_dir: Path, index: int, start: int, embeddings: np.ndarray) -> Path:
    """
    Write shard `index` (rows `start`, `start + 1`, ...) under a temporary name beside its final one, flushed to
    disk, and move it into place: a process killed while writing leaves a `.partial` file that never counts.
    """
    count, dim = embeddings.shape
    table = pa.table(
        {
            "row": pa.array(np.arange(start, start + count, dtype=np.int64)),
            "embedding": pa.FixedSizeListArray.from_arrays(pa.array(embeddings.reshape(-1), type=pa.float32()), dim),
        }
    )
    # Embeddings hardly compress; spare the CPU.
    return write_table_whole(table, shard_path(shards_dir, index), compression="none")


def write_table_whole(table: pa.Table, final: Path, **write_options: Any) -> Path:
    """
    Write `table` as Parquet under a temporary name beside `final`, flushed to disk, and move it into place: a
    process killed while writing leaves a `.partial` file that never counts (`write_options`: `pq.write_table`'s).
    """
    partial = partial_name(final)
    try:
        with open(partial, "wb") as handle:
            pq.write_table(table, handle, **write_options)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, final)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return final


def read_shard(path: Path, rows: range, embedding_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """`(rows, embeddings)` of a shard file, checked to hold exactly `rows` at `embedding_dim`."""
    remedy = "delete it and run the encoding again, which re-encodes it"
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowException) as err:
        raise ValueError(f"{path} is corrupted (cannot be read as Parquet: {err}); {remedy}") from err
    column_type = table.schema.field("embedding").type if "embedding" in table.schema.names else None
    expected_type = pa.list_(pa.float32(), embedding_dim)
    if "row" not in table.schema.names or column_type != expected_type:
        raise ValueError(
            f"{path} should have the columns 'row' and 'embedding' ({expected_type}), found {table.schema}; {remedy}"
        )
    found = table.column("row").to_numpy()
    if len(found) != len(rows) or (len(found) and (found[0] != rows.start or np.any(np.diff(found) != 1))):
        raise ValueError(f"{path} should hold rows {rows.start} to {rows.stop - 1}; {remedy}")
    embeddings = table.column("embedding").combine_chunks().flatten().to_numpy().reshape(len(found), embedding_dim)
    return found.astype(np.int64, copy=False), embeddings


def partial_files(shards_dir: Path) -> list[Path]:
    """The temporary files `partial_name` names in `shards_dir` (`.NAME.<12 hex>.partial`): a file of the user's
    that merely ends in `.partial` is not one."""
    return [path for path in shards_dir.glob(f".*{PARTIAL_SUFFIX}") if _PARTIAL_NAME.fullmatch(path.name)]


def remove_partial_files(shards_dir: Path) -> None:
    """Remove the temporary files of writers killed in an earlier run (call it only when no writer is running)."""
    for leftover in partial_files(shards_dir):
        leftover.unlink(missing_ok=True)


def partial_name(path: Path) -> Path:
    """A temporary name beside `path`, unique to this writer (two writers of one shard never share a file)."""
    return path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}{PARTIAL_SUFFIX}")
