"""split_by_group and split_report: leak-free splits by connected question components."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from hfsiamese.data import assign_duplicate_groups, split_by_group
from tests.fixtures import random_rows


def pairs(rows, **extra) -> datasets.Dataset:
    q1, q2, label = zip(*rows)
    return datasets.Dataset.from_dict({"question1": list(q1), "question2": list(q2), "label": list(label), **extra})


def identities(ds: datasets.Dataset, use_ids: bool) -> set[str]:
    if use_ids:
        return set(ds["qid1"][:]) | set(ds["qid2"][:])
    return {" ".join(t.split()).lower() for t in ds["question1"][:] + ds["question2"][:]}


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("use_ids", [False, True])
def test_no_question_on_both_sides(seed, use_ids):
    rng = np.random.default_rng(seed)
    n, n_questions = 2000, 6000  # sparse (mean degree < 1): many small components, like QQP
    a, b = rng.integers(0, n_questions, n), rng.integers(0, n_questions, n)
    labels = (rng.random(n) < 0.4).astype(int).tolist()
    if use_ids:
        # Texts collide across ids on purpose: identity must follow the ids.
        ds = pairs(
            [(f"text {i % 50}", f"text {j % 50}", y) for i, j, y in zip(a, b, labels)],
            qid1=[str(i) for i in a], qid2=[str(j) for j in b],
        )  # fmt: skip
    else:
        ds = pairs([(f"Q {i}", f" q  {j}", y) for i, j, y in zip(a, b, labels)])
    split = split_by_group(assign_duplicate_groups(ds), validation_fraction=0.2, seed=seed)
    train, val = split["train"], split["validation"]
    assert len(train) + len(val) == n
    assert not identities(train, use_ids) & identities(val, use_ids)
    assert 0.15 <= len(val) / n <= 0.25
    assert "group_id" in train.column_names and "group_id" in val.column_names


def test_split_is_deterministic_under_seed():
    ds = pairs(random_rows(5, n_pairs=500, n_questions=2000))
    one = split_by_group(ds, validation_fraction=0.3, seed=11)
    two = split_by_group(ds, validation_fraction=0.3, seed=11)
    other = split_by_group(ds, validation_fraction=0.3, seed=12)
    assert one["validation"]["question1"][:] == two["validation"]["question1"][:]
    assert one["train"]["question1"][:] == two["train"]["question1"][:]
    assert one["validation"]["question1"][:] != other["validation"]["question1"][:]


@pytest.mark.parametrize("fraction", [0, 1, 0.0, 1.0, -0.1, 1.5])
def test_fraction_outside_open_interval_is_an_error(fraction):
    with pytest.raises(ValueError, match="validation_fraction"):
        split_by_group(pairs([("a", "b", 1), ("c", "d", 0)]), validation_fraction=fraction)


def test_giant_component_stays_in_train():
    # 90 pairs chained into one component plus 110 separate pairs: the 20% validation share
    # must come from the small components, not be swallowed by (or swallow) the giant one.
    giant = [(f"g{i}", f"g{i + 1}", i % 2) for i in range(90)]
    small = [(f"s{i}", f"t{i}", 1) for i in range(110)]
    for seed in range(5):
        split = split_by_group(pairs(giant + small), validation_fraction=0.2, seed=seed)
        assert len(split["validation"]) == 40
        assert all(q.startswith("s") for q in split["validation"]["question1"][:])


def test_two_pairs_split_one_each():
    split = split_by_group(pairs([("a", "b", 1), ("c", "d", 0)]), validation_fraction=0.1)
    assert (len(split["train"]), len(split["validation"])) == (1, 1)


def test_one_component_cannot_be_split():
    chain = pairs([("a", "b", 1), ("b", "c", 0), ("c", "d", 1)])
    with pytest.raises(ValueError, match="would be empty"):
        split_by_group(chain, validation_fraction=0.5)


@pytest.mark.parametrize("seed", range(4))
def test_three_way_split_is_leak_free_and_reported(seed):
    from hfsiamese.data import split_report

    data = assign_duplicate_groups(pairs(random_rows(seed, n_pairs=400, n_questions=3000)))
    splits = split_by_group(data, validation_fraction=0.15, test_fraction=0.15, seed=seed)
    assert set(splits) == {"train", "validation", "test"}
    assert sum(len(s) for s in splits.values()) == len(data)
    report = split_report(splits)
    assert report["shared_questions"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}
    for name in ("validation", "test"):
        assert abs(report[name]["pairs"] - 60) <= 25
        labels = np.asarray(splits[name]["label"])
        assert report[name]["duplicate_rate"] == pytest.approx(labels.mean())
    # the same seed gives the same split
    again = split_by_group(data, validation_fraction=0.15, test_fraction=0.15, seed=seed)
    assert again["test"]["question1"] == splits["test"]["question1"]


def test_split_report_counts_shared_questions():
    from hfsiamese.data import split_report

    leaky = datasets.DatasetDict(
        train=pairs([("a", "b", 1), ("c", "d", 0)]), validation=pairs([("A ", "e", 1), ("f", "g", 0)])
    )
    assert split_report(leaky)["shared_questions"] == {"train/validation": 1}


@pytest.mark.parametrize("fractions", [dict(test_fraction=-0.1), dict(validation_fraction=0.5, test_fraction=0.5)])
def test_bad_test_fraction(fractions):
    with pytest.raises(ValueError, match="test_fraction"):
        split_by_group(pairs(random_rows(0)), **fractions)
