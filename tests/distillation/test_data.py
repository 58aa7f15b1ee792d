"""Stage 1's rows: every labelled pair and every pair within a group, once each, pointing at teacher vectors."""

import datasets
import pandas as pd
import torch

from hfsiamese.distillation import TeacherEmbeddings, distillation_pairs, with_teacher_rows


def train_pairs():
    # Group {a, b, c} (a~b, b~c: a~c only by transitivity), a non-duplicate (a, d), a lone pair (e, f), and b~a repeated reversed.
    return datasets.Dataset.from_dict(
        {
            "question1": ["a", "b", "a", "e", "b"],
            "question2": ["b", "c", "d", "f", "a"],
            "label": [1, 1, 0, 1, 1],
        }
    )


def unordered(dataset):
    return {frozenset(pair) for pair in zip(dataset["question1"], dataset["question2"], strict=True)}


def test_every_labelled_pair_and_every_group_pair_once():
    rows = distillation_pairs(train_pairs())
    assert unordered(rows) == {frozenset(p) for p in [("a", "b"), ("b", "c"), ("a", "c"), ("a", "d"), ("e", "f")]}
    assert len(rows) == 5 and rows.column_names == ["question1", "question2"]
    labelled_only = distillation_pairs(train_pairs(), include_group_pairs=False)
    assert frozenset(("a", "c")) not in unordered(labelled_only) and len(labelled_only) == 4


def test_teacher_rows_point_at_each_side_vector():
    rows = distillation_pairs(train_pairs())
    texts = sorted(set(rows["question1"]) | set(rows["question2"]))
    teacher = TeacherEmbeddings(pd.Index(texts), torch.arange(len(texts), dtype=torch.float32)[:, None].repeat(1, 2))
    with_rows = with_teacher_rows(rows, teacher)
    for first, second, row_a, row_b in zip(
        with_rows["question1"],
        with_rows["question2"],
        with_rows["teacher_row_a"],
        with_rows["teacher_row_b"],
        strict=True,
    ):
        assert (texts[row_a], texts[row_b]) == (first, second)
