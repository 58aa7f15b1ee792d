"""
`DuplicateIndex.find_duplicates`: the pairs of indexed texts that look like duplicates of each other, found with
the store's own neighbour search (`paraphrase_pairs`: no `N x N` matrix), decided by the cosine (or its
calibrated probability), or proposed by the bi-encoder and decided by a cross-encoder (`reranking`). A database
collection is read into an exact in-memory store and mined there.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

from hfsiamese.models.siamese.scoring import check_threshold, resolve_decision_threshold, resolve_threshold
from hfsiamese.search.lexical.hybrid_search import with_lexical_pairs
from hfsiamese.search.paraphrase_pairs import ParaphrasePairs, paraphrase_pairs
from hfsiamese.search.reranking import NO_CROSS_ENCODER_THRESHOLD, cross_encoder_threshold, rerank_pairs
from hfsiamese.search.stores.in_memory import InMemoryStore

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex
    from hfsiamese.search.stores.base import DatabaseStore

logger = logging.getLogger("hfsiamese.search.duplicate_index")  # the logger these lines have always come from


def find_duplicates(
    index: SearchIndex,
    threshold: float | None,
    k: int,
    probability_threshold: float | None,
    show_progress_bar: bool,
    reranker: Any | None,
    candidate_threshold: float | None,
) -> list[dict[str, Any]]:
    """The pairs `DuplicateIndex.find_duplicates` describes (its arguments checked, the reranker resolved)."""
    store = mining_store(index)  # a database's rows mined in memory, exactly
    if reranker is not None:
        return _reranked(
            index, store, reranker, threshold, k, probability_threshold, candidate_threshold, show_progress_bar
        )
    if candidate_threshold is not None:
        raise ValueError(
            "candidate_threshold applies only with a cross_encoder: without one, threshold= is the cosine that decides"
        )
    return _mine_pairs(index, store, threshold, k, probability_threshold, show_progress_bar)


def _in_memory_copy(index: SearchIndex) -> InMemoryStore:
    """An exact in-memory store of a database collection's rows (to mine pairs among them)."""
    store = InMemoryStore(
        index.embedding_dim, query_chunk_size=index.query_chunk_size, corpus_chunk_size=index.corpus_chunk_size
    )
    ids, texts, vectors = cast("DatabaseStore", index.store).read_all()  # no numbered rows: a database
    if ids:
        store.add(ids, texts, vectors)
    return store


def _reranked(
    index: SearchIndex,
    store: InMemoryStore,
    reranker: Any,
    threshold: float | None,
    k: int,
    probability_threshold: float | None,
    candidate_threshold: float | None,
    show_progress_bar: bool,
) -> list[dict[str, Any]]:
    """The bi-encoder's candidate pairs (cosine >= candidate_threshold), rescored and decided by the cross-encoder."""
    if probability_threshold is None:
        decision = cross_encoder_threshold(reranker, threshold)
        if decision is None:  # said before any mining
            raise ValueError(NO_CROSS_ENCODER_THRESHOLD)
    else:  # a P(duplicate), as the lowest cross-encoder score that reaches it
        decision = resolve_decision_threshold(getattr(reranker, "config", None), threshold, probability_threshold)
    candidates = check_threshold(candidate_threshold) if candidate_threshold is not None else index.threshold
    if candidates is None:
        raise ValueError(
            "no cosine threshold for the bi-encoder's candidate pairs: pass candidate_threshold=... (a cosine in "
            "[-1, 1]), or build the index with a model whose config.threshold is calibrated"
        )
    pairs = _mine_pairs(index, store, candidates, k, None, show_progress_bar)
    return rerank_pairs(reranker, pairs, threshold=decision)


def mining_store(index: SearchIndex) -> InMemoryStore:
    """The store whose neighbour search mines `index`: its own, or an exact in-memory copy of a database's rows."""
    store = index.store
    return cast("InMemoryStore", store) if store.numbered_rows else _in_memory_copy(index)


def cosine_threshold(index: SearchIndex, threshold: float | None, probability_threshold: float | None) -> float:
    """The cosine that decides a pair: `threshold`, else the lowest cosine whose calibrated P(duplicate) reaches
    `probability_threshold`, else the index's."""
    if probability_threshold is not None:  # a P(duplicate), as the lowest cosine that reaches it
        return resolve_decision_threshold(
            None, check_threshold(threshold), probability_threshold, calibrator=index.calibrator
        )
    return resolve_threshold(
        check_threshold(threshold),
        index.threshold,
        hint=(
            "; the index compares cosine similarities, so a model with a classification head (whose threshold "
            "is a probability) gives it none"
        ),
    )


def mine_rows(
    index: SearchIndex, store: InMemoryStore, threshold: float, k: int, show_progress_bar: bool
) -> ParaphrasePairs:
    """The row pairs of `store` whose cosine reaches `threshold` (a warning where the `k` cap may hide some)."""
    found = paraphrase_pairs(
        store.neighbour_search(),
        threshold,
        k,
        num_texts=len(store.table),
        query_chunk_size=index.query_chunk_size,
        show_progress_bar=show_progress_bar,
    )
    if index.lexical is not None:  # each text's BM25 neighbours as candidates too, decided by the cosine
        found = with_lexical_pairs(
            found, store, index.lexical, threshold, k, query_chunk_size=index.query_chunk_size,
            show_progress_bar=show_progress_bar,
        )  # fmt: skip
    if found.capped:
        logger.warning(
            f"{found.capped} texts have all {min(k, len(store) - 1)} nearest neighbours at or above the threshold "
            f"{threshold}: pairs inside such clusters may be missing; raise k (k={len(store) - 1} is exhaustive)"
        )
    return found


def _mine_pairs(
    index: SearchIndex,
    store: InMemoryStore,
    threshold: float | None,
    k: int,
    probability_threshold: float | None,
    show_progress_bar: bool,
) -> list[dict[str, Any]]:
    """The bi-encoder's duplicate pairs: cosine (or its calibrated probability) at or above the threshold."""
    calibrator = index.calibrator
    threshold = cosine_threshold(index, threshold, probability_threshold)
    found = mine_rows(index, store, threshold, k, show_progress_bar)
    if not found.scores:
        return []
    side_a, side_b = store.corpus[found.rows_a], store.corpus[found.rows_b]
    pairs = [
        {"id_a": ia, "text_a": ta, "id_b": ib, "text_b": tb, "score": s}
        for ia, ta, ib, tb, s in zip(side_a["id"], side_a["text"], side_b["id"], side_b["text"], found.scores)
    ]
    if calibrator is not None:
        for pair, probability in zip(pairs, calibrator.probability(found.scores).tolist()):
            pair["probability"] = probability
    return pairs


__all__ = ["cosine_threshold", "find_duplicates", "mine_rows", "mining_store"]
