"""
Duplicate groups from duplicate pairs: the connected components of the pair graph (`scipy.sparse.csgraph`, memory
bounded by the pairs, never `N x N`), each split again where it chains (A≈B, B≈C, but A≉C) by a guard.

The guards (`GUARDS`):

* `"canonical"` (the default): every member must reach the threshold against the group's canonical question; the
  members that do not are grouped again among themselves (their own components, their own canonical).
* `"mean"`: every member's mean cosine to the other members must reach the threshold; those below it are grouped
  again among themselves, the rest re-checked (their mean has changed).
* `"none"`: plain connected components (chains kept whole).

Why `"canonical"` is the default: measured with `benchmarks/search/groups_scale.py` on 20,000 synthetic questions
with known groups (seeded near-copies of 2,000 real QQP questions, each copy's source its known group; character
n-gram TF-IDF embeddings, no trained model being at hand offline), B-cubed F1 against the known groups was, at
cosine 0.7, 0.866 for `"canonical"`, 0.839 for `"mean"`, 0.712 for plain components (whose largest component held
4,316 questions) and 0.793 for sentence-transformers' `community_detection`; at cosine 0.8, 0.885, 0.871 and 0.866.
Beyond the measurement, `"canonical"` promises what a reader of a group needs: each member is a duplicate of the
question it links to; and `add(..., assign_groups=True)` matches a rebuild with it (see `assignment`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

from hfsiamese.search.groups.canonical import choose_canonical

GUARDS = ("canonical", "mean", "none")
DEFAULT_GUARD = "canonical"

# `vectors(rows)`: the L2-normalised float32 embeddings of these rows, `(len(rows), dim)`.
RowVectors = Callable[[np.ndarray], np.ndarray]


def check_guard(guard: str) -> str:
    if guard not in GUARDS:
        raise ValueError(f"guard must be one of {GUARDS}, got {guard!r}")
    return guard


def pair_graph(num_rows: int, rows_a: Any, rows_b: Any) -> csr_matrix:
    """The `num_rows x num_rows` sparse graph of the pairs (one entry a pair: components read it undirected)."""
    rows_a, rows_b = np.asarray(rows_a, dtype=np.int64), np.asarray(rows_b, dtype=np.int64)
    ones = np.ones(len(rows_a), dtype=np.int8)
    return coo_matrix((ones, (rows_a, rows_b)), shape=(num_rows, num_rows)).tocsr()


def components(graph: csr_matrix, rows: np.ndarray | None = None, *, min_size: int = 1) -> list[np.ndarray]:
    """The connected components (row numbers, ascending) of `graph`, or of its subgraph on `rows`, of at least
    `min_size` rows, ordered by their first row."""
    sub = graph if rows is None else graph[rows][:, rows]
    _, labels = connected_components(sub, directed=False)
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels)
    pieces = np.split(order, np.cumsum(sizes)[:-1])
    found = [piece if rows is None else rows[piece] for piece in pieces if len(piece) >= min_size]
    return sorted(found, key=lambda piece: int(piece[0]))


def _kept(vectors: np.ndarray, canonical: int, threshold: float, guard: str) -> np.ndarray:
    """Which members pass the guard (the canonical always does, for `"canonical"`)."""
    if guard == "canonical":
        kept = vectors @ vectors[canonical] >= threshold
        kept[canonical] = True
        return kept
    total = vectors.sum(axis=0)
    means = (vectors @ total - (vectors * vectors).sum(axis=1)) / (len(vectors) - 1)
    kept = means >= threshold
    if not kept.any():  # none is central enough: the most central one stays, so that each round shrinks the group
        kept[int(np.argmax(means))] = True
    return kept


def guarded_groups(
    graph: csr_matrix,
    vectors: RowVectors,
    threshold: float,
    guard: str,
    canonical_rule: str,
    *,
    show_progress_bar: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    `(group of each row, canonical row of each group, each row's cosine to its canonical)`: groups numbered by their
    first row, a row without pairs a group of its own (its own canonical, score 1).
    """
    num_rows = graph.shape[0]
    group_of = np.arange(num_rows, dtype=np.int64)  # a group's label is its first row until renumbered
    canonical_of_label: dict[int, int] = {}
    scores = np.ones(num_rows, dtype=np.float32)
    queue = components(graph, min_size=2)
    progress = None
    if show_progress_bar:
        from tqdm.auto import tqdm

        progress = tqdm(total=int(sum(len(piece) for piece in queue)), desc="Grouping", unit="question")
    while queue:
        members = queue.pop()
        member_vectors = vectors(members)
        canonical = choose_canonical(members, member_vectors, canonical_rule)
        kept = np.ones(len(members), dtype=bool) if guard == "none" or len(members) == 1 else None
        if kept is None:
            kept = _kept(member_vectors, canonical, threshold, guard)
        if kept.all():
            group_of[members] = members[0]
            canonical_of_label[int(members[0])] = int(members[canonical])
            scores[members] = member_vectors @ member_vectors[canonical]
            scores[members[canonical]] = 1.0
            if progress is not None:
                progress.update(len(members))
            continue
        queue.extend(components(graph, members[kept]))
        queue.extend(components(graph, members[~kept]))
    if progress is not None:
        progress.close()
    labels, group_of = np.unique(group_of, return_inverse=True)  # labels are first rows: ascending = by first row
    canonical_rows = np.array([canonical_of_label.get(int(label), int(label)) for label in labels], dtype=np.int64)
    return group_of.astype(np.int64), canonical_rows, scores


__all__ = ["DEFAULT_GUARD", "GUARDS", "RowVectors", "check_guard", "components", "guarded_groups", "pair_graph"]
