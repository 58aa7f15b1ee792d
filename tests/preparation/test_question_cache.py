"""A run from a prepared folder computes the training questions' fingerprint and the split report once, then reads them."""

from __future__ import annotations

import datasets
import numpy as np

from hfsiamese.data.question_fingerprints import pair_question_hashes
from hfsiamese.data.question_identity import split_report
from hfsiamese.preparation import load_prepared_splits, prepare_pairs, question_cache
from hfsiamese.preparation.question_cache import (
    SPLIT_REPORTS,
    TRAINING_QUESTIONS,
    cached_pair_question_hashes,
    cached_split_report,
)
from tests.conftest import QQP_FILE


def counted(monkeypatch, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(question_cache, name)

    def counting(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(question_cache, name, counting)
    return calls


def test_the_training_questions_are_hashed_once_per_prepared_rows(tmp_path, monkeypatch):
    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    train = load_prepared_splits(tmp_path / "prepared")["train"]
    calls = counted(monkeypatch, "pair_question_hashes")
    first = cached_pair_question_hashes(train)
    again = cached_pair_question_hashes(load_prepared_splits(tmp_path / "prepared")["train"])
    assert len(calls) == 1
    np.testing.assert_array_equal(first, pair_question_hashes(train))
    np.testing.assert_array_equal(again, first)
    # Other rows of the folder (a run with --max_train_pairs): their own fingerprint, computed.
    fewer = cached_pair_question_hashes(train.select(range(500)))
    assert len(calls) == 2 and len(fewer) < len(first)
    assert len(list((tmp_path / "prepared" / TRAINING_QUESTIONS).iterdir())) == 2


def test_the_split_report_is_computed_once_per_prepared_splits(tmp_path, monkeypatch):
    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    splits = load_prepared_splits(tmp_path / "prepared")
    calls = counted(monkeypatch, "split_report")
    first = cached_split_report(splits)
    again = cached_split_report(load_prepared_splits(tmp_path / "prepared"))
    assert len(calls) == 1
    assert first == again == split_report(splits)
    assert first["shared_questions"] == {"train/validation": 0}
    # A sampled validation set is other splits: its own report.
    sampled = datasets.DatasetDict(train=splits["train"], validation=splits["validation"].select(range(100)))
    assert cached_split_report(sampled)["validation"]["pairs"] == 100
    assert len(calls) == 2
    assert len(list((tmp_path / "prepared" / SPLIT_REPORTS).iterdir())) == 2


def test_rows_read_from_a_pair_file_keep_nothing(monkeypatch):
    train = datasets.Dataset.from_dict({"question1": ["How do I?", "Why?"], "question2": ["Why do I?", "How?"]})
    calls = counted(monkeypatch, "pair_question_hashes")
    for _ in range(2):
        cached_pair_question_hashes(train)
    assert len(calls) == 2
