"""
Keeping `DuplicateGroups` current as the index changes, without a rebuild:

* `assign_new`: each new question goes where a rebuild would put it (`placement.place`), from the links a rebuild
  gives it (`earlier_links`: its `k` nearest questions before it at or above the groups' threshold): the group of its
  most similar linked question whose guard it passes, trying the next one's group otherwise, else a group of its
  own; with `"none"` it joins every group a linked question is in (`placement.link_components`: they merge).
  Questions added in one call are placed in order, each from the questions before it (the earlier ones of the call
  included, the later ones not), so a later one can join an earlier one.
* `forget`: the deleted questions leave their groups, and each group that lost one is grouped again among its own
  members by the rebuild's rule (each member linked to its `k` nearest earlier members): a new canonical is promoted
  where the canonical went, and members that only belonged through a deleted question split off.

Why placing the new question is enough: a question's links are drawn from the questions before it, and a rebuild
decides its rows in index order, each from its links and its earlier duplicates' groups as they stand when its turn
comes, never looking at a later row (`clustering.guarded_groups`). An added question is the last row, so every
earlier row's links, its decision and the group it made are what they were; only the new question's own place is
new, decided by the same `place` from the same links (`earlier_links` proves it). Without a guard a rebuild's groups
are the connected components of the links, which the new question's links join: exactly the groups it links to
merge, nothing else changes. The cost of an add is one search of `k + 1` neighbours per new question (deeper only
where its list may be incomplete, as a rebuild's) and, per group tried, that group's members' embeddings (a guarded
group stays small); without a guard, the merged component's.

Equal to a rebuild (`find_groups`) on the same rows with an exact store, for any order of adds, one by one or in
batches, every guard, canonical rule and `k`, as long as:

* no question was deleted since the groups were found: a deleted question leaves a later one's links one short
  where a rebuild fills them with its next nearest earlier duplicate, and only the groups that lost a member are
  grouped again, where a rebuild would also place again every later question that was placed by one of them;
* every question came in grouped (a plain `add` leaves its rows out of the groups, and a later add does not link
  to them);
* the cross-encoder guard's budget lasts: an add may spend what a rebuild of all the questions would have left
  (`add_budget`), and once a rebuild has spent its whole budget, which links it scored depends on its dry passes.

Where a new question has `k` duplicates or more before it, it is placed by its `k` nearest, as a rebuild places it;
the add says so (`warn_capped`), as `find_groups` does. Group numbers a user has seen stay: a question joins an
existing group under its number; when groups merge, the one holding the earliest question keeps its number and the
others' numbers are retired (never reused); when a delete splits a group, the part holding its earliest remaining
member keeps the number and the other parts get new ones. The cross-encoder guard asks the index's `cross_encoder`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from hfsiamese.search.groups.clustering import pair_graph
from hfsiamese.search.groups.cross_encoder_guard import call_budget
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups, GroupSettings
from hfsiamese.search.groups.earlier_links import earlier_links, new_questions_links, vectors_search
from hfsiamese.search.groups.group_finding import judged_groups, row_judge
from hfsiamese.search.groups.guards import uses_cross_encoder
from hfsiamese.search.groups.placement import first_borderline_link, link_components, place

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex

logger = logging.getLogger(__name__)

CROSS_ENCODER_NEEDED = (
    "these duplicate groups were found with guard='cross_encoder': open the index with cross_encoder=... (a "
    "CrossEncoder or its folder) to keep them current"
)


def assign_new(
    index: SearchIndex, groups: DuplicateGroups, ids: list[Any], vectors: np.ndarray
) -> list[dict[str, Any]]:
    """Put each new question (already in the index) in a group; for each `{"id", "group", "canonical_id",
    "canonical_text", "score" (cosine to the canonical), "new_group"}`."""
    settings = groups.settings
    vectors = np.asarray(vectors, dtype=np.float32)
    linked, capped = new_questions_links(index, groups, ids, vectors)  # each one's, most similar first
    member_vectors = lambda members: index.rows_by_id(members)[1]  # noqa: E731
    judge = None
    if uses_cross_encoder(settings.guard):
        if index.cross_encoder is None:
            raise ValueError(CROSS_ENCODER_NEEDED)
        texts = lambda keys: index.rows_by_id(keys)[0]  # noqa: E731
        judge = row_judge(settings, index.cross_encoder, len(ids), texts, max_calls=add_budget(groups, len(ids)))
    if judge is not None:  # each one's first borderline link among the groups as they are, scored in batches
        links = (first_borderline_link(groups, m, v, duplicates, member_vectors)
                 for m, v, duplicates in zip(ids, vectors, linked))  # fmt: skip
        judge.score([link for link in links if link is not None])
    warn_capped(settings, capped)
    joined = []
    for member, vector, duplicates in zip(ids, vectors, linked):
        if settings.guard == "none":
            joined.append((member, link_components(groups, member, duplicates, member_vectors)))
        else:
            joined.append((member, place(groups, member, vector, duplicates, member_vectors, judge)))
    joined = [(member, groups.group_of(member)) for member, _ in joined]  # a later one's link may merge its group
    groups.cross_encoder_calls += 0 if judge is None else judge.calls
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


def add_budget(groups: DuplicateGroups, num_new: int) -> int:
    """
    The cross-encoder calls an add of `num_new` questions may make: what remains of the budget a rebuild of every
    question would have (its calls per 1,000 questions, less the calls these groups made in this process, a rebuild's
    included), and at least the new questions' own share. A rebuild decides a borderline link by the cross-encoder
    while its budget lasts, so an add that stopped at its own share would leave to the mean guard links the rebuild
    scores; each new question asks about at most one link per group its duplicates are in (at most `k`), so what an
    add spends stays bounded by `k` pairs a question.
    """
    budget = groups.settings.cross_encoder_budget or 0.0
    return max(
        call_budget(budget, groups.num_questions + num_new) - groups.cross_encoder_calls, call_budget(budget, num_new)
    )


def warn_capped(settings: GroupSettings, capped: int) -> None:
    """Say where new questions have `k` duplicates or more before them, as `find_groups` says of its rows: each was
    placed by its `k` nearest only (as a rebuild places it), so a larger `k` could place it otherwise."""
    if capped:
        logger.warning(
            f"{capped} new question(s) have {settings.k} or more earlier duplicates at the threshold "
            f"{settings.threshold}: each was placed by its {settings.k} nearest only, as a rebuild places it; "
            "find_groups with a larger k weighs more of them"
        )


def forget(index: SearchIndex, groups: DuplicateGroups, ids: list[Any]) -> None:
    """Take deleted questions out of their groups and group what is left of each again (a new canonical promoted
    where one went); only the remaining members are read."""
    touched = {group for group in (groups.leave(member) for member in ids) if group is not None}
    remaining = set(groups.groups())  # after every leave: a group all of whose deleted members left is gone
    for group in sorted(touched & remaining):
        regroup(index, groups, group)


def regroup(index: SearchIndex, groups: DuplicateGroups, group: int) -> None:
    """Group one group's members again among themselves, in the order they joined, each linked to its `k` nearest
    earlier members at the threshold (`earlier_links`, exactly among a group's members)."""
    settings = groups.settings
    members = groups.members(group)
    _, vectors = index.rows_by_id(members)
    links = earlier_links(vectors_search(vectors), len(members), settings.threshold, settings.k)
    graph = pair_graph(len(members), links.later, links.earlier, links.scores)
    judge = None
    if uses_cross_encoder(settings.guard):
        if index.cross_encoder is None:
            logger.warning("regrouping a group without a cross-encoder: the mean guard decides its borderline links")
        else:
            texts = lambda rows: index.rows_by_id([members[row] for row in rows])[0]  # noqa: E731
            judge = row_judge(settings, index.cross_encoder, len(members), texts)
    group_of, canonical_rows, scores = judged_groups(graph, lambda rows: vectors[rows], settings, judge)
    groups.cross_encoder_calls += 0 if judge is None else judge.calls
    score_of = dict(zip(members, scores.tolist()))
    for label, canonical_row in enumerate(canonical_rows.tolist()):
        if label == 0:  # the part holding the earliest member keeps the group's number
            groups.set_canonical(group, members[canonical_row], score_of)
            continue
        groups.move([m for m, of in zip(members, group_of.tolist()) if of == label], members[canonical_row], score_of)


__all__ = ["CROSS_ENCODER_NEEDED", "assign_new", "forget", "regroup", "warn_capped"]
