"""`EmbeddingShards`: a finished shards folder read back, by batches in row order or assembled into one `.npy` file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from hfsiamese.search.shards.manifest import MANIFEST_NAME, read_manifest
from hfsiamese.search.shards.shard_files import num_shards, partial_name, read_shard, shard_path, shard_rows
from hfsiamese.search.stores.embedding_table import write_npy_rows


@dataclass(frozen=True)
class EmbeddingShards:
    """
    A complete shards folder (see `hfsiamese.search.shards`): its manifest checked and every shard present.

    `iter_batches` reads the embeddings in row order, shard by shard; `write_npy` assembles them into one
    `.npy` file without holding more than a shard in memory; `to_numpy` returns them all (small corpora).
    """

    shards_dir: Path
    num_texts: int
    shard_size: int
    embedding_dim: int
    manifest: dict[str, Any] = field(repr=False)

    @classmethod
    def open(cls, shards_dir: str | os.PathLike) -> EmbeddingShards:
        """The shards in `shards_dir`; an error if its manifest is missing or damaged, or any shard is missing."""
        path = Path(shards_dir)
        manifest = read_manifest(path)
        if manifest is None:
            raise FileNotFoundError(f"{path / MANIFEST_NAME} is missing: {path} is not a folder of embedding shards")
        shards = cls(path, manifest["num_texts"], manifest["shard_size"], manifest["embedding_dim"], manifest)
        missing = [index for index in range(shards.num_shards) if not shard_path(path, index).is_file()]
        if missing:
            names = ", ".join(shard_path(path, index).name for index in missing[:3]) + (
                ", ..." if len(missing) > 3 else ""
            )
            raise FileNotFoundError(
                f"{len(missing)} of {shards.num_shards} shards are missing in {path} ({names}): run the encoding again "
                "with the same texts, model and shard_size, it resumes and encodes only those"
            )
        return shards

    @property
    def num_shards(self) -> int:
        return num_shards(self.num_texts, self.shard_size)

    def shard_paths(self) -> list[Path]:
        return [shard_path(self.shards_dir, index) for index in range(self.num_shards)]

    def iter_batches(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """`(rows, embeddings)` of each shard in turn, in row order: int64 `(n,)` and float32 `(n, embedding_dim)`."""
        pool = pa.default_memory_pool()
        for index, path in enumerate(self.shard_paths()):
            yield read_shard(path, shard_rows(index, self.shard_size, self.num_texts), self.embedding_dim)
            # Arrow's allocator keeps freed shards for reuse: without this, reading 40 shards of a 10M corpus
            # one after the other had held ~15 GB (measured: 2 GB resident after 1M rows, 0.7 GB with it).
            pool.release_unused()

    def write_npy(self, path: str | os.PathLike) -> np.memmap:
        """
        All embeddings in row order as a float32 `(num_texts, embedding_dim)` `.npy` file at `path`, written
        shard by shard (under a temporary name, moved into place when complete), and returned opened
        read-only and memory-mapped.
        """
        path = Path(path)
        partial = partial_name(path)
        try:
            # iter_batches checks that each shard holds its consecutive range of rows, in order.
            write_npy_rows(partial, (self.num_texts, self.embedding_dim), (batch for _, batch in self.iter_batches()))
            os.replace(partial, path)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        return np.load(path, mmap_mode="r")

    def to_numpy(self) -> np.ndarray:
        """All embeddings in row order, in memory: float32 `(num_texts, embedding_dim)`."""
        result = np.empty((self.num_texts, self.embedding_dim), dtype=np.float32)
        for rows, embeddings in self.iter_batches():
            result[rows[0] : rows[-1] + 1] = embeddings
        return result
