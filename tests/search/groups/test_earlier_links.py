"""The links groups are made from (`hfsiamese.search.groups.earlier_links`): each row's `k` nearest earlier rows at
the threshold, against a brute-force reading of the rule; the same links as every pair at the threshold where no row
has more than `k` duplicates."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hfsiamese.search.groups.earlier_links import earlier_links, vectors_search
from hfsiamese.search.paraphrase_pairs import paraphrase_pairs

THRESHOLD = 0.8


def near_copies(seed: int, clusters: int = 5, size: int = 9, spread: float = 0.3) -> np.ndarray:
    """`clusters` clusters of `size` near-copies (unit rows, in a shuffled order), two rows repeated exactly (ties)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, 8))
    rows = np.repeat(centres, size, axis=0) + spread * rng.standard_normal((clusters * size, 8))
    rows[1] = rows[0]
    rows[-1] = rows[0]
    rows = rows[rng.permutation(len(rows))]
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def by_the_rule(vectors: np.ndarray, threshold: float, k: int) -> set[tuple[int, int]]:
    """Each row's `k` nearest earlier rows at or above the threshold, read off the whole cosine matrix (in float64,
    rounded to float32: identical rows get identical cosines, whichever CPU kernel multiplies)."""
    wide = vectors.astype(np.float64)
    cosines = (wide @ wide.T).astype(np.float32)
    links = set()
    for row in range(len(vectors)):
        earlier = sorted(
            (-float(cosines[row, other]), other) for other in range(row) if cosines[row, other] >= threshold
        )
        links |= {(row, other) for _, other in earlier[:k]}
    return links


@pytest.mark.parametrize("k", [1, 2, 3, 6, 100])
def test_each_row_links_to_its_k_nearest_earlier_duplicates(k):
    for seed in range(3):
        vectors = near_copies(seed)
        found = earlier_links(vectors_search(vectors), len(vectors), THRESHOLD, k, query_chunk_size=7)
        assert set(zip(found.later.tolist(), found.earlier.tolist())) == by_the_rule(vectors, THRESHOLD, k)
        assert np.all(found.earlier < found.later)
        cosines = (vectors[found.later] * vectors[found.earlier]).sum(axis=1)
        assert found.scores == pytest.approx(cosines, abs=1e-6)
        per_row = np.bincount(found.later, minlength=len(vectors))
        assert found.capped == int((per_row == min(k, len(vectors) - 1)).sum())


class RoundingSearch:
    """An exact prefix search whose scores come back a few float32 steps low, as a matrix product of another shape
    rounds them on some CPUs (an AVX-512 Xeon: 0.98387331 searched in a chunk, 0.98387337 compared one at a time)."""

    def __init__(self, vectors: np.ndarray, steps: int = 4) -> None:
        self.inner, self.steps = vectors_search(vectors), steps

    def vectors(self, start: int, stop: int) -> np.ndarray:
        return self.inner.vectors(start, stop)

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        return self.inner.vectors_of(rows)

    def before(self, queries: np.ndarray, start: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
        scores, rows = self.inner.before(queries, start, depth)
        for _ in range(self.steps):
            scores = np.nextafter(scores, np.float32(-np.inf))
        return scores, rows


@pytest.mark.parametrize("k", [1, 2, 3])
def test_identical_earlier_rows_tie_however_the_search_rounds(k):
    """Three identical rows: whether one of them is compared within a row's chunk or searched among the rows before
    it, its cosine is the same, so a row's k-th place goes to the earliest (the rule an add follows too)."""
    for seed in range(3):
        vectors = near_copies(seed)
        found = earlier_links(RoundingSearch(vectors), len(vectors), THRESHOLD, k, query_chunk_size=7)
        assert set(zip(found.later.tolist(), found.earlier.tolist())) == by_the_rule(vectors, THRESHOLD, k)


def test_ties_at_the_kth_place_go_to_the_earlier_row():
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.6, 0.8], [0.6, 0.8], [1.0, 0.0]], dtype=np.float32)
    found = earlier_links(vectors_search(vectors), len(vectors), 0.5, 1)
    assert dict(zip(found.later.tolist(), found.earlier.tolist())) == {1: 0, 2: 1, 3: 1, 4: 0}


@pytest.mark.parametrize("k", [6, 9])  # 6: as many as the most duplicates a row has here
def test_where_no_row_has_more_than_k_duplicates_the_links_are_every_pair_at_the_threshold(k):
    vectors = near_copies(0, clusters=12, size=4, spread=0.3)
    cosines = vectors @ vectors.T
    assert ((cosines >= THRESHOLD).sum(axis=1) - 1).max() <= k  # the cap never binds here
    pairs = paraphrase_pairs(torch.from_numpy(vectors), THRESHOLD, k)
    found = earlier_links(vectors_search(vectors), len(vectors), THRESHOLD, k)
    assert set(zip(found.later.tolist(), found.earlier.tolist())) == set(zip(pairs.rows_b, pairs.rows_a))
    assert len(found.later) > len(vectors) // 2  # links to compare, not an empty match


def test_no_rows_to_link():
    for vectors in (np.zeros((0, 2), dtype=np.float32), np.array([[1.0, 0.0]], dtype=np.float32)):
        found = earlier_links(vectors_search(vectors), len(vectors), THRESHOLD, 3)
        assert len(found.later) == len(found.earlier) == len(found.scores) == found.capped == 0
