"""
How the keyword (BM25) and dense (cosine) result lists of one query become one ranking, by the two usual rules:

* reciprocal rank fusion (`"rrf"`, Cormack, Clarke & Buettcher, SIGIR 2009): each candidate scores
  `sum over the lists it is in of 1 / (rrf_k + rank)`, rank counted from 1; `rrf_k = 60` (`RRF_K`) is the paper's
  constant, the default of Elasticsearch, OpenSearch and Qdrant. Only ranks count, so the two score scales need no
  reconciling; a larger `rrf_k` flattens the difference between the first ranks.
* a weighted sum of normalised scores (`"weighted"`, as Weaviate's relative score fusion):
  `(1 - lexical_weight) * dense + lexical_weight * lexical`, where `dense` is the cosine min-max normalised over the
  dense list (its lowest 0, its highest 1; clipped to [0, 1] for a candidate found by BM25 only) and `lexical` the
  BM25 score divided by the lexical list's highest (0 for a candidate sharing no word with the query: BM25's own 0).

Candidates of equal fused score keep their first appearance (the dense list first): the order is deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

Key = TypeVar("Key", bound=Hashable)

RRF_K = 60
DEFAULT_LEXICAL_WEIGHT = 0.3
HYBRID_METHODS = ("rrf", "weighted")


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Key]], rrf_k: int = RRF_K) -> list[tuple[Key, float]]:
    """`(candidate, fused score)` pairs, best first, of ranked lists of candidates (best first each)."""
    fused: dict[Key, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (rrf_k + rank)
    return _best_first(fused)


def weighted_fusion(
    dense: Mapping[Key, float],
    lexical: Mapping[Key, float],
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT,
    *,
    dense_range: tuple[float, float] | None = None,
) -> list[tuple[Key, float]]:
    """
    `(candidate, fused score)` pairs, best first, of every candidate in `dense` (its cosine: give one for each
    candidate, BM25's too) or `lexical` (its BM25 score, where BM25 found it). `dense_range`: the lowest and highest
    cosine of the dense list, that normalise every cosine (default: those of `dense`).
    """
    low, high = (
        dense_range if dense_range is not None else (min(dense.values(), default=0.0), max(dense.values(), default=0.0))
    )
    top_lexical = max(lexical.values(), default=0.0)
    fused: dict[Key, float] = {}
    for key in [*dense, *(key for key in lexical if key not in dense)]:
        cosine = dense.get(key)
        dense_part = (
            0.0 if cosine is None else (1.0 if high <= low else min(1.0, max(0.0, (cosine - low) / (high - low))))
        )
        lexical_part = lexical.get(key, 0.0) / top_lexical if top_lexical > 0 else 0.0
        fused[key] = (1.0 - lexical_weight) * dense_part + lexical_weight * lexical_part
    return _best_first(fused)


def _best_first(fused: dict[Key, float]) -> list[tuple[Key, float]]:
    """Highest score first; ties in insertion order (`sorted` is stable)."""
    return sorted(fused.items(), key=lambda item: -item[1])


__all__ = ["DEFAULT_LEXICAL_WEIGHT", "HYBRID_METHODS", "RRF_K", "reciprocal_rank_fusion", "weighted_fusion"]
