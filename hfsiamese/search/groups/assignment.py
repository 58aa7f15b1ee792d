"""
Keeping `DuplicateGroups` current as the index changes, without a rebuild:

* `assign_new`: each new question goes where a rebuild would put it (`placement.place`): the group of its most
  similar grouped duplicate (at or above the groups' threshold, among its `k` nearest) whose guard it passes, trying
  the next one's group otherwise, else a group of its own; with `"none"` it joins every group a duplicate of it is in
  (`placement.link_components`: they merge). Questions added in one call are placed in order, so a later one can join
  an earlier one.
* `forget`: the deleted questions leave their groups, and each group that lost one is grouped again among its own
  members by the rebuild's rule: a new canonical is promoted where the canonical went, and members that only
  belonged through a deleted question split off.

Why placing the new question is enough: a rebuild decides its rows in index order, each from its earlier duplicates'
groups as they stand when its turn comes, and never looks at a later row (`clustering.guarded_groups`). An added
question is the last row, so every earlier row's decision, and the group each made, is what it was; only the new
question's own place is new, decided by the same `place` from the same neighbours. Without a guard a rebuild's
groups are connected components, which the new question's links join: exactly the groups it links to merge, nothing
else changes. The cost of an add is one search of `k` neighbours per new question and, per group tried, that group's
members' embeddings (a guarded group stays small); without a guard, the merged component's.

Equal to a rebuild (`find_groups`) on the same rows, for any order of adds, one by one or in batches, every guard and
canonical rule, as long as:

* no question has `k` duplicates or more at the threshold among its `k` nearest: a rebuild links each row to its `k`
  nearest both ways, so a new question can enter an earlier row's `k` nearest (a link its own search does not show)
  and push another out, changing what later rows were placed by. The rebuild warns of such rows, and so does an add
  (`warn_capped`): find the groups with a larger `k` to keep the two equal;
* the cross-encoder guard's budget lasts: an add may spend what a rebuild of all the questions would have left
  (`add_budget`), and once a rebuild has spent its whole budget, which links it scored depends on its dry passes.

Group numbers a user has seen stay: a question joins an existing group under its number; when groups merge, the one
holding the earliest question keeps its number and the others' numbers are retired (never reused); when a delete
splits a group, the part holding its earliest remaining member keeps the number and the other parts get new ones.
The cross-encoder guard asks the index's `cross_encoder`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from hfsiamese.search.groups.clustering import pair_graph
from hfsiamese.search.groups.cross_encoder_guard import call_budget
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups
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
    found = index.store.search(vectors, min(settings.k + 1, len(index)))  # each finds itself too
    member_vectors = lambda members: index.rows_by_id(members)[1]  # noqa: E731
    judge = None
    if uses_cross_encoder(settings.guard):
        if index.cross_encoder is None:
            raise ValueError(CROSS_ENCODER_NEEDED)
        texts = lambda keys: index.rows_by_id(keys)[0]  # noqa: E731
        judge = row_judge(settings, index.cross_encoder, len(ids), texts, max_calls=add_budget(groups, len(ids)))
    grouped = lambda member, matches: [  # noqa: E731  (its duplicates grouped so far, most similar first)
        m["id"] for m in matches if m["id"] != member and m["id"] in groups and m["score"] >= settings.threshold
    ]
    if judge is not None:  # each one's first borderline link among the groups as they are, scored in batches
        links = (first_borderline_link(groups, m, v, grouped(m, found_m), member_vectors)
                 for m, v, found_m in zip(ids, vectors, found))  # fmt: skip
        judge.score([link for link in links if link is not None])
    warn_capped(index, settings, found)
    joined = []
    for member, vector, matches in zip(ids, vectors, found):
        duplicates = grouped(member, matches)
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


def warn_capped(index: SearchIndex, settings: Any, found: list[list[dict[str, Any]]]) -> None:
    """Say where a new question has all its `k` nearest at or above the threshold, as a rebuild says of its rows:
    there the rebuild's pairs (each row's `k` nearest, both ways) may hold links this question's search cannot see,
    so the groups kept current may differ from a rebuild's."""
    searched = min(settings.k + 1, len(index))
    if searched <= settings.k:  # every row was searched: nothing hidden
        return
    capped = sum(len(matches) == searched and matches[-1]["score"] >= settings.threshold for matches in found)
    if capped:
        logger.warning(
            f"{capped} new question(s) have all {settings.k} nearest neighbours at or above the threshold "
            f"{settings.threshold}: their groups may differ from a rebuild's; find_groups with a larger k "
            f"(k={len(index) - 1} is exhaustive) to keep them equal"
        )


def forget(index: SearchIndex, groups: DuplicateGroups, ids: list[Any]) -> None:
    """Take deleted questions out of their groups and group what is left of each again (a new canonical promoted
    where one went); only the remaining members are read."""
    touched = {group for group in (groups.leave(member) for member in ids) if group is not None}
    remaining = set(groups.groups())  # after every leave: a group all of whose deleted members left is gone
    for group in sorted(touched & remaining):
        regroup(index, groups, group)


def regroup(index: SearchIndex, groups: DuplicateGroups, group: int) -> None:
    """Group one group's members again among themselves, in the order they joined (pairs from their own cosines: a
    group's size squared)."""
    settings = groups.settings
    members = groups.members(group)
    _, vectors = index.rows_by_id(members)
    cosines = vectors @ vectors.T
    rows_a, rows_b = np.nonzero(np.triu(cosines >= settings.threshold, k=1))
    graph = pair_graph(len(members), rows_a, rows_b, cosines[rows_a, rows_b])
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
