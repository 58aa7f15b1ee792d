"""`DuplicateIndex.find_groups`: the index's duplicate pairs at a calibrated threshold (`duplicate_mining`), their
connected components split where they chain (`clustering`), a canonical question per group (`canonical`)."""

from __future__ import annotations

import numpy as np

from hfsiamese.search.duplicate_mining import cosine_threshold, mine_rows, mining_store
from hfsiamese.search.groups.canonical import check_canonical_rule
from hfsiamese.search.groups.clustering import guarded_groups, pair_graph
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups, GroupSettings
from hfsiamese.search.groups.guards import check_guard
from hfsiamese.search.index_views import IndexViews
from hfsiamese.search.input_checks import check_k


def find_groups(
    index: IndexViews,
    threshold: float | None,
    k: int,
    probability_threshold: float | None,
    guard: str,
    canonical: str,
    show_progress_bar: bool,
) -> DuplicateGroups:
    """The groups `DuplicateIndex.find_groups` describes (not yet kept by the index)."""
    check_k(k)
    check_guard(guard)
    check_canonical_rule(canonical)
    index._check_not_empty()
    cosine = cosine_threshold(index, threshold, probability_threshold)
    store = mining_store(index)
    found = mine_rows(index, store, cosine, k, show_progress_bar)
    graph = pair_graph(len(store), found.rows_a, found.rows_b, found.scores)
    del found
    group_of, canonical_rows, scores = guarded_groups(
        graph, store.table.gather, cosine, guard, canonical, show_progress_bar=show_progress_bar
    )
    is_canonical = np.zeros(len(group_of), dtype=bool)
    is_canonical[canonical_rows] = True
    settings = GroupSettings(threshold=cosine, guard=guard, canonical=canonical, k=k)
    return DuplicateGroups.from_columns(
        settings, store.all_ids(), group_of.tolist(), scores.tolist(), is_canonical.tolist()
    )


__all__ = ["find_groups"]
