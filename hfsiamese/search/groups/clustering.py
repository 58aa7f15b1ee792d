"""
Duplicate groups from duplicate links (`earlier_links`: each question's `k` nearest earlier duplicates): the connected
components of the link graph (`scipy.sparse.csgraph`, memory bounded by the links, never `N x N`), each split again
where it chains (A≈B, B≈C, but A≉C) by a guard.

The guards (`GUARDS`):

* `"mean"` (the default): a question joins a group only if its mean cosine to the group's members reaches the
  threshold;
* `"canonical"`: only if its cosine to the group's canonical does (so every member is a duplicate of the question it
  links to);
* `"none"`: plain connected components (chains kept whole);
* `"cross_encoder"`: `"mean"`, with the links it would refuse (and those into a group of `check_size` members)
  decided by a cross-encoder (`cross_encoder_guard`).

A guard compares with the pair threshold, or with `GroupSettings.group_threshold` where one was set
(`threshold_fitting` calibrates it on validation pairs).

With a guard, the questions are placed in index order (`placement.place`): each joins the group of its most
similar linked earlier duplicate whose guard it passes, else starts one, exactly as `add(..., assign_groups=True)`
places a new question from the same links, so that keeping the groups current agrees with a rebuild.

Why `"mean"` is the default: B-cubed F1 against known groups, measured with character 3-5-gram TF-IDF embeddings (reduced to 256 dimensions; `benchmarks/search/groups_scale.py`
`TfidfEncoder`), k=10:

    data (known groups)                                     cosine  none   canonical  mean
    QQP dev, its 19,056 questions (components of the         0.7    0.545  0.721      0.732
      5,000 labelled duplicate pairs: incomplete, so          0.8    0.767  0.808      0.811
      unlabelled duplicates count against every guard)        0.9    0.839  0.8445     0.845
    groups_scale.py --num_texts 20000 --num_sources 2000     0.7    0.712  0.915      0.922
      (near-copies of 2,000 real questions: their source)    0.8    0.866  0.901      0.907

`"mean"` wins every row, if narrowly; plain components lump chains (at cosine 0.7 on QQP one component held 9,285
questions). sentence-transformers' `community_detection` scored 0.790 on QQP dev at cosine 0.8 and 0.793 on the
synthetic corpus at 0.7. An
earlier version split each component top-down (drop the members below the guard, group them again); placing in
order scored higher on the synthetic corpus (0.922 against 0.839 for `"mean"`) and agrees with incremental
assignment, which the top-down split could not (on QQP at cosine 0.7 the top-down `"mean"` scored 0.822, at 0.8
and 0.9 within 0.02 of the placement).

With the MiniLM recipe's model at its calibrated threshold, plain components made one group of 2,391 of QQP dev's
18,056 questions (F1 0.794; `"mean"` 0.863, largest group 61). The guard's price, on the 1,893 validation questions
where there is little to chain: deciding pairs by "same group" is 0.010 less accurate than the pair threshold
(0.845 against 0.855; plain components 0.856), `benchmarks/quality/group_decisions.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.sparse import coo_matrix, csr_matrix
from scipy.sparse.csgraph import connected_components

from hfsiamese.search.groups.canonical import choose_canonical
from hfsiamese.search.groups.cross_encoder_guard import LinkJudge
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups, GroupSettings
from hfsiamese.search.groups.guards import DEFAULT_GUARD, GUARDS, check_guard
from hfsiamese.search.groups.placement import place

# `vectors(rows)`: the L2-normalised float32 embeddings of these rows, `(len(rows), dim)`.
RowVectors = Callable[[np.ndarray], np.ndarray]
# Rows whose embeddings are read at once while placing them in order.
_ROW_CHUNK = 4096


def pair_graph(num_rows: int, rows_a: Any, rows_b: Any, scores: Any = None) -> csr_matrix:
    """The `num_rows x num_rows` sparse graph of the pairs, both ways, weighted by their cosines (1 where none)."""
    rows_a, rows_b = np.asarray(rows_a, dtype=np.int64), np.asarray(rows_b, dtype=np.int64)
    weights = np.ones(len(rows_a), dtype=np.float32) if scores is None else np.asarray(scores, dtype=np.float32)
    both = (np.concatenate([rows_a, rows_b]), np.concatenate([rows_b, rows_a]))
    return coo_matrix((np.concatenate([weights, weights]), both), shape=(num_rows, num_rows)).tocsr()


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


def guarded_groups(
    graph: csr_matrix,
    vectors: RowVectors,
    threshold: float,
    guard: str,
    canonical_rule: str,
    *,
    show_progress_bar: bool = False,
    settings: GroupSettings | None = None,
    judge: LinkJudge | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    `(group of each row, canonical row of each group, each row's cosine to its canonical)` from the pair `graph`
    (`pair_graph`): groups numbered by their first row, a row without pairs a group of its own (score 1). With a
    guard, every row in order goes where `placement.place` puts it (its earlier duplicates' groups, most similar
    first, the first whose guard it passes); without one, the connected components. `settings` (the guard's other
    options) and `judge` (the cross-encoder guard's, keyed by row number) serve the `"cross_encoder"` guard.
    """
    check_guard(guard)
    if guard == "none":
        return _components_as_groups(graph, vectors, canonical_rule)
    num_rows = graph.shape[0]
    groups = DuplicateGroups(settings or GroupSettings(threshold, guard, canonical_rule, 1))
    degree = np.diff(graph.indptr)
    member_vectors = GroupVectorCache(vectors)
    starts = range(0, num_rows, _ROW_CHUNK)
    if show_progress_bar:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc="Grouping", unit="chunk")
    for start in starts:
        stop = min(start + _ROW_CHUNK, num_rows)
        paired = np.flatnonzero(degree[start:stop]) + start
        chunk_vectors = dict(zip(paired.tolist(), vectors(paired))) if len(paired) else {}
        for row in range(start, stop):
            if row not in chunk_vectors:
                groups.new_group(row)
                continue
            neighbours = graph.indices[graph.indptr[row] : graph.indptr[row + 1]]
            cosines = graph.data[graph.indptr[row] : graph.indptr[row + 1]]
            earlier = neighbours < row
            order = np.lexsort((neighbours[earlier], -cosines[earlier]))  # most similar first, ties by row
            place(groups, row, chunk_vectors[row], neighbours[earlier][order].tolist(), member_vectors, judge)
    group_of = np.array([groups.group_of(row) for row in range(num_rows)], dtype=np.int64)
    canonical_rows = np.array([groups.canonical_of(group) for group in range(len(groups))], dtype=np.int64)
    scores = np.array([groups.score_of(row) for row in range(num_rows)], dtype=np.float32)
    return group_of, canonical_rows, scores


class GroupVectorCache:
    """
    The members' embeddings of the groups a rebuild places questions into, each large group's kept and grown as it
    grows. Placing a question reads every member of the groups it may join; read afresh each time, the reads grew
    with the square of a group's size (on a dense million-question corpus, groups of thousands: most of the
    rebuild). In a rebuild a group only gains members, at its end, so a group's kept rows are a prefix of its
    members: only the new ones are read. Groups under `min_members` are read afresh (cheap), and no more than
    `max_bytes` are kept (beyond, groups are read afresh); the embeddings are the same either way.
    """

    def __init__(self, vectors: RowVectors, *, min_members: int = 32, max_bytes: int = 1 << 30) -> None:
        self._read, self.min_members, self.max_bytes = vectors, min_members, max_bytes
        self._kept: dict[int, tuple[np.ndarray, int, int]] = {}  # first member -> (rows, count, last member)
        self.kept_bytes = 0

    def __call__(self, members: list[int]) -> np.ndarray:
        if len(members) < self.min_members:
            return self._read(np.asarray(members, dtype=np.int64))
        first, size = members[0], len(members)
        rows, count, last = self._kept.get(first, (None, 0, None))
        if rows is None or count > size or members[count - 1] != last:  # new, or not grown at its end: read whole
            return self._keep(first, members, self._read(np.asarray(members, dtype=np.int64)), rows)
        if count < size:
            new = self._read(np.asarray(members[count:], dtype=np.int64))
            if size > len(rows):
                grown = np.empty((2 * size, rows.shape[1]), dtype=rows.dtype)
                grown[:count] = rows[:count]
                self.kept_bytes += grown.nbytes - rows.nbytes
                rows = grown
            rows[count:size] = new
            self._kept[first] = (rows, size, members[-1])
        return rows[:size]

    def _keep(self, first: int, members: list[int], read: np.ndarray, old: np.ndarray | None) -> np.ndarray:
        freed = 0 if old is None else old.nbytes
        rows = np.empty((2 * len(members), read.shape[1]), dtype=read.dtype)
        if self.kept_bytes - freed + rows.nbytes > self.max_bytes:
            if old is not None:
                del self._kept[first]
                self.kept_bytes -= freed
            return read
        rows[: len(members)] = read
        self._kept[first] = (rows, len(members), members[-1])
        self.kept_bytes += rows.nbytes - freed
        return rows[: len(members)]


def _components_as_groups(
    graph: csr_matrix, vectors: RowVectors, canonical_rule: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The connected components as groups, each with its canonical and every member's cosine to it."""
    _, labels = connected_components(graph, directed=False)
    _, first_rows, group_of = np.unique(labels, return_index=True, return_inverse=True)
    renumber = np.argsort(np.argsort(first_rows))  # groups numbered by their first row
    group_of = renumber[group_of]
    canonical_rows = np.zeros(len(first_rows), dtype=np.int64)
    canonical_rows[renumber] = first_rows
    scores = np.ones(graph.shape[0], dtype=np.float32)
    for members in components(graph, min_size=2):
        member_vectors = vectors(members)
        canonical = choose_canonical(members, member_vectors, canonical_rule)
        scores[members] = member_vectors @ member_vectors[canonical]
        scores[members[canonical]] = 1.0
        canonical_rows[group_of[members[0]]] = members[canonical]
    return group_of.astype(np.int64), canonical_rows, scores


__all__ = [
    "DEFAULT_GUARD",
    "GUARDS",
    "GroupVectorCache",
    "RowVectors",
    "check_guard",
    "components",
    "guarded_groups",
    "pair_graph",
]
