"""
Where one question goes: the group of its most similar earlier duplicate whose guard it passes, trying the next
one's group otherwise, else a group of its own. The one rule both a rebuild (`clustering`: every question in index
order) and keeping groups current (`assignment`: each new question) follow, so that they agree. Without a guard
(`"none"`) a question joins every group one of its duplicates is in (`link_components`), as a rebuild's connected
components do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from hfsiamese.search.groups.canonical import choose_canonical
from hfsiamese.search.groups.cross_encoder_guard import LinkJudge, admits, is_borderline
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups
from hfsiamese.search.groups.guards import passes

# `vectors(ids)`: the L2-normalised float32 embeddings of these members, `(len(ids), dim)`.
MemberVectors = Callable[[list[Any]], np.ndarray]


def place(
    groups: DuplicateGroups,
    member: Any,
    vector: np.ndarray,
    duplicates: Iterable[Any],
    vectors: MemberVectors,
    judge: LinkJudge | None = None,
) -> int:
    """Put `member` in a group; its group. `duplicates`: its duplicates already grouped, most similar first; `judge`:
    the cross-encoder guard's (without one that guard is the mean guard), asked about `member` and the duplicate that
    links it to the group."""
    settings = groups.settings
    for candidate, members, cosines, canonical, linked in _candidate_groups(groups, vector, duplicates, vectors):
        to_canonical = float(cosines[members.index(canonical)])
        if admits(settings, judge, member, linked, to_canonical, cosines):
            groups.join(member, candidate, to_canonical)
            if settings.canonical == "most_central":
                recentre(groups, candidate, vectors)
            return candidate
    return groups.new_group(member)


def link_components(groups: DuplicateGroups, member: Any, duplicates: Iterable[Any], vectors: MemberVectors) -> int:
    """
    The `"none"` guard's placement of a new question: it and every group one of its duplicates is in become one
    group, the connected component a rebuild finds (a new question only adds links, so no other group changes). The
    canonical is chosen over the joined members by the rebuild's own rule (`choose_canonical`, members ranked by
    arrival, which is the index's row order), every member's score against it; the group holding the earliest member
    keeps its number and the others' numbers are retired (`DuplicateGroups.merge`). Its cost is the joined members'
    embeddings, read once: the size of the component, which this guard does not bound.
    """
    linked = list(dict.fromkeys(group for group in map(groups.group_of, duplicates) if group is not None))
    if not linked:
        return groups.new_group(member)
    groups.join(member, linked[0], 0.0)  # its score is set with the canonical below
    group = groups.merge(linked)
    members = groups.members(group)
    member_vectors = vectors(members)
    canonical = choose_canonical(np.asarray(groups.arrival_order(members)), member_vectors, groups.settings.canonical)
    groups.set_canonical(
        group, members[canonical], dict(zip(members, (member_vectors @ member_vectors[canonical]).tolist()))
    )
    return group


def first_borderline_link(
    groups: DuplicateGroups, member: Any, vector: np.ndarray, duplicates: Iterable[Any], vectors: MemberVectors
) -> tuple[Any, Any] | None:
    """The first `(member, linked duplicate)` link `place` would ask the cross-encoder guard's judge about, read
    without placing anything; None where a sure link (or none) comes first. What a batch of new questions scores at
    once (a link to another question of the same batch is not known before that one is placed: scored then)."""
    settings = groups.settings
    for _, members, cosines, canonical, linked in _candidate_groups(groups, vector, duplicates, vectors):
        by_mean = passes(settings.guard, float(cosines[members.index(canonical)]), cosines, settings.bar)
        return (member, linked) if is_borderline(settings, by_mean, len(members)) else None
    return None


def recentre(groups: DuplicateGroups, group: int, vectors: MemberVectors) -> None:
    """Make the group's most central member its canonical (the `"most_central"` rule), its scores with it."""
    members = groups.members(group)
    member_vectors = vectors(members)
    best = choose_canonical(np.arange(len(members)), member_vectors, "most_central")
    if members[best] != groups.canonical_of(group):
        groups.set_canonical(group, members[best], dict(zip(members, (member_vectors @ member_vectors[best]).tolist())))


def _candidate_groups(
    groups: DuplicateGroups, vector: np.ndarray, duplicates: Iterable[Any], vectors: MemberVectors
) -> Iterator[tuple[int, list[Any], np.ndarray, Any, Any]]:
    """The groups `place` tries, in its order (each duplicate's group, most similar first, once): each one's number,
    members, their cosines to `vector`, canonical, and the duplicate that links the question to it (its most similar
    member among the duplicates), read when the group's turn comes."""
    tried: set[int] = set()
    for linked in duplicates:
        candidate = groups.group_of(linked)
        if candidate is None or candidate in tried:
            continue
        tried.add(candidate)
        members = groups.members(candidate)
        yield candidate, members, vectors(members) @ vector, groups.canonical_of(candidate), linked


__all__ = ["MemberVectors", "first_borderline_link", "link_components", "place", "recentre"]
