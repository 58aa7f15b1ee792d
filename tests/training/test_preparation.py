"""Data preparation for a training run: pairs -> leak-free splits with groups -> the rows the loss needs."""

from __future__ import annotations

import warnings

import datasets
import numpy as np
import pytest

from hfsiamese.data import load_pairs, split_report
from hfsiamese.losses import get_loss
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits, training_view, view_for_loss, warn_if_thin
from tests.conftest import QQP_FILE, TEXTS


def write(path, rows) -> str:
    path.write_text("".join(f"{label}\t{a}\t{b}\t{i}\n" for i, (label, a, b) in enumerate(rows)), encoding="utf-8")
    return str(path)


def test_default_file_is_split_by_question_with_groups():
    splits = load_splits(DataArguments(test_fraction=0.1), default_train_file=QQP_FILE)
    assert list(splits) == ["train", "validation", "test"]
    assert sum(len(split) for split in splits.values()) == len(load_pairs(str(QQP_FILE)))
    assert split_report(splits)["shared_questions"] == {"train/validation": 0, "train/test": 0, "validation/test": 0}
    assert "group_id" in splits["train"].column_names
    again = load_splits(DataArguments(test_fraction=0.1), default_train_file=QQP_FILE)
    assert again["validation"]["question1"][:] == splits["validation"]["question1"][:]


def test_limits_and_a_validation_file(tmp_path):
    validation = write(tmp_path / "val.tsv", [(1, TEXTS[6], TEXTS[7]), (0, TEXTS[5], TEXTS[7])])
    args = DataArguments(train_file=str(QQP_FILE), validation_file=validation, max_train_pairs=100, max_eval_pairs=1)
    splits = load_splits(args)
    assert (len(splits["train"]), len(splits["validation"])) == (100, 1)
    assert splits["validation"]["question1"][:] == [TEXTS[6]]


def test_bad_sources(tmp_path):
    with pytest.raises(ValueError, match="either --train_file or --dataset_name, not both"):
        load_splits(DataArguments(train_file="a.tsv", dataset_name="nyu-mll/glue:qqp"))
    with pytest.raises(ValueError, match="pass --train_file or --dataset_name"):
        load_splits(DataArguments())
    no_duplicates = write(tmp_path / "neg.tsv", [(0, TEXTS[0], TEXTS[1]), (0, TEXTS[2], TEXTS[3])])
    args = DataArguments(train_file=no_duplicates, validation_file=no_duplicates)
    with pytest.raises(ValueError, match="neg.tsv holds no duplicate pairs"):
        load_splits(args)


@pytest.mark.parametrize(
    ("name", "options", "view"),
    [
        ("contrastive", {}, "labelled_pairs"),
        ("online_contrastive", {}, "labelled_pairs"),
        ("contrastive_ranking", {}, "labelled_pairs"),
        ("verification_identification", {}, "labelled_pairs"),
        ("multiple_negatives_ranking", {}, "duplicate_pairs"),
        ("hard_negative_triplet", {}, "duplicate_pairs"),
        ("triplet", {}, "mined_triplets"),
        ("triplet", {"in_batch_negatives": True}, "duplicate_pairs"),
    ],
)
def test_auto_view_is_what_the_loss_declares(name, options, view):
    assert view_for_loss(get_loss(name, **options)) == view


TRAIN = datasets.Dataset.from_dict(
    {
        "question1": [TEXTS[0], TEXTS[2], TEXTS[4], TEXTS[1], TEXTS[6]],
        "question2": [TEXTS[1], TEXTS[3], TEXTS[5], TEXTS[2], TEXTS[7]],
        "label": [1, 1, 1, 0, 0],
    }
)


def test_training_views(tiny_lstm, word_tokenizer):
    args = DataArguments(mining_margin=-2.0)
    labelled = training_view(TRAIN, args, get_loss("contrastive"), tiny_lstm, word_tokenizer)
    assert labelled["label"] == [1, 1, 1, 0, 0] and "group_id" in labelled.column_names
    duplicates = training_view(TRAIN, args, get_loss("multiple_negatives_ranking"), tiny_lstm, word_tokenizer)
    assert duplicates["label"] == [1, 1, 1]
    mined = training_view(TRAIN, args, get_loss("triplet"), tiny_lstm, word_tokenizer)
    assert "negative" in mined.column_names and "negative_score" not in mined.column_names
    assert np.all(np.asarray(mined["label"]) == 1)
    args = DataArguments(train_view="group_pairs", max_pairs_per_group=1)
    assert len(training_view(TRAIN, args, get_loss("contrastive"), tiny_lstm, word_tokenizer)) == 3
    # Labelled negatives where the group has one (T0's and T2's), a mined one for the rest (T4's).
    args = DataArguments(train_view="triplets", mining_margin=-2.0, mining_relative_margin=None)
    rows = training_view(TRAIN, args, get_loss("contrastive"), tiny_lstm, word_tokenizer)
    assert rows["question1"] == [TEXTS[0], TEXTS[2], TEXTS[4]] and "__source_row" not in rows.column_names
    args = DataArguments(train_view="triplets", mining_margin=1.5)  # mining finds nothing: the labelled ones stay
    labelled = training_view(TRAIN, args, get_loss("contrastive"), tiny_lstm, word_tokenizer)
    assert labelled["question1"] == [TEXTS[0], TEXTS[2]] and labelled["negative"] == rows["negative"][:2]
    with pytest.raises(ValueError, match="train_view must be one of auto, duplicate_pairs, .*; got 'pairs'"):
        training_view(TRAIN, DataArguments(train_view="pairs"), get_loss("contrastive"), tiny_lstm, word_tokenizer)


def test_a_view_keeping_less_than_half_of_the_duplicates_warns(tiny_lstm, word_tokenizer):
    pairs = datasets.Dataset.from_dict({"question1": TEXTS[0:8:2], "question2": TEXTS[1:8:2], "label": [1, 1, 1, 1]})
    args = DataArguments(train_view="mined_triplets", mining_margin=-2.0, mining_relative_margin=None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every pair keeps a negative: no warning
        assert len(training_view(pairs, args, get_loss("triplet"), tiny_lstm, word_tokenizer)) == 4
    with pytest.warns(UserWarning, match=r"train_view=triplets keeps 1 of 4 duplicate pairs \(25%\)"):
        warn_if_thin("triplets", 1, 4)
