"""
Keeping `DuplicateGroups` current as the index changes, without a rebuild:

* `assign_new`: each new question goes where a rebuild would put it (`placement.place`): the group of its most
  similar grouped duplicate (at or above the groups' threshold, among its `k` nearest) whose guard it passes, trying
  the next one's group otherwise, else a group of its own. Questions added in one call are placed in order, so a
  later one can join an earlier one.
* `forget`: the deleted questions leave their groups, and each group that lost one is grouped again among its own
  members by the rebuild's rule: a new canonical is promoted where the canonical went, and members that only
  belonged through a deleted question split off.

On the same rows this equals a rebuild (`find_groups`) with the `"canonical"` and `"mean"` guards, as long as no
question has more than `k` duplicates (the `k` cap can then hide different pairs from the two); with `"none"` (plain
connected components) a new question that bridges two groups joins one of them, where a rebuild merges them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hfsiamese.search.groups.clustering import guarded_groups, pair_graph
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups
from hfsiamese.search.groups.placement import place
from hfsiamese.search.index_views import IndexViews


def assign_new(index: IndexViews, groups: DuplicateGroups, ids: list[Any], vectors: np.ndarray) -> list[dict[str, Any]]:
    """Put each new question (already in the index) in a group; for each `{"id", "group", "canonical_id",
    "canonical_text", "score" (cosine to the canonical), "new_group"}`."""
    settings = groups.settings
    vectors = np.asarray(vectors, dtype=np.float32)
    found = index._store.search(vectors, min(settings.k + 1, len(index)))  # each finds itself too
    member_vectors = lambda members: index.rows_by_id(members)[1]  # noqa: E731
    joined = []
    for member, vector, matches in zip(ids, vectors, found):
        duplicates = [
            m["id"] for m in matches if m["id"] != member and m["id"] in groups and m["score"] >= settings.threshold
        ]
        joined.append((member, place(groups, member, vector, duplicates, member_vectors)))
    canonicals = list(dict.fromkeys(groups.canonical_of(group) for _, group in joined))
    texts = dict(zip(canonicals, index.rows_by_id(canonicals)[0]))
    return [
        {
            "id": member,
            "group": group,
            "canonical_id": groups.canonical_of(group),
            "canonical_text": texts[groups.canonical_of(group)],
            "score": groups.score_of(member),
            "new_group": groups.members(group) == [member],
        }
        for member, group in joined
    ]


def forget(index: IndexViews, groups: DuplicateGroups, ids: list[Any]) -> None:
    """Take deleted questions out of their groups and group what is left of each again (a new canonical promoted
    where one went); only the remaining members are read."""
    touched = {group for group in (groups.leave(member) for member in ids) if group is not None}
    remaining = set(groups.groups())  # after every leave: a group all of whose deleted members left is gone
    for group in sorted(touched & remaining):
        regroup(index, groups, group)


def regroup(index: IndexViews, groups: DuplicateGroups, group: int) -> None:
    """Group one group's members again among themselves, in the order they joined (pairs from their own cosines: a
    group's size squared)."""
    settings = groups.settings
    members = groups.members(group)
    _, vectors = index.rows_by_id(members)
    cosines = vectors @ vectors.T
    rows_a, rows_b = np.nonzero(np.triu(cosines >= settings.threshold, k=1))
    graph = pair_graph(len(members), rows_a, rows_b, cosines[rows_a, rows_b])
    group_of, canonical_rows, scores = guarded_groups(
        graph, lambda rows: vectors[rows], settings.threshold, settings.guard, settings.canonical
    )
    score_of = dict(zip(members, scores.tolist()))
    for label, canonical_row in enumerate(canonical_rows.tolist()):
        if label == 0:  # the part holding the earliest member keeps the group's number
            groups.set_canonical(group, members[canonical_row], score_of)
            continue
        groups.move([m for m, of in zip(members, group_of.tolist()) if of == label], members[canonical_row], score_of)


__all__ = ["assign_new", "forget", "regroup"]
