"""
The full-precision embeddings of a `DuplicateIndex`: in memory, or memory-mapped from the index's
`embeddings.npy` with the rows added since kept in memory beside it.

Memory-mapping lets a corpus exceed RAM: a quantised FAISS index keeps only its small codes in
memory and reads the few rows it rescores from here (the operating system pages them in and out);
exact search reads the file in chunks. Rows added to a memory-mapped table are never appended to the
file (which may be what another process is reading); `save` writes a new one.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

# Rows per chunk when a table is read or written piece by piece (64k x 384 float32 = 96 MiB).
CHUNK_ROWS = 65536
# Up to this many rows, a gather from a memory-mapped table reads them with `pread` (see `_pread_rows`).
PREAD_MAX_ROWS = 16384


class EmbeddingTable:
    """`(num_rows, dim)` float32 rows: a base (array or memory map) followed by rows appended in memory."""

    def __init__(self, dim: int, base: np.ndarray | None = None) -> None:
        self.dim = dim
        self._base = base if base is not None else np.empty((0, dim), dtype=np.float32)
        self._tail: list[np.ndarray] = []
        self._tail_rows = 0
        self._file: Any = None  # the memory-mapped file, opened for `pread` on first need

    @classmethod
    def open_npy(cls, file: Path, *, mmap: bool) -> EmbeddingTable:
        """The table saved in `file`, memory-mapped read-only (`mmap`) or read into memory."""
        base = np.load(file, mmap_mode="r" if mmap else None, allow_pickle=False)
        if base.ndim != 2:
            raise ValueError(f"expected a 2-D array, found shape {base.shape}")
        return cls(base.shape[1], base)

    @property
    def memory_mapped(self) -> bool:
        return isinstance(self._base, np.memmap)

    def __len__(self) -> int:
        return len(self._base) + self._tail_rows

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self), self.dim)

    @property
    def dtype(self) -> np.dtype:
        return self._base.dtype

    def append(self, rows: np.ndarray | torch.Tensor) -> None:
        rows = _as_float32(rows)
        if rows.ndim != 2 or rows.shape[1] != self.dim:
            raise ValueError(f"rows must have shape (n, {self.dim}), got {tuple(rows.shape)}")
        if not self.memory_mapped and not self._tail:
            # An in-memory table stays one array, as the exact search wants it.
            self._base = np.concatenate([self._base, rows]) if len(self._base) else rows.copy()
            return
        self._tail.append(rows.copy())
        self._tail_rows += len(rows)

    def gather(self, rows: np.ndarray, *, pread: bool | None = None) -> np.ndarray:
        """The rows asked for, in that order (any shape of row numbers; the result adds a last `dim` axis).

        From a memory-mapped file, up to `PREAD_MAX_ROWS` rows are read with `pread` (see `_pread_rows`) and
        more through the mapping (faster for mining's large batches); `pread=True` always reads (a training
        sample spread over the whole file), `pread=False` always maps."""
        rows = np.asarray(rows, dtype=np.int64)
        flat = rows.reshape(-1)
        out = np.empty((len(flat), self.dim), dtype=np.float32)
        in_base = flat < len(self._base)
        if in_base.any():
            wanted = flat[in_base]
            if self.memory_mapped and (pread if pread is not None else len(wanted) <= PREAD_MAX_ROWS):
                out[in_base] = self._pread_rows(wanted)
            else:
                # Sorted reads touch each page of a memory map once, in file order.
                order = np.argsort(wanted, kind="stable")
                picked = np.empty((len(wanted), self.dim), dtype=np.float32)
                picked[order] = self._base[wanted[order]]
                out[in_base] = picked
        if (~in_base).any():
            out[~in_base] = self._tail_array()[flat[~in_base] - len(self._base)]
        return out.reshape(*rows.shape, self.dim)

    def _pread_rows(self, rows: np.ndarray) -> np.ndarray:
        """Rows of the memory-mapped file read with `pread`, not through the mapping.

        Written by hand because touching a few rows of a memory map maps whole large pages around each one
        into the process (8,000 random rows of a 1.5 GB file mapped all of it, on Linux 6.18): a search that
        rescores 40 rows a query would grow to the file's size. `pread` leaves the caching to the page cache.
        """
        if self._file is None:
            self._file = open(self._base.filename, "rb", buffering=0)  # noqa: SIM115  (kept open while the table lives)
        row_bytes = self.dim * 4
        fd, offset = self._file.fileno(), self._base.offset
        data = b"".join(os.pread(fd, row_bytes, offset + int(row) * row_bytes) for row in rows)
        return np.frombuffer(data, dtype=np.float32).reshape(len(rows), self.dim)

    def chunks(self, chunk_rows: int = CHUNK_ROWS) -> Iterator[tuple[int, torch.Tensor]]:
        """`(first_row, rows)` pieces in order, each a float32 tensor of at most `chunk_rows` rows."""
        for start in range(0, len(self._base), chunk_rows):
            if self.memory_mapped:  # read, not mapped: a scan of a 15 GB file must not map it all into the process
                rows = min(chunk_rows, len(self._base) - start)
                offset = self._base.offset + start * self.dim * 4
                chunk = np.fromfile(self._base.filename, dtype=np.float32, count=rows * self.dim, offset=offset)
                yield start, torch.from_numpy(chunk.reshape(rows, self.dim))
            else:
                yield start, _tensor(np.ascontiguousarray(self._base[start : start + chunk_rows], dtype=np.float32))
        if self._tail:
            tail = self._tail_array()
            for start in range(0, len(tail), chunk_rows):
                yield len(self._base) + start, torch.from_numpy(tail[start : start + chunk_rows])

    def to_tensor(self) -> torch.Tensor:
        """All rows as one in-memory tensor (a copy of a memory-mapped table: mind its size)."""
        if not self._tail and not self.memory_mapped:
            return torch.from_numpy(self._base)
        parts = [np.asarray(self._base, dtype=np.float32)] + ([self._tail_array()] if self._tail else [])
        return torch.from_numpy(np.concatenate(parts) if len(parts) > 1 else np.array(parts[0]))

    def select(self, rows: np.ndarray) -> EmbeddingTable:
        """A new in-memory table of the given rows, in that order (deleting rows compacts this way)."""
        return EmbeddingTable(self.dim, self.gather(np.asarray(rows, dtype=np.int64)))

    def write_npy(self, file: Path) -> None:
        """Write every row to a `.npy` file chunk by chunk (never the whole memory-mapped table in memory).

        A table that is exactly one memory-mapped file is hard-linked instead where the file system allows
        (10M x 384 float32 is 15 GB): the files are never written in place (a new one replaces them), so
        sharing the inode is safe."""
        source = getattr(self._base, "filename", None)
        if self.memory_mapped and not self._tail and source is not None:
            try:
                os.link(source, file)
                return
            except OSError:
                pass  # another file system (or no hard links): copied below
        write_npy_rows(file, self.shape, (rows.numpy() for _, rows in self.chunks()))

    def _tail_array(self) -> np.ndarray:
        if len(self._tail) > 1:
            self._tail = [np.concatenate(self._tail)]
        return self._tail[0]


def write_npy_rows(file: Path, shape: tuple[int, int], pieces: Iterable[np.ndarray]) -> None:
    """
    A float32 `.npy` file of `shape` from row blocks given in order, written sequentially.

    Not through `open_memmap`: filling a memory map of a 15 GB file maps every page of it into the writing
    process (its resident size grows to the file's); plain writes leave the pages to the page cache.
    """
    written = 0
    with open(file, "wb") as handle:
        np.lib.format.write_array_header_1_0(
            handle, {"descr": np.dtype(np.float32).str, "fortran_order": False, "shape": shape}
        )
        for piece in pieces:
            piece = np.ascontiguousarray(piece, dtype=np.float32)
            if piece.ndim != 2 or piece.shape[1] != shape[1]:
                raise ValueError(f"rows of shape {piece.shape} do not fit a ({shape[0]}, {shape[1]}) array")
            handle.write(piece.data)
            written += len(piece)
    if written != shape[0]:
        raise ValueError(f"wrote {written} rows to {file}, expected {shape[0]}")


def _tensor(rows: np.ndarray) -> torch.Tensor:
    """A tensor sharing the array's memory; a read-only memory map makes a read-only tensor, which nothing here writes to."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        return torch.from_numpy(rows)


def _as_float32(rows: np.ndarray | torch.Tensor) -> np.ndarray:
    if isinstance(rows, torch.Tensor):
        rows = rows.detach().float().cpu().numpy()
    return np.ascontiguousarray(rows, dtype=np.float32)


__all__ = ["CHUNK_ROWS", "EmbeddingTable", "write_npy_rows"]
