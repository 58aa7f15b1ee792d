"""assign_duplicate_groups and question_groups: closure, identity rules, agreement."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from hfsiamese.data import assign_duplicate_groups
from tests.fixtures import random_rows


def pairs(rows, **extra) -> datasets.Dataset:
    q1, q2, label = zip(*rows)
    return datasets.Dataset.from_dict({"question1": list(q1), "question2": list(q2), "label": list(label), **extra})


def reference_groups(rows) -> list[int]:
    """Slow, obviously correct union-find over normalised texts, for comparison."""
    parent: dict[str, str] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            x = parent[x]
        return x

    norm = [(" ".join(a.split()).lower(), " ".join(b.split()).lower(), y) for a, b, y in rows]
    for a, b, y in norm:
        find(a), find(b)
        if y == 1:
            parent[find(a)] = find(b)
    return [find(a) for a, _, _ in norm]


# --------------------------------------------------------------------------------------------
# assign_duplicate_groups
# --------------------------------------------------------------------------------------------
def test_transitive_closure_and_non_duplicates():
    ds = assign_duplicate_groups(pairs([("a", "b", 1), ("b", "c", 1), ("d", "e", 0), ("a", "d", 0), ("c", "f", 1)]))
    g = ds["group_id"][:]
    assert ds.features["group_id"] == datasets.Value("int64")
    assert g[0] == g[1] == g[4]  # a~b~c~f through the closure
    assert g[2] != g[0]  # d only meets a through a non-duplicate
    assert g[3] == g[0]  # a pair takes its question1's group
    assert sorted(set(g)) == list(range(len(set(g))))  # ids 0..G-1


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_union_find_reference(seed):
    rows = random_rows(seed)
    got = assign_duplicate_groups(pairs(rows))["group_id"][:]
    expected = reference_groups(rows)
    # Same partition: the mapping between reference roots and group ids is a bijection.
    assert len(set(zip(got, expected))) == len(set(got)) == len(set(expected))
    assert sorted(set(got)) == list(range(len(set(got))))


def test_qid_identity_beats_text():
    rows = [("same text", "x", 1), ("same text", "y", 1), ("other", "z", 1)]
    ds = pairs(rows, qid1=["1", "2", "3"], qid2=["10", "20", "1"])
    g = assign_duplicate_groups(ds)["group_id"][:]
    assert g[0] != g[1]  # equal texts, different ids: different questions
    assert g[2] == g[0]  # different texts, qid 1 on both: same question
    g_text = assign_duplicate_groups(pairs(rows))["group_id"][:]
    assert g_text[0] == g_text[1] and g_text[2] != g_text[0]


def test_integer_qids_work():
    ds = pairs([("a", "b", 1), ("c", "d", 1)], qid1=[1, 3], qid2=[2, 1])
    g = assign_duplicate_groups(ds)["group_id"][:]
    assert g[0] == g[1]


def test_normalised_text_identity():
    rows = [("How are you?", "hello", 1), ("  how   ARE\tyou? ", "greetings", 1)]
    assert len(set(assign_duplicate_groups(pairs(rows))["group_id"][:])) == 1
    assert len(set(assign_duplicate_groups(pairs(rows), normalize=False)["group_id"][:])) == 2


def test_existing_group_id_is_replaced():
    ds = pairs([("a", "b", 1), ("c", "d", 0)], group_id=[7, 7])
    out = assign_duplicate_groups(ds)
    assert out.column_names.count("group_id") == 1
    assert out["group_id"][:] == [0, 1]


def test_works_after_select():
    ds = pairs([("a", "b", 1), ("x", "y", 0), ("b", "c", 1)]).select([2, 0])
    assert assign_duplicate_groups(ds)["group_id"][:] == [0, 0]


def test_question_groups_agree_with_pair_groups():
    from hfsiamese.data.groups import question_groups

    rows = random_rows(7)
    data = pairs(rows)
    codes1, codes2, group_of, first_position = question_groups(data)
    assert (group_of[codes1] == np.asarray(assign_duplicate_groups(data)["group_id"])).all()
    texts = list(data["question1"]) + list(data["question2"])
    for code in np.unique(np.concatenate([codes1, codes2])):
        assert first_position[code] == min(np.flatnonzero(np.concatenate([codes1, codes2]) == code))
        assert texts[first_position[code]]
    duplicate = np.asarray([y for _, _, y in rows]) == 1
    assert (group_of[codes1[duplicate]] == group_of[codes2[duplicate]]).all()
