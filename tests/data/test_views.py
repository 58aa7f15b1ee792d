"""Training views: duplicate pairs, triplets with labelled hard negatives, all pairs of a group."""

from __future__ import annotations

import itertools

import datasets
import numpy as np
import pytest

from hfsiamese.data.views import duplicate_pairs, group_pairs, labelled_pairs, triplets, view_sizes


def pairs(rows):
    q1, q2, label = zip(*rows)
    return datasets.Dataset.from_dict({"question1": list(q1), "question2": list(q2), "label": list(label)})


ROWS = [
    ("a", "b", 1),
    ("b", "c", 1),  # a, b, c: one group of 3 questions
    ("c", "x", 0),  # x is a labelled negative of the a-b-c group
    ("d", "e", 1),  # d, e: a group without negatives
    ("y", "a", 0),  # y: another negative of a-b-c, seen from the other side
    ("f", "g", 0),
]


def test_duplicate_and_labelled_pairs():
    data = pairs(ROWS)
    assert len(labelled_pairs(data)) == 6 and "group_id" in labelled_pairs(data).column_names
    dups = duplicate_pairs(data)
    assert dups["label"] == [1, 1, 1]
    assert dups["group_id"][0] == dups["group_id"][1] != dups["group_id"][2]
    with pytest.raises(ValueError, match="no duplicate pairs"):
        duplicate_pairs(pairs([("a", "b", 0)]))


@pytest.mark.parametrize("seed", range(5))
def test_triplet_negatives_come_from_the_anchor_group(seed):
    view = triplets(pairs(ROWS), seed=seed)
    assert view["question1"] == ["a", "b"]  # (d, e) has no labelled negative: left out
    assert set(view["negative"]) <= {"x", "y"}
    assert view["label"] == [1, 1] and len(set(view["group_id"])) == 1


def test_triplets_use_every_candidate_over_seeds():
    seen = {neg for seed in range(30) for neg in triplets(pairs(ROWS), seed=seed)["negative"]}
    assert seen == {"x", "y"}


def test_triplets_need_negatives():
    with pytest.raises(ValueError, match="cannot build triplets"):
        triplets(pairs([("a", "b", 1), ("c", "d", 0)]))


def test_group_pairs_are_the_transitive_closure():
    view = group_pairs(pairs(ROWS))
    got = {frozenset(p) for p in zip(view["question1"], view["question2"])}
    assert got == {frozenset("ab"), frozenset("bc"), frozenset("ac"), frozenset("de")}
    assert set(view["label"]) == {1}


@pytest.mark.parametrize("seed", range(3))
def test_group_pairs_brute_force_and_cap(seed):
    rng = np.random.default_rng(seed)
    rows = [(f"q{i}", f"q{j}", int(rng.random() < 0.6)) for i, j in rng.integers(0, 40, (60, 2)) if i != j]
    data = pairs(rows)
    # brute force: components over label-1 edges, then all unordered pairs inside each
    parent = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b, y in rows:
        if y:
            parent[find(a)] = find(b)
    members = {}
    for q in {q for a, b, y in rows if y for q in (a, b)}:
        members.setdefault(find(q), []).append(q)
    expected = {frozenset(p) for group in members.values() for p in itertools.combinations(group, 2)}
    view = group_pairs(data)
    assert {frozenset(p) for p in zip(view["question1"], view["question2"])} == expected
    assert len(view) == len(expected)
    capped = group_pairs(data, max_pairs_per_group=2, seed=seed)
    per_group = np.bincount(np.asarray(capped["group_id"]))
    assert per_group.max() <= 2
    assert {frozenset(p) for p in zip(capped["question1"], capped["question2"])} <= expected


def test_view_sizes():
    sizes = view_sizes(pairs(ROWS))
    assert sizes == {
        "labelled_pairs": 6,
        "duplicate_pairs": 3,
        "triplets": 2,
        "group_pairs": 4,
        "questions": 9,
        "duplicate_groups": 2,
        "largest_group_questions": 3,
    }
