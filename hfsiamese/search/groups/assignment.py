"""
Keeping `DuplicateGroups` current as the index changes, without a rebuild:

* `assign_new`: each new question joins the group of its most similar grouped neighbour (at or above the groups'
  threshold) whose guard it passes (`"canonical"`: its cosine to that group's canonical reaches the threshold;
  `"mean"`: its mean cosine to the members does), trying the next neighbour's group otherwise, else starts a group.
  Questions added in one call are assigned in order, so a later one can join an earlier one.
* `forget`: the deleted questions leave their groups; a group that lost its canonical (or, with the `"mean"` or
  `"none"` guard, any member) is grouped again among its own members by the same rule as a rebuild, so a new
  canonical is promoted and members that only belonged through the deleted one split off.

Both match a rebuild (`find_groups` over the same rows) where each new question's duplicates lie in one group; a
question that bridges two groups joins one of them here, while a rebuild judges the bridge afresh.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hfsiamese.search.groups.canonical import choose_canonical
from hfsiamese.search.groups.clustering import guarded_groups, pair_graph
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups
from hfsiamese.search.groups.row_lookup import RowLookup
from hfsiamese.search.index_views import IndexViews


def assign_new(index: IndexViews, groups: DuplicateGroups, ids: list[Any], vectors: np.ndarray) -> list[dict[str, Any]]:
    """Put each new question (already in the index) in a group; for each `{"id", "group", "canonical_id",
    "canonical_text", "score" (cosine to the canonical), "new_group"}`."""
    settings = groups.settings
    lookup = RowLookup(index)
    vectors = np.asarray(vectors, dtype=np.float32)
    found = index._store.search(vectors, min(settings.k + 1, len(index)))  # each finds itself too
    joined: list[tuple[Any, int]] = []
    for member, vector, matches in zip(ids, vectors, found):
        near = [
            m["id"] for m in matches if m["id"] != member and m["id"] in groups and m["score"] >= settings.threshold
        ]
        group = None
        for candidate in dict.fromkeys(groups.group_of(other) for other in near):
            members = groups.members(candidate)
            _, member_vectors = lookup.rows(members)
            cosines = member_vectors @ vector
            canonical = groups.canonical_of(candidate)
            to_canonical = float(cosines[members.index(canonical)])
            if _passes(settings.guard, to_canonical, cosines, settings.threshold):
                groups.join(member, candidate, to_canonical)
                if settings.canonical == "most_central":
                    _recentre(lookup, groups, candidate)
                group = candidate
                break
        joined.append((member, groups.new_group(member) if group is None else group))
    canonicals = list(dict.fromkeys(groups.canonical_of(group) for _, group in joined))
    texts = dict(zip(canonicals, lookup.rows(canonicals)[0]))
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


def _passes(guard: str, to_canonical: float, cosines: np.ndarray, threshold: float) -> bool:
    if guard == "canonical":
        return to_canonical >= threshold
    if guard == "mean":
        return float(cosines.mean()) >= threshold
    return True


def _recentre(lookup: RowLookup, groups: DuplicateGroups, group: int) -> None:
    """Make the group's most central member its canonical (the `"most_central"` rule), its scores with it."""
    members = groups.members(group)
    _, vectors = lookup.rows(members)
    best = choose_canonical(np.arange(len(members)), vectors, "most_central")
    if members[best] != groups.canonical_of(group):
        groups.set_canonical(group, members[best], dict(zip(members, (vectors @ vectors[best]).tolist())))


def forget(index: IndexViews, groups: DuplicateGroups, ids: list[Any]) -> None:
    """Take deleted questions out of their groups, promoting a new canonical where one went (call before the rows
    leave the index is not needed: only the remaining members are read)."""
    touched: set[int] = set()
    for member in ids:
        group = groups.group_of(member)
        if group is None:
            continue
        lost_canonical = groups.canonical_of(group) == member
        groups.leave(member)
        if group in groups.groups() and (lost_canonical or groups.settings.guard != "canonical"):
            touched.add(group)
    lookup = RowLookup(index)
    for group in sorted(touched):
        regroup(lookup, groups, group)


def regroup(lookup: RowLookup, groups: DuplicateGroups, group: int) -> None:
    """Group one group's members again among themselves (pairs from their own cosines: a group's size squared)."""
    settings = groups.settings
    members = groups.members(group)
    _, vectors = lookup.rows(members)
    cosines = vectors @ vectors.T
    rows_a, rows_b = np.nonzero(np.triu(cosines >= settings.threshold, k=1))
    group_of, canonical_rows, scores = guarded_groups(
        pair_graph(len(members), rows_a, rows_b), lambda rows: vectors[rows], settings.threshold, settings.guard,
        settings.canonical,
    )  # fmt: skip
    score_of = dict(zip(members, scores.tolist()))
    for label, canonical_row in enumerate(canonical_rows.tolist()):
        part = [member for member, of in zip(members, group_of.tolist()) if of == label]
        if label == 0:  # the part holding the earliest member keeps the group's number
            groups.set_canonical(group, members[canonical_row], score_of)
            continue
        groups.move(part, members[canonical_row], score_of)


__all__ = ["assign_new", "forget", "regroup"]
