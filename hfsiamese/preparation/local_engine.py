"""
Preparation's parallel stages on this machine (`prepare_pairs(engine="local")`, the default): the questions hashed by
`datasets.map(num_proc=...)`, the shards written by a pool of `num_proc` processes that each read the pairs'
memory-mapped Arrow files themselves. `ray_engine` runs the same stages as Ray tasks, with the same row functions.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
from datasets.table import MemoryMappedTable

from hfsiamese.data.arrow_batches import ChunkedRows
from hfsiamese.data.question_identity import column_numpy
from hfsiamese.preparation.pair_rows import hash_batch, shard_table
from hfsiamese.preparation.shards import write_shard

__all__ = ["LocalPreparation"]


class LocalPreparation:
    """Stages 2 and 4 in `num_proc` processes of this machine (one, in this process, when None or 1)."""

    def __init__(self, num_proc: int | None = None) -> None:
        self._num_proc = num_proc if num_proc and num_proc > 1 else None

    def hash_questions(self, pairs: datasets.Dataset) -> tuple[np.ndarray, np.ndarray]:
        """Stage 2: (hash1, hash2) of every pair, in row order."""
        hashes = pairs.with_format("arrow").map(
            hash_batch,
            batched=True,
            batch_size=10_000,
            num_proc=self._num_proc,
            remove_columns=pairs.column_names,
            features=datasets.Features({"hash1": datasets.Value("uint64"), "hash2": datasets.Value("uint64")}),
            desc="Hashing questions",
        )
        return column_numpy(hashes, "hash1"), column_numpy(hashes, "hash2")

    def write_shards(
        self, pairs: datasets.Dataset, todo: list[tuple[Path, np.ndarray, np.ndarray | None]]
    ) -> Iterator[dict[str, Any]]:
        """Stage 4: each (path, rows of `pairs`, groups) written as a shard; their records as they are written."""
        files = [entry["filename"] for entry in pairs.cache_files]
        if self._num_proc and len(todo) > 1 and files:
            # fork where there is one, as `datasets.map(num_proc=...)` does (Arrow re-creates its thread pools in a
            # child); spawn would leave a resource tracker process running beside the caller's.
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            with ProcessPoolExecutor(min(self._num_proc, len(todo)), mp_context=context) as pool:
                futures = [pool.submit(_write_shard_of_files, files, rows, groups, path) for path, rows, groups in todo]
                for future in as_completed(futures):
                    yield future.result()
        else:
            table = ChunkedRows(pairs.data.table)
            for path, rows, groups in todo:
                yield write_shard(shard_table(table.take(rows), groups), path)


def _write_shard_of_files(files: list[str], rows: np.ndarray, groups: np.ndarray | None, path: Path) -> dict[str, Any]:
    """A worker's shard: the pairs read from their memory-mapped Arrow files (the ones `load_pairs` wrote)."""
    table = pa.concat_tables([MemoryMappedTable.from_file(name).table for name in files])
    return write_shard(shard_table(ChunkedRows(table).take(rows), groups), path)
