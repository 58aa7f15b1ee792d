"""A run from a prepared folder computes what it derives from the rows (the training questions' fingerprint, the split
report, the word vocabulary) once, keeps it in the folder, then reads it."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.data.question_fingerprints import pair_question_hashes
from hfsiamese.data.question_identity import split_report
from hfsiamese.preparation import derived_cache, load_prepared_splits, prepare_pairs
from hfsiamese.preparation.derived_cache import (
    SPLIT_REPORTS,
    TRAINING_QUESTIONS,
    VOCABULARIES,
    cached_pair_question_hashes,
    cached_split_report,
    cached_word_tokenizer,
)
from tests.conftest import QQP_FILE


def counted(monkeypatch, name: str) -> list[int]:
    calls: list[int] = []
    original = getattr(derived_cache, name)

    def counting(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(derived_cache, name, counting)
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


def counting_build(train: datasets.Dataset, calls: list[int]):
    def build():
        calls.append(1)
        return train_word_tokenizer(
            list(train["question1"]) + list(train["question2"]), vocab_size=500, model_max_length=32
        )

    return build


def test_the_vocabulary_is_trained_once_per_prepared_folder_and_options(tmp_path):
    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    train = load_prepared_splits(tmp_path / "prepared")["train"].select(range(2_000))
    calls: list[int] = []
    first = cached_word_tokenizer(train, {"vocab_size": 500}, counting_build(train, calls))
    again = cached_word_tokenizer(train, {"vocab_size": 500}, counting_build(train, calls))
    assert len(calls) == 1
    assert first.get_vocab() == again.get_vocab() and len(first) == 500
    assert first("How do I learn Python?")["input_ids"] == again("How do I learn Python?")["input_ids"]
    # Other options, or other training rows: another vocabulary, trained.
    cached_word_tokenizer(train, {"vocab_size": 400}, counting_build(train, calls))
    cached_word_tokenizer(train.select(range(1_000)), {"vocab_size": 500}, counting_build(train, calls))
    assert len(calls) == 3
    assert len(list((tmp_path / "prepared" / VOCABULARIES).iterdir())) == 3


def test_rows_not_from_a_prepared_folder_train_every_time(tmp_path):
    train = datasets.Dataset.from_dict({"question1": ["How do I?"] * 4, "question2": ["Why do I?"] * 4})
    calls: list[int] = []
    for _ in range(2):
        cached_word_tokenizer(train, {"vocab_size": 10}, counting_build(train, calls))
    assert len(calls) == 2


def test_a_large_training_set_trains_its_vocabulary_on_a_seeded_sample():
    from hfsiamese.bi_encoder.model_building import vocabulary_sample

    pairs = datasets.Dataset.from_dict({"question1": [f"q{i}" for i in range(50)], "question2": ["x"] * 50})
    assert vocabulary_sample(pairs, 0) is pairs and vocabulary_sample(pairs, 50) is pairs
    sample = vocabulary_sample(pairs, 20)
    assert len(sample) == 20 and sample["question1"] == vocabulary_sample(pairs, 20)["question1"]
    rows = [int(text[1:]) for text in sample["question1"]]
    assert rows == sorted(rows) and rows != list(range(20))  # drawn over the whole set, read in order
    with pytest.raises(ValueError, match="vocabulary_sample_pairs must be 0"):
        vocabulary_sample(pairs, -1)
