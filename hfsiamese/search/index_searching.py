"""What `DuplicateIndex.search` and `search_embeddings` do: queries embedded, the store asked for the nearest rows
(in memory by row number, a database by its own search), and the matches decided by a threshold or reranked by a
cross-encoder."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from hfsiamese.models.siamese.scoring import check_threshold
from hfsiamese.search.backends import IN_PROCESS_BACKENDS, Backend, check_backend
from hfsiamese.search.input_checks import check_k
from hfsiamese.search.matches import decide
from hfsiamese.search.reranking import check_rerank_k, cross_encoder_threshold, rerank_matches
from hfsiamese.search.stores.in_memory import InMemoryStore

if TYPE_CHECKING:
    from hfsiamese.search.duplicate_index import DuplicateIndex


def search_texts(
    index: DuplicateIndex,
    texts: list[str],
    k: int,
    *,
    threshold: float | None,
    backend: Backend | None,
    filter: dict[str, Any] | None,
    cross_encoder: Any | None,
    rerank_k: int | None,
) -> list[list[dict[str, Any]]]:
    """One list of matches per query text, best first (see `DuplicateIndex.search`)."""
    check_k(k)
    database = not isinstance(index._store, InMemoryStore)
    if filter is not None and not database:
        raise ValueError('filter= needs a database backend ("lancedb" or "qdrant"): the texts there carry metadata')
    reranker = index._reranker(cross_encoder)
    if reranker is None:
        if rerank_k is not None:
            raise ValueError(
                "rerank_k applies only with a cross_encoder: without one the search returns the bi-encoder's top k"
            )
        threshold = check_threshold(threshold) if threshold is not None else index.threshold
    else:
        rerank_k = check_rerank_k(rerank_k, k)
        threshold = cross_encoder_threshold(reranker, threshold)
    if not texts:
        return []
    index._check_not_empty()
    if database:
        if backend not in (None, index.backend):
            raise ValueError(f"this index lives in {index.backend}: backend={backend!r} cannot search it")
        candidates = index._store.search(index._encode(texts).float().cpu().numpy(), rerank_k or k, filter=filter)
    else:
        candidates = index._store.matches(
            *index.search_embeddings(index._encode(texts), rerank_k or k, backend=backend)
        )
    if reranker is None:
        return [decide(found, threshold) for found in candidates]
    return [found[:k] for found in rerank_matches(reranker, texts, candidates, threshold=threshold)]


def search_embedded(
    index: DuplicateIndex, query_embeddings: torch.Tensor, k: int, backend: Backend | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """`(scores, rows)` of an in-process index's nearest rows to query embeddings (see `search_embeddings`)."""
    check_k(k)
    if not isinstance(index._store, InMemoryStore):
        raise ValueError("search_embeddings returns row numbers, which a database collection has none of: use search")
    index._check_not_empty()
    if query_embeddings.dim() != 2 or query_embeddings.shape[1] != index.embedding_dim:
        raise ValueError(
            f"query embeddings must have shape (num_queries, {index.embedding_dim}), got {tuple(query_embeddings.shape)}"
        )
    backend = check_backend(backend or index.backend)
    if backend not in IN_PROCESS_BACKENDS:
        raise ValueError(f"backend={backend!r} is not how this index was built: use 'exact' or 'faiss'")
    return index._store.topk(query_embeddings.detach().float().cpu(), k, exact=backend == "exact")


__all__ = ["search_embedded", "search_texts"]
