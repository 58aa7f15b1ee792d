"""
How many candidates a cross-encoder reranks (`rerank_k`), and when `rerank_k` may be given at all.

One rule, in one wording, for the library's search, `hfsiamese search`, `serve`'s settings and `app`'s flags, which
check them before any model or index is loaded. Plain checks on numbers, apart from the reranking itself
(`hfsiamese.search.reranking`, which re-exports them).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_RERANK_K",
    "RERANK_K_WITHOUT_CROSS_ENCODER",
    "check_rerank_k",
    "default_rerank_k",
    "refuse_rerank_k_without_cross_encoder",
]

# Candidates the bi-encoder retrieves per query for the cross-encoder to rerank, when not told: at least
# this many, and twice the matches asked for, so that reranking can bring in candidates beyond the
# bi-encoder's own top k (with rerank_k == k it only reorders them).
DEFAULT_RERANK_K = 20
RERANK_K_WITHOUT_CROSS_ENCODER = (
    "rerank_k applies only with a cross_encoder (--cross_encoder): without one the search returns the bi-encoder's "
    "top k"
)


def default_rerank_k(k: int) -> int:
    """How many candidates a search returning `k` matches reranks by default: `max(2 * k, DEFAULT_RERANK_K)`."""
    return max(2 * k, DEFAULT_RERANK_K)


def check_rerank_k(rerank_k: int | None, k: int) -> int:
    """`rerank_k` (default `default_rerank_k(k)`), refusing one below `k`: reranking cannot return more than it scored."""
    if rerank_k is None:
        return default_rerank_k(k)
    if isinstance(rerank_k, bool) or not isinstance(rerank_k, int) or rerank_k < 1:
        raise ValueError(f"rerank_k must be an integer of at least 1, got {rerank_k!r}")
    if rerank_k < k:
        raise ValueError(
            f"rerank_k ({rerank_k}) must be at least k ({k}): the cross-encoder reranks rerank_k candidates and keeps k"
        )
    return rerank_k


def refuse_rerank_k_without_cross_encoder(rerank_k: int | None, cross_encoder: object | None) -> None:
    """A `rerank_k` with no cross-encoder is refused: nothing would rerank, and the bi-encoder's top k would come back
    as if it had."""
    if rerank_k is not None and cross_encoder is None:
        raise ValueError(RERANK_K_WITHOUT_CROSS_ENCODER)
