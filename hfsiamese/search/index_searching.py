"""
What `DuplicateIndex.search` and `search_embeddings` check and decide around asking the store: the call's threshold
and reranker, how many candidates to fetch, and the matches decided by the threshold or reranked by a cross-encoder.
The store itself is asked in those methods, so that a warning raised while it builds its FAISS index (`faiss_tuning`)
names the same line as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, cast

import torch

from hfsiamese.models.siamese.scoring import check_threshold
from hfsiamese.search.backends import IN_PROCESS_BACKENDS, Store, check_backend
from hfsiamese.search.input_checks import check_k
from hfsiamese.search.rerank_options import check_rerank_k, refuse_rerank_k_without_cross_encoder
from hfsiamese.search.reranking import cross_encoder_threshold, rerank_matches, resolve_cross_encoder
from hfsiamese.search.stores.matches import decide

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex
    from hfsiamese.search.stores.in_memory import InMemoryStore


class SearchPlan(NamedTuple):
    """One call of `search`, checked: where the rows are, how many candidates to fetch, and who decides them."""

    database: bool
    fetch_k: int
    threshold: float | None
    reranker: Any | None


def call_reranker(index: SearchIndex, cross_encoder: Any | None) -> Any | None:
    """The cross-encoder of a call: the one given (loaded if a folder), else the index's own (or None)."""
    return resolve_cross_encoder(cross_encoder) if cross_encoder is not None else index.cross_encoder


def check_search_filter(index: SearchIndex, filter: dict[str, Any] | None) -> None:
    """Refuse a search filter before anything is searched: on an index without a database store (only a database
    keeps metadata), or one the store's engine refuses (`DatabaseStore.check_search_filter`)."""
    if filter is None:
        return
    database = index.database_store
    if database is None:
        raise ValueError('filter= needs a database store ("lancedb" or "qdrant"): the texts there carry metadata')
    database.check_search_filter(filter)


def plan_search(
    index: SearchIndex,
    texts: list[str],
    k: int,
    threshold: float | None,
    filter: dict[str, Any] | None,
    cross_encoder: Any | None,
    rerank_k: int | None,
    store_name: Store | None = None,
) -> SearchPlan:
    """The options of a `search` checked (and the index not empty, where there are queries)."""
    check_k(k)
    database = index.store.database
    check_search_filter(index, filter)
    reranker = call_reranker(index, cross_encoder)
    refuse_rerank_k_without_cross_encoder(rerank_k, reranker)
    if reranker is None:
        threshold = check_threshold(threshold) if threshold is not None else index.threshold
    else:
        rerank_k = check_rerank_k(rerank_k, k)
        threshold = cross_encoder_threshold(reranker, threshold)
    if texts:
        index.check_not_empty()
        if database and store_name not in (None, index.store_name):
            raise ValueError(f"this index lives in {index.store_name}: store={store_name!r} cannot search it")
    return SearchPlan(database, rerank_k or k, threshold, reranker)


def decided(
    plan: SearchPlan, texts: list[str], candidates: list[list[dict[str, Any]]], k: int
) -> list[list[dict[str, Any]]]:
    """Each query's candidates decided by the threshold, or reranked by the cross-encoder and cut to `k`."""
    if plan.reranker is None:
        return [decide(found, plan.threshold) for found in candidates]
    return [found[:k] for found in rerank_matches(plan.reranker, texts, candidates, threshold=plan.threshold)]


def search_store(index: SearchIndex, query_embeddings: torch.Tensor, k: int, store_name: Store | None) -> str:
    """The in-process store `search_embeddings` searches with, its arguments checked."""
    check_k(k)
    if not index.store.numbered_rows:
        raise ValueError("search_embeddings returns row numbers, which a database collection has none of: use search")
    index.check_not_empty()
    if query_embeddings.dim() != 2 or query_embeddings.shape[1] != index.embedding_dim:
        raise ValueError(
            f"query embeddings must have shape (num_queries, {index.embedding_dim}), got {tuple(query_embeddings.shape)}"
        )
    store_name = check_backend(store_name or index.store_name)
    if store_name not in IN_PROCESS_BACKENDS:
        raise ValueError(f"store={store_name!r} is not how this index was built: use 'exact' or 'faiss'")
    return store_name


def candidates(
    index: SearchIndex,
    texts: list[str],
    query_embeddings: torch.Tensor,
    k: int,
    store_name: Store | None,
    filter: dict[str, Any] | None,
) -> list[list[dict[str, Any]]]:
    """Each query's `k` candidates, the one path of `search`: fused by the index's lexical side (`hybrid=`), else by
    cosine alone: the store's own search (a database's, under `filter`), or, where rows are numbered,
    `search_embeddings` (the store of the call: an exact search of a FAISS index) turned into matches."""
    if index.lexical is not None:
        return index.lexical.matches(index, texts, query_embeddings, k, store_name, filter)
    store = index.store
    if not store.numbered_rows:
        return store.search(query_embeddings.float().cpu().numpy(), k, filter=filter)
    numbered = cast("InMemoryStore", store)  # numbered rows: an in-process store's `matches`
    return numbered.matches(*index.search_embeddings(query_embeddings, k, store=store_name))


__all__ = [
    "SearchPlan",
    "call_reranker",
    "candidates",
    "check_search_filter",
    "decided",
    "plan_search",
    "search_store",
]
