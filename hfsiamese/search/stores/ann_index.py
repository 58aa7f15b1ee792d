"""
Smaller and faster search structures for a `DuplicateIndex`, through FAISS (`store="faiss"`).

Two choices, made independently (`AnnSpec`):

* `quantization`: how each vector is stored in the index: `"none"` (float32, 4 bytes a dimension),
  `"int8"` (FAISS's 8-bit scalar quantiser, each dimension's range calibrated on a training sample:
  1 byte), `"pq"` (product quantisation, `pq_bytes` bytes a vector) or `"binary"` (the sign of each
  dimension: 1 bit, compared by Hamming distance);
* `structure`: how the index is searched: `"flat"` (every vector: exhaustive), `"hnsw"` (a graph:
  fast, ~`2 * hnsw_m * 4` extra bytes a vector) or `"ivf"` (`nlist` k-means cells, `nprobe` of them
  visited per query: fast, ~8 extra bytes a vector, trained on a sample).

A quantised index only proposes candidates: `rescore_multiplier * k` of them are rescored against the
full-precision embeddings, which the `DuplicateIndex` keeps on disk (memory-mapped) or in memory, so
the scores returned are exact cosines and only the candidate list is approximate. `"auto"` resolves
by corpus size (`AnnSpec.resolved`): exact float32 up to `AnnSpec.exact_up_to` texts (`EXACT_UP_TO`),
then binary codes in IVF cells with rescoring (1 bit a dimension in memory: 10M x 384 dimensions =
480 MB); a `DuplicateIndex` with a recall target treats that as the starting point of a short search
for the cheapest settings that reach the target on its own corpus (`recall_tuning`).

FAISS is used rather than hand-written quantisers or graphs: it is the well-kept library for all of
these, and it saves and loads every index kind without pickling.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from hfsiamese.utils.extras import install_hint

QUANTIZATIONS = ("none", "int8", "pq", "binary")
STRUCTURES = ("flat", "hnsw", "ivf")
Quantization = Literal["none", "int8", "pq", "binary"]
Structure = Literal["flat", "hnsw", "ivf"]
# Rows a batch that FAISS would search query by query is multiplied with at a time (`FaissAnnIndex._scans_once_per_query`).
ROWS_PER_BLOCK = 65_536
# Up to this many texts, `auto` keeps exact float32 search; beyond, binary IVF (tuned to a recall target by a
# `DuplicateIndex`). Exact search reads every embedding for every query: 116 ms p99 a query over 1.2M x 256 dims on
# 2 cores (Xeon, 2026-11-26), so ~20 ms at 200k, leaving a query's encoding within 50 ms; above it, tuned settings
# that reach the recall target answer in a few ms.
EXACT_UP_TO = 200_000
# Vectors sampled to train IVF cells, scalar ranges and product codebooks: FAISS wants 39-256 per cell.
MAX_TRAINING_VECTORS = 200_000


def import_faiss() -> Any:
    try:
        import faiss
    except ImportError as err:
        raise ImportError(
            f'store="faiss" needs the faiss package: {install_hint("faiss")}; or use store="exact", '
            "which needs nothing more"
        ) from err
    return faiss


@dataclass(frozen=True)
class AnnSpec:
    """
    What FAISS index to build, and how to search it (see the module docstring).

    Args:
        quantization: `"none"`, `"int8"`, `"pq"` or `"binary"`, or `"auto"` (by corpus size, then tuned).
        structure: `"flat"`, `"hnsw"` or `"ivf"`, or `"auto"`.
        rescore_multiplier: a quantised index proposes `rescore_multiplier * k` candidates, rescored
            exactly; ignored without quantisation (the scores are exact already). Default 8 and `nprobe`
            64: binary IVF codes of the distilled static student over 1M questions (benchmarks/README.md,
            "Duplicate search at scale") found 0.9755 of the exact top 10 with them, 0.9675 with 4 and 32,
            at under 1 ms a query either way.
        nlist: IVF cells (default `4 * sqrt(num_texts)`, a power of two, at most `num_texts / 39`).
        nprobe: IVF cells visited per query (more: higher recall, slower).
        hnsw_m: HNSW neighbours per node.
        ef_search: HNSW candidate list length while searching (at least the candidates asked for).
        pq_bytes: bytes per vector with `"pq"` (must divide the dimension).
        factory: a FAISS `index_factory` string for a float index, instead of the two choices above
            (an expert's escape hatch; inner-product metric; never rescored).
        exact_up_to: with both choices `"auto"`, corpora up to this many texts get exact float32 search; larger
            ones approximate settings (tuned to the index's recall target: `recall_tuning`).
        max_memory_bytes: the most the FAISS index may hold in memory (`index_bytes`: codes, lists or graph; the
            full embeddings stay on disk): `"auto"` skips settings that need more (exact float32 search too, at any
            size), and settings asked for that need more are refused. None (default): no limit.
    """

    quantization: str = "auto"
    structure: str = "auto"
    rescore_multiplier: int = 8
    nlist: int | None = None
    nprobe: int = 64
    hnsw_m: int = 32
    ef_search: int = 128
    pq_bytes: int | None = None
    factory: str | None = None
    exact_up_to: int = EXACT_UP_TO
    max_memory_bytes: int | None = None

    def __post_init__(self) -> None:
        if self.quantization not in (*QUANTIZATIONS, "auto"):
            raise ValueError(f"quantization must be one of {(*QUANTIZATIONS, 'auto')}, got {self.quantization!r}")
        if self.structure not in (*STRUCTURES, "auto"):
            raise ValueError(f"structure must be one of {(*STRUCTURES, 'auto')}, got {self.structure!r}")
        for name in ("rescore_multiplier", "nprobe", "hnsw_m", "ef_search"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.exact_up_to < 0:
            raise ValueError(f"exact_up_to must be at least 0, got {self.exact_up_to}")
        for name in ("nlist", "max_memory_bytes"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.factory is not None and (
            self.quantization not in ("auto", "none") or self.structure not in ("auto", "flat")
        ):
            raise ValueError("factory= replaces quantization= and structure=: give one or the other")

    @property
    def is_default(self) -> bool:
        """Whether nothing was asked for (every choice `auto`): a saved index's own settings then apply."""
        return self == AnnSpec()

    @property
    def quantized(self) -> bool:
        """Whether the index's own scores are approximate (so its candidates are rescored)."""
        return self.factory is None and self.quantization != "none"

    @property
    def is_exact(self) -> bool:
        return self.factory is None and self.quantization == "none" and self.structure == "flat"

    def resolved(self, num_texts: int, dim: int) -> AnnSpec:
        """This spec with `auto` choices and `nlist` made concrete for a corpus of `num_texts`, and checked against `dim`."""
        spec = self
        if self.factory is not None:
            return replace(spec, quantization="none", structure="flat")
        large = num_texts > spec.exact_up_to
        if spec.quantization == "auto":
            spec = replace(spec, quantization="binary" if large else "none")
        if spec.structure == "auto":
            spec = replace(spec, structure="ivf" if large else "flat")
        if spec.structure == "ivf" and spec.nlist is None:
            spec = replace(spec, nlist=default_nlist(num_texts))
        if spec.quantization == "binary" and dim % 8:
            raise ValueError(f"binary quantisation needs a dimension divisible by 8, the embeddings have {dim}")
        if spec.quantization == "pq":
            pq_bytes = spec.pq_bytes or _default_pq_bytes(dim)
            if dim % pq_bytes:
                raise ValueError(f"pq_bytes must divide the embedding dimension {dim}, got {pq_bytes}")
            spec = replace(spec, pq_bytes=pq_bytes)
        return spec

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> AnnSpec:
        known = {key: value for key, value in values.items() if key in cls.__dataclass_fields__}
        return cls(**known)


def ann_spec_of(
    ann: AnnSpec | None, quantization: str, structure: str, rescore_multiplier: int, factory: str | None
) -> AnnSpec:
    """One `AnnSpec` from the constructor's FAISS options (given either as `ann=` or as the loose options)."""
    loose = AnnSpec(
        quantization=quantization, structure=structure, rescore_multiplier=rescore_multiplier, factory=factory
    )
    if ann is None:
        return loose
    if not loose.is_default:
        raise ValueError(
            "give the FAISS settings either as ann=AnnSpec(...) or as quantization=/structure=/..., not both"
        )
    if not isinstance(ann, AnnSpec):
        raise TypeError(f"ann must be a hfsiamese.search.stores.ann_index.AnnSpec, got {type(ann).__name__}")
    return ann


def default_nlist(num_texts: int) -> int:
    """`4 * sqrt(N)` cells rounded to a power of two (FAISS's rule of thumb), with at least 39 training vectors
    each in the training sample (at most `MAX_TRAINING_VECTORS`: 4,096 cells from 1M texts on)."""
    cells = 2 ** round(math.log2(max(4 * math.sqrt(max(num_texts, 1)), 1)))
    trainable = min(num_texts, MAX_TRAINING_VECTORS) // 39
    return int(min(cells, 2 ** int(math.log2(trainable)))) if trainable >= 1 else 1


def index_bytes(spec: AnnSpec, num_texts: int, dim: int) -> int | None:
    """
    About how many bytes the FAISS index of a resolved `spec` holds over `num_texts` rows of `dim` dimensions (what
    `FaissAnnIndex.memory_bytes` reports once built), known before it is built: the codes, 8 bytes of id a row in
    IVF lists (and the list centroids), or an HNSW graph (`2 * hnsw_m` level-0 links of 4 bytes a row, about one
    more on the upper levels, 12 bytes of bookkeeping). None for a `factory` string (not estimated).
    """
    if spec.factory is not None:
        return None
    code = {"none": 4 * dim, "int8": dim, "pq": spec.pq_bytes or _default_pq_bytes(dim), "binary": dim // 8}
    per_row = code[spec.quantization]
    fixed = {"none": 0, "int8": 2 * 4 * dim, "pq": 256 * 4 * dim, "binary": 0}[spec.quantization]  # trained ranges
    if spec.structure == "ivf":
        per_row += 8
        fixed += (spec.nlist or default_nlist(num_texts)) * (dim // 8 if spec.quantization == "binary" else 4 * dim)
    elif spec.structure == "hnsw":
        per_row += 4 * (2 * spec.hnsw_m + 1) + 12
    return per_row * num_texts + fixed


def _default_pq_bytes(dim: int) -> int:
    # 8 dimensions per byte (48 bytes for 384 dimensions), or the largest divisor below that.
    for candidate in range(max(dim // 8, 1), 0, -1):
        if dim % candidate == 0:
            return candidate
    return 1


def binarize(vectors: np.ndarray) -> np.ndarray:
    """Sign bits of each dimension, packed 8 to a byte (what FAISS's binary indexes take)."""
    return np.packbits(vectors > 0, axis=1)


class FaissAnnIndex:
    """
    One FAISS index over the rows of a `DuplicateIndex`, in row order (FAISS's sequential ids are the rows).

    `search` returns candidate rows with FAISS's own scores (inner products, or minus Hamming
    distances for binary codes); the caller rescores quantised candidates against full-precision
    embeddings (`DuplicateIndex` does).
    """

    def __init__(self, spec: AnnSpec, dim: int, index: Any | None = None) -> None:
        self.faiss = import_faiss()
        self.spec = spec
        self.dim = dim
        self.index = index if index is not None else self._new_index()
        self._apply_search_settings()
        # How FAISS counts its `distance_compute_blas_threshold`: query values since 1.15, queries before (read once,
        # not on every search).
        version = tuple(int(part) for part in re.findall(r"\d+", self.faiss.__version__)[:2])
        self._threshold_counts_values = version >= (1, 15)

    @property
    def binary(self) -> bool:
        return self.spec.quantization == "binary"

    def _new_index(self) -> Any:
        faiss, spec, dim = self.faiss, self.spec, self.dim
        if spec.factory is not None:
            return faiss.index_factory(dim, spec.factory, faiss.METRIC_INNER_PRODUCT)
        if self.binary:
            if spec.structure == "flat":
                return faiss.IndexBinaryFlat(dim)
            if spec.structure == "hnsw":
                return faiss.IndexBinaryHNSW(dim, spec.hnsw_m)
            return faiss.IndexBinaryIVF(faiss.IndexBinaryFlat(dim), dim, spec.nlist)
        codes = {"none": "Flat", "int8": "SQ8", "pq": f"PQ{spec.pq_bytes}"}[spec.quantization]
        if spec.structure == "flat":
            factory = codes
        elif spec.structure == "hnsw":
            if spec.quantization == "pq":
                raise ValueError('structure="hnsw" takes quantization "none", "int8" or "binary", not "pq" (use "ivf")')
            factory = f"HNSW{spec.hnsw_m}" + ("" if codes == "Flat" else f"_{codes}")
        else:
            factory = f"IVF{spec.nlist},{codes}"
        return faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)

    def set_search_settings(self, nprobe: int, rescore_multiplier: int, ef_search: int | None = None) -> None:
        """Probe `nprobe` IVF lists, keep `ef_search` HNSW candidates (unchanged if None) and rescore
        `rescore_multiplier * k` candidates from now on: none needs the index retrained or refilled (how tuning
        tries several settings on one built index)."""
        ef_search = self.spec.ef_search if ef_search is None else ef_search
        self.spec = replace(self.spec, nprobe=nprobe, rescore_multiplier=rescore_multiplier, ef_search=ef_search)
        self._apply_search_settings()

    def _apply_search_settings(self) -> None:
        index = self.index
        if self.binary:
            if hasattr(index, "nprobe"):
                index.nprobe = self.spec.nprobe
            if hasattr(index, "hnsw"):
                index.hnsw.efSearch = self.spec.ef_search
            return
        ivf = self.faiss.try_extract_index_ivf(index)
        if ivf is not None:
            ivf.nprobe = self.spec.nprobe
        hnsw = getattr(self.faiss.downcast_index(index), "hnsw", None)
        if hnsw is not None:
            hnsw.efSearch = self.spec.ef_search

    def __len__(self) -> int:
        return int(self.index.ntotal)

    def empty_copy(self) -> FaissAnnIndex:
        """The same index, trained (IVF cells, scalar ranges, codebooks) but holding no rows: a new one where
        nothing is trained, else a copy emptied (for a moment the copy holds the rows' codes too)."""
        if training_sample(1, self.spec) is None:
            return FaissAnnIndex(self.spec, self.dim)
        faiss = self.faiss
        copy = faiss.clone_binary_index(self.index) if self.binary else faiss.clone_index(self.index)
        copy.reset()
        return FaissAnnIndex(self.spec, self.dim, copy)

    @property
    def is_trained(self) -> bool:
        return bool(self.index.is_trained)

    def _codes(self, vectors: np.ndarray) -> np.ndarray:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        return binarize(vectors) if self.binary else vectors

    def train(self, sample: np.ndarray) -> None:
        """Fit IVF cells, scalar ranges or product codebooks on a sample of the corpus (no-op when not needed)."""
        if self.is_trained:
            return
        if len(sample) == 0:
            raise ValueError("cannot train the FAISS index on an empty sample")
        self.index.train(self._codes(sample))

    def add(self, vectors: np.ndarray) -> None:
        """Append rows (after `train`); their FAISS ids are the next row numbers."""
        if not self.is_trained:
            raise ValueError("the FAISS index must be trained before rows are added")
        if len(vectors):
            self.index.add(self._codes(vectors))

    def search(self, queries: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """`(scores, rows)`, `(num_queries, n)`, best first; rows of -1 where fewer than `n` were found."""
        search_n = min(n, len(self))
        if search_n > 0 and self._scans_once_per_query(len(queries)):
            return self._exact_search_in_one_pass(queries, search_n)
        if self.spec.structure == "hnsw" and hasattr(self.index, "hnsw"):
            self.index.hnsw.efSearch = max(self.spec.ef_search, search_n)
        elif self.spec.structure == "hnsw":
            hnsw = self.faiss.downcast_index(self.index).hnsw
            hnsw.efSearch = max(self.spec.ef_search, search_n)
        scores, rows = self.index.search(self._codes(queries), search_n)
        if self.binary:
            scores = -scores.astype(np.float32)  # Hamming distance: fewer differing bits is better
        return scores.astype(np.float32), rows.astype(np.int64)

    def _scans_once_per_query(self, num_queries: int) -> bool:
        """
        Whether FAISS would search this exact float32 index by reading every row once per query: below its
        `distance_compute_blas_threshold`, counted in query values (`num_queries * dim`, default 128,000) since faiss
        1.15 and in queries before (default 20). The 1.15 default was tuned on machines of 80 and more threads; on few
        cores a batch of 8 at 100k x 384 took twice a single pass, 32 queries 6.8x (faiss issue #5109). Such a batch is
        searched in one pass over the rows instead (`_exact_search_in_one_pass`); a threshold the user set is read as
        FAISS reads it.
        """
        if num_queries < 2 or self._exact_float_index() is None:
            return False
        counted = num_queries * self.dim if self._threshold_counts_values else num_queries
        return counted < int(self.faiss.cvar.distance_compute_blas_threshold)

    def _exact_float_index(self) -> Any | None:
        """The index as FAISS's exact float32 inner-product index, or None for any other kind."""
        if self.binary:
            return None
        flat = self.faiss.downcast_index(self.index)
        exact = isinstance(flat, self.faiss.IndexFlat) and flat.metric_type == self.faiss.METRIC_INNER_PRODUCT
        return flat if exact and hasattr(flat, "get_xb") else None

    def _exact_search_in_one_pass(self, queries: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """
        The exact search of a batch in one pass over the rows (FAISS's own memory, no copy): each block of rows times
        the queries, rows first (`rows @ queries.T`: a product that splits over the cores by rows, where
        `queries @ rows.T` with a few queries ran on one), the best `n` of each block kept and merged. The scores are
        FAISS's, inner products, for the rows it would return. Hand-written because FAISS declines its own one-pass
        product for these batch sizes, and `topk_cosine` multiplies queries first; memory: a block of scores at a time.
        """
        import torch

        flat = self._exact_float_index()
        rows = torch.from_numpy(self.faiss.rev_swig_ptr(flat.get_xb(), len(self) * self.dim).reshape(len(self), -1))
        batch = torch.from_numpy(np.ascontiguousarray(queries, dtype=np.float32)).T
        best_scores = torch.full((n, batch.shape[1]), float("-inf"))
        best_rows = torch.zeros((n, batch.shape[1]), dtype=torch.long)
        for start in range(0, len(rows), ROWS_PER_BLOCK):
            block = rows[start : start + ROWS_PER_BLOCK]
            scores, found = (block @ batch).topk(min(n, len(block)), dim=0)
            best_scores, order = torch.cat([best_scores, scores]).topk(n, dim=0)
            best_rows = torch.cat([best_rows, found + start]).gather(0, order)
        return best_scores.T.contiguous().numpy(), best_rows.T.contiguous().numpy()

    def write(self, file: Path) -> None:
        if self.binary:
            self.faiss.write_index_binary(self.index, str(file))
        else:
            self.faiss.write_index(self.index, str(file))

    @classmethod
    def read(cls, file: Path, spec: AnnSpec, dim: int) -> FaissAnnIndex:
        faiss = import_faiss()
        try:
            index = faiss.read_index_binary(str(file)) if spec.quantization == "binary" else faiss.read_index(str(file))
        except RuntimeError as err:
            raise ValueError(
                f"{file} is corrupted (FAISS cannot read it: {str(err).splitlines()[0]}); rebuild the index"
            ) from err
        return cls(spec, dim, index)

    def memory_bytes(self) -> int:
        """Bytes FAISS holds for this index (its serialised size: codes, cells, graph). Counted as FAISS writes it
        out piece by piece, never held: `serialize_index` would hold two copies of it (measuring 3.7 GB of int8
        codes at 10M rows raised a build's peak by 4.9 GB)."""
        written = 0

        def count(piece: bytes) -> None:
            nonlocal written
            written += len(piece)

        writer = self.faiss.PyCallbackIOWriter(count)
        try:
            (self.faiss.write_index_binary if self.binary else self.faiss.write_index)(self.index, writer)
        finally:
            del writer  # flushes its last buffered piece into `count`
        return written


def training_sample(num_rows: int, spec: AnnSpec, seed: int = 0) -> np.ndarray | None:
    """Sorted rows to train on (None: the index needs no training), drawn seeded so that a rebuild is the same index."""
    needs_training = spec.factory is not None or spec.quantization in ("int8", "pq") or spec.structure == "ivf"
    if not needs_training:
        return None
    size = min(num_rows, MAX_TRAINING_VECTORS)
    rows = np.random.default_rng(seed).choice(num_rows, size=size, replace=False)
    return np.sort(rows)


__all__ = [
    "ann_spec_of",
    "EXACT_UP_TO",
    "QUANTIZATIONS",
    "STRUCTURES",
    "AnnSpec",
    "FaissAnnIndex",
    "binarize",
    "default_nlist",
    "import_faiss",
    "index_bytes",
    "training_sample",
]
