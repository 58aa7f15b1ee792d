"""
The search backends of a `DuplicateIndex`: `"exact"` (`topk_cosine`, chunked, in torch) and `"faiss"`,
the FAISS index that `datasets` attaches to the corpus `Dataset` (the `faiss` extra).
"""

from __future__ import annotations

from typing import Any, Literal

import datasets
import torch

BACKENDS = ("exact", "faiss")
Backend = Literal["exact", "faiss"]
# Name of the FAISS index on the corpus Dataset.
FAISS_INDEX_NAME = "embeddings"


def import_faiss() -> Any:
    try:
        import faiss
    except ImportError as err:
        raise ImportError(
            'backend="faiss" needs the faiss package: pip install "hfsiamese[faiss]" (or use backend="exact", '
            "which needs nothing more)"
        ) from err
    return faiss


def check_backend(backend: str) -> str:
    """A known backend, whose package is installed."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "faiss":
        import_faiss()
    return backend


def ensure_faiss_index(corpus: datasets.Dataset, embeddings: torch.Tensor, string_factory: str | None) -> None:
    """Attach a FAISS index of `embeddings` to `corpus`, unless it has one."""
    # A flat inner-product index over L2-normalised vectors ranks exactly as cosine similarity.
    if corpus.is_index_initialized(FAISS_INDEX_NAME):
        return
    faiss = import_faiss()
    vectors = embeddings.contiguous().numpy()
    corpus.add_faiss_index_from_external_arrays(
        vectors,
        FAISS_INDEX_NAME,
        string_factory=string_factory,
        metric_type=faiss.METRIC_INNER_PRODUCT,
        batch_size=max(len(vectors), 1),
        train_size=len(vectors) if string_factory else None,
    )


def drop_faiss_index(corpus: datasets.Dataset | None) -> None:
    """Drop a FAISS index that no longer covers every row (the corpus is about to grow)."""
    if corpus is not None and corpus.is_index_initialized(FAISS_INDEX_NAME):
        corpus.drop_index(FAISS_INDEX_NAME)


def faiss_topk(corpus: datasets.Dataset, queries: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`(scores, rows)` of the `k` best rows per query, from the FAISS index `ensure_faiss_index` attached."""
    scores, rows = corpus.search_batch(FAISS_INDEX_NAME, queries.contiguous().numpy(), k=k)
    return torch.from_numpy(scores).float(), torch.from_numpy(rows).long()


__all__ = ["BACKENDS", "Backend", "check_backend", "drop_faiss_index", "ensure_faiss_index", "faiss_topk", "import_faiss"]
