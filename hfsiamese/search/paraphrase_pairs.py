"""
Paraphrase mining inside one set of embeddings: every pair of rows whose cosine reaches a threshold,
found through each row's `k` nearest neighbours, without ever building the `N x N` matrix.

A top-k cap is chosen over a "keep every score above the threshold" scan because the latter's output
(and memory) is unbounded: a low threshold over 1M texts yields billions of pairs. Memory is bounded
by the chunk sizes plus `N * k` candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

from hfsiamese.utils.exact_topk import topk_cosine


class ParaphrasePairs(NamedTuple):
    """Row pairs `(rows_a[i], rows_b[i])`, `rows_a < rows_b`, best `scores` first (ties: row order)."""

    rows_a: list[int]
    rows_b: list[int]
    scores: list[float]
    # Rows whose k-th neighbour still passed the threshold: pairs inside their clusters may be missing.
    capped: int


# `neighbours(start, stop, k)`: the `k` best `(scores, rows)` for each of the rows `start..stop - 1`, each
# row itself left out: exact (`exact_neighbours`) or through an approximate index (`DuplicateIndex`).
NeighbourSearch = Callable[[int, int, int], tuple[torch.Tensor, torch.Tensor]]


def exact_neighbours(
    embeddings: torch.Tensor, *, query_chunk_size: int = 1024, corpus_chunk_size: int = 65536
) -> NeighbourSearch:
    """The exact neighbour search over one `(N, dim)` tensor (chunked top-k, `topk_cosine`)."""

    def neighbours(start: int, stop: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        return topk_cosine(
            embeddings[start:stop],
            embeddings,
            k,
            query_chunk_size=query_chunk_size,
            corpus_chunk_size=corpus_chunk_size,
            exclude_indices=torch.arange(start, stop),
        )

    return neighbours


def paraphrase_pairs(
    neighbours: NeighbourSearch | torch.Tensor,
    threshold: float,
    k: int,
    *,
    num_texts: int | None = None,
    query_chunk_size: int = 1024,
    corpus_chunk_size: int = 65536,
    show_progress_bar: bool = False,
) -> ParaphrasePairs:
    """
    Pairs of rows whose similarity is at least `threshold`, each once.

    `neighbours` is a neighbour search (`NeighbourSearch`, with `num_texts` rows), or a `(N, dim)`
    tensor of L2-normalised rows, searched exactly (dot products).

    The limit that comes with the `k` cap: a pair is missed only when each of its two rows has `k`
    other neighbours scoring higher than the pair itself, i.e. inside a cluster of more than `k + 1`
    near-identical rows; `capped` counts the rows where that may have happened (`k >= N - 1` is
    exhaustive). Cost is `N^2` dot products when exact.
    """
    if isinstance(neighbours, torch.Tensor):
        num_texts = len(neighbours)
        neighbours = exact_neighbours(
            neighbours, query_chunk_size=query_chunk_size, corpus_chunk_size=corpus_chunk_size
        )
    elif num_texts is None:
        raise ValueError("num_texts is needed with a neighbour search function")
    if num_texts < 2:
        return ParaphrasePairs([], [], [], 0)
    k = min(k, num_texts - 1)
    firsts, seconds, pair_scores = [], [], []
    capped = 0
    starts = range(0, num_texts, query_chunk_size)
    if show_progress_bar:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc="Mining pairs", unit="chunk")
    for start in starts:
        stop = min(start + query_chunk_size, num_texts)
        own = torch.arange(start, stop)
        scores, rows = neighbours(start, stop, k)
        keep = (scores >= threshold) & (rows >= 0)
        if k < num_texts - 1:
            capped += int(keep[:, -1].sum()) if keep.shape[1] == k else 0
        anchors = own[:, None].expand_as(rows)[keep]
        partners = rows[keep]
        firsts.append(torch.minimum(anchors, partners))
        seconds.append(torch.maximum(anchors, partners))
        pair_scores.append(scores[keep])
    first, second, score = torch.cat(firsts), torch.cat(seconds), torch.cat(pair_scores)
    if first.numel() == 0:
        return ParaphrasePairs([], [], [], capped)
    # Each pair may come from both of its rows' neighbour lists: keep it once, with its best
    # score (the two dot products can differ in the last bit when computed in other chunks).
    keys, inverse = torch.unique(first * num_texts + second, return_inverse=True)
    best = torch.full((len(keys),), float("-inf")).scatter_reduce(0, inverse, score, reduce="amax")
    order = torch.sort(best, descending=True, stable=True).indices  # ties: index order
    keys, best = keys[order], best[order]
    return ParaphrasePairs((keys // num_texts).tolist(), (keys % num_texts).tolist(), best.tolist(), capped)


__all__ = ["NeighbourSearch", "ParaphrasePairs", "exact_neighbours", "paraphrase_pairs"]
