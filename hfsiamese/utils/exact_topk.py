"""Exact top-k cosine search in torch, in chunks so that no query × corpus matrix is ever whole.

Written by hand because the alternatives either need an optional install (faiss) or materialise the
full similarity matrix (`torch.topk` over `queries @ corpus.T`), which for 100k × 1M texts is 400 GB.
Here memory is bounded by `query_chunk_size × corpus_chunk_size` scores plus the running top-k.
"""

from __future__ import annotations

import torch


def topk_cosine(
    queries: torch.Tensor,
    corpus: torch.Tensor,
    k: int,
    *,
    query_chunk_size: int = 1024,
    corpus_chunk_size: int = 65536,
    exclude_indices: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """
    The `k` corpus rows most similar to each query (dot product; pass L2-normalised rows for cosine).

    Args:
        queries: `(num_queries, dim)` embeddings.
        corpus: `(num_corpus, dim)` embeddings.
        k: matches per query; capped at the number of corpus rows that can be returned.
        exclude_indices: optional `(num_queries,)` corpus index to leave out of each query's results
            (its own row when the queries are the corpus itself); -1 (or any row outside the corpus) excludes
            nothing. Where a query excludes nothing here, `k` is not lowered for it, and a place that only an
            excluded row could fill comes back as row -1 with score -inf.

    Returns:
        `(scores, indices)`, both `(num_queries, k)`, best first; float32 scores, int64 indices.
    """
    if queries.dim() != 2 or corpus.dim() != 2:
        raise ValueError(f"queries and corpus must be 2-D, got shapes {tuple(queries.shape)} and {tuple(corpus.shape)}")
    if queries.shape[1] != corpus.shape[1]:
        raise ValueError(f"queries have dimension {queries.shape[1]} but the corpus has {corpus.shape[1]}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if exclude_indices is not None and exclude_indices.shape != (queries.shape[0],):
        raise ValueError(f"exclude_indices must have shape ({queries.shape[0]},), got {tuple(exclude_indices.shape)}")
    # Each query loses one row to its exclusion only where its excluded row is in this corpus (a corpus searched
    # piece by piece holds it in one piece only); elsewhere an excluded query may come back with a -1 row.
    excluded_inside = exclude_indices is not None and bool(
        ((exclude_indices >= 0) & (exclude_indices < corpus.shape[0])).all()
    )
    available = corpus.shape[0] - (1 if excluded_inside and corpus.shape[0] > 0 else 0)
    k = min(k, max(available, 0))
    num_queries = queries.shape[0]
    if k == 0 or num_queries == 0:
        return torch.empty(num_queries, k), torch.empty(num_queries, k, dtype=torch.long)

    all_scores, all_indices = [], []
    for q_start in range(0, num_queries, query_chunk_size):
        query_chunk = queries[q_start : q_start + query_chunk_size].float()
        best_scores = torch.full((query_chunk.shape[0], k), float("-inf"))
        best_indices = torch.full((query_chunk.shape[0], k), -1, dtype=torch.long)
        for c_start in range(0, corpus.shape[0], corpus_chunk_size):
            corpus_chunk = corpus[c_start : c_start + corpus_chunk_size].float()
            scores = query_chunk @ corpus_chunk.T
            if exclude_indices is not None:
                local = exclude_indices[q_start : q_start + query_chunk_size] - c_start
                inside = (local >= 0) & (local < corpus_chunk.shape[0])
                rows = torch.nonzero(inside).squeeze(1)
                scores[rows, local[rows]] = float("-inf")
            chunk_k = min(k, corpus_chunk.shape[0])
            chunk_scores, chunk_indices = scores.topk(chunk_k, dim=1)
            merged_scores = torch.cat([best_scores, chunk_scores], dim=1)
            merged_indices = torch.cat([best_indices, chunk_indices + c_start], dim=1)
            best_scores, order = merged_scores.topk(k, dim=1)
            best_indices = merged_indices.gather(1, order)
        best_indices[best_scores == float("-inf")] = -1  # an excluded row that filled a place
        all_scores.append(best_scores)
        all_indices.append(best_indices)
    return torch.cat(all_scores), torch.cat(all_indices)


__all__ = ["topk_cosine"]
