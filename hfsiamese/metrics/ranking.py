"""
Retrieval quality of ranked result lists: MRR@k, recall@k and nDCG@k with binary relevance.

Each query comes as the corpus ids it retrieved (best first) and the ids relevant to it. The
retrieval metric modules and `hfsiamese.evaluation.evaluate_retrieval` use these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
import sklearn.metrics

__all__ = ["RankedHits", "check_ks", "mrr_at_k", "ndcg_at_k", "ranked_hits", "recall_at_k"]


class RankedHits(NamedTuple):
    """Which of each query's first `depth` results are relevant, and how many relevant ids it has."""

    hits: np.ndarray  # bool, (num_queries, depth); False past the end of a short result list
    num_relevant: np.ndarray  # int64, (num_queries,)


def check_ks(k: int | Iterable[int]) -> tuple[int, ...]:
    """The cut-offs as a sorted tuple of distinct positive ints."""
    ks = (k,) if isinstance(k, (int, np.integer)) else tuple(k)
    if not ks or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1 for v in ks):
        raise ValueError(f"k must be a positive int or a non-empty list of them, got {k!r}")
    return tuple(sorted({int(v) for v in ks}))


def ranked_hits(retrieved: Sequence[Sequence[int]], relevant: Sequence[Sequence[int]], depth: int) -> RankedHits:
    """
    The hit matrix of the first `depth` results of every query.

    Ids are non-negative ints (e.g. corpus row numbers). A query must have at least one relevant
    id, and neither list may repeat an id. Vectorised: every (query, id) pair becomes one int64
    key, and `numpy.isin` matches the keys of the results against those of the relevant ids.
    """
    if len(retrieved) != len(relevant):
        raise ValueError(f"got result lists for {len(retrieved)} queries but relevant ids for {len(relevant)}")
    if len(retrieved) == 0:
        raise ValueError("no queries to evaluate")
    num_queries = len(retrieved)
    results = np.full((num_queries, depth), -1, dtype=np.int64)
    for row, ids in enumerate(retrieved):  # ragged lists: one row copy per query
        ids = np.asarray(ids, dtype=np.int64)[:depth]
        results[row, : len(ids)] = ids
    num_relevant = np.fromiter((len(ids) for ids in relevant), dtype=np.int64, count=num_queries)
    empty = np.flatnonzero(num_relevant == 0)
    if empty.size:
        raise ValueError(
            f"{empty.size} queries (e.g. query {int(empty[0])}) have no relevant ids: recall and MRR are undefined "
            "for them, so leave them out"
        )
    flat_relevant = np.concatenate([np.asarray(ids, dtype=np.int64) for ids in relevant])
    if (flat_relevant < 0).any() or (results < -1).any():
        raise ValueError("ids must be non-negative ints (corpus row numbers)")
    sorted_results = np.sort(results, axis=1)
    repeated = (sorted_results[:, 1:] == sorted_results[:, :-1]) & (sorted_results[:, 1:] >= 0)
    if repeated.any():
        row = int(np.flatnonzero(repeated.any(axis=1))[0])
        raise ValueError(f"the results of query {row} repeat an id: each corpus id may be retrieved once")
    width = int(max(flat_relevant.max(), results.max())) + 1
    query_of_relevant = np.repeat(np.arange(num_queries, dtype=np.int64), num_relevant)
    relevant_keys = query_of_relevant * width + flat_relevant
    if len(np.unique(relevant_keys)) != len(relevant_keys):
        raise ValueError("a query lists the same relevant id twice")
    result_keys = np.arange(num_queries, dtype=np.int64)[:, None] * width + results
    hits = np.isin(result_keys, relevant_keys) & (results >= 0)
    return RankedHits(hits, num_relevant)


# MRR and recall are hand-written: scikit-learn's ranking metrics take a dense score for every
# candidate, while these are one reduction each over the hit matrix.
def mrr_at_k(hits: RankedHits, k: int) -> float:
    """Mean over queries of 1 / rank of the first relevant result within the top k (0 if none)."""
    top = _top(hits, k)
    first = np.argmax(top, axis=1)
    reciprocal = np.where(top.any(axis=1), 1.0 / (first + 1), 0.0)
    return float(reciprocal.mean())


def recall_at_k(hits: RankedHits, k: int) -> float:
    """Mean over queries of the share of its relevant ids found within the top k."""
    return float((_top(hits, k).sum(axis=1) / hits.num_relevant).mean())


def ndcg_at_k(hits: RankedHits, k: int) -> float:
    """
    Mean nDCG@k with binary gains, by `sklearn.metrics.ndcg_score`.

    scikit-learn wants, per query, a relevance and a score for each candidate. The candidates here
    are the `depth` result slots, scored by rank (the empty slots of a short list are not relevant),
    then the relevant ids that were not retrieved, scored below every slot: they count in the
    ideal DCG but can never reach the top k (k <= depth). At least one column follows the slots,
    so the matrix is at least two wide, as `ndcg_score` requires.
    """
    _top(hits, k)
    num_queries, depth = hits.hits.shape
    missing = hits.num_relevant - hits.hits.sum(axis=1)
    extra = max(int(missing.max()), 1)
    relevance = np.zeros((num_queries, depth + extra))
    relevance[:, :depth] = hits.hits
    relevance[:, depth:] = np.arange(extra)[None, :] < missing[:, None]
    scores = np.full_like(relevance, -1.0)
    scores[:, :depth] = np.arange(depth, 0, -1)[None, :]
    return float(sklearn.metrics.ndcg_score(relevance, scores, k=k))


def _top(hits: RankedHits, k: int) -> np.ndarray:
    if not 1 <= k <= hits.hits.shape[1]:
        raise ValueError(f"k={k} is outside the {hits.hits.shape[1]} ranks the hit matrix holds")
    return hits.hits[:, :k]
