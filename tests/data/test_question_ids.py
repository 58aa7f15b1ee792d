"""Question identity: ids, else folded text; stored once and reused by every later step."""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa
import pytest

from hfsiamese.data import (
    assign_duplicate_groups,
    group_pairs,
    question_ids,
    split_by_group,
    split_report,
    triplets,
    view_sizes,
)
from hfsiamese.data.question_ids import (
    KEY_COLUMNS,
    distinct_questions,
    fold_text,
    identity_name,
    question_codes,
    question_keys,
    with_question_keys,
)


def pairs(rows, **extra) -> datasets.Dataset:
    q1, q2, label = zip(*rows)
    return datasets.Dataset.from_dict({"question1": list(q1), "question2": list(q2), "label": list(label), **extra})


def test_fold_text_strips_lowercases_and_collapses_whitespace():
    assert fold_text(pa.array(["  How   ARE\tyou? ", "x\n\ny", None])).to_pylist() == ["how are you?", "x y", None]


def test_keys_are_ids_when_present_else_folded_text():
    data = pairs([("A  b", "c", 1)])
    assert [k.to_pylist() for k in question_keys(data)] == [["a b"], ["c"]]
    assert [k.to_pylist() for k in question_keys(data, normalize=False)] == [["A  b"], ["c"]]
    with_ids = pairs([("A  b", "c", 1)], qid1=[7], qid2=[8])  # integer ids become strings
    assert [k.to_pylist() for k in question_keys(with_ids, normalize=False)] == [["7"], ["8"]]
    assert (identity_name(data), identity_name(with_ids)) == ("normalised text", "question ids")


def test_keys_need_every_question_identified():
    with pytest.raises(ValueError, match="1 null value"):
        question_keys(pairs([("a", "b", 1)], qid1=["1"], qid2=[None]))
    with pytest.raises(ValueError, match="no pairs"):
        question_keys(pairs([("a", "b", 1)]).select([]))


def test_codes_number_questions_in_order_of_first_appearance():
    codes = question_codes(pairs([("b", "a", 1), ("A", "c", 0), ("c", "B ", 1)]))
    # [question1 column, question2 column] = b, a, c | a, c, b
    assert codes.codes1.tolist() == [0, 1, 2] and codes.codes2.tolist() == [1, 2, 0] and codes.count == 3


def test_stored_keys_are_carried_and_reused():
    data = with_question_keys(pairs([("How  are you", "hello", 1), ("x", "y", 0)]))
    assert data[KEY_COLUMNS[0]] == ["how are you", "x"]
    assert with_question_keys(data) is data
    # The stored identity is what later steps read: a rewritten text column does not change it.
    rewritten = data.remove_columns("question1").add_column("question1", ["other", "texts"])
    assert question_keys(rewritten)[0].to_pylist() == ["how are you", "x"]
    assert question_keys(rewritten, normalize=False)[0].to_pylist() == ["other", "texts"]


def test_a_run_folds_the_texts_once(monkeypatch):
    """Split, groups, split report and views of one data set: its texts are folded once, not per step."""
    folded = []

    def counting_fold(texts):
        folded.append(len(texts))
        return fold_text(texts)

    monkeypatch.setattr(question_ids, "fold_text", counting_fold)
    rng = np.random.default_rng(0)
    a, b, duplicate = rng.integers(0, 300, 200), rng.integers(0, 300, 200), rng.random(200) < 0.5
    rows = [(f"Question {i}", f"question  {j}", int(y)) for i, j, y in zip(a, b, duplicate)]
    splits = split_by_group(pairs(rows), validation_fraction=0.2, seed=0)
    splits["train"] = assign_duplicate_groups(splits["train"])
    split_report(splits)
    triplets(splits["train"])
    group_pairs(splits["train"])
    view_sizes(splits["train"])
    assert folded == [200, 200]  # question1 and question2 of the whole data set, once


def test_distinct_questions_by_folded_text_keep_the_first_text():
    texts, ids = distinct_questions(pairs([("How are you?", "Hello", 1), ("how  are you?", "bye", 0)]))
    assert texts == ["How are you?", "Hello", "bye"] and ids is None


def test_distinct_questions_by_id_keep_ids():
    data = pairs([("same", "other", 1), ("same", "x", 0)], qid1=["1", "2"], qid2=["3", "1"])
    texts, ids = distinct_questions(data)
    assert ids == ["1", "2", "3"] and texts == ["same", "same", "other"]
