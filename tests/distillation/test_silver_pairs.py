"""silver_pairs: training questions paired (bi-encoder neighbours, random pairs), labelled by a cross-encoder at its threshold."""

import importlib

import datasets
import numpy as np
import pytest
import torch

from hfsiamese.data import load_pairs
from hfsiamese.distillation.silver_pairs import label_silver_pairs as silver_pairs
from tests.conftest import QQP_FILE

silver_module = importlib.import_module("hfsiamese.distillation.silver_pairs")


def fold(text):
    return " ".join(text.lower().split())


def both(rows, name="question"):
    """The first and second questions (or ids: name="qid") of every row, as one list."""
    return list(rows[f"{name}1"]) + list(rows[f"{name}2"])


def pair_set(rows):
    return [frozenset((fold(a), fold(b))) for a, b in zip(rows["question1"], rows["question2"])]


@pytest.fixture(scope="module")
def train_pairs():
    """80 labelled QQP pairs (questions identified by their normalised text)."""
    return load_pairs(str(QQP_FILE)).select(range(80))


@pytest.fixture
def cross(tiny_cross_encoder):
    tiny_cross_encoder.config.threshold = 0.5
    tiny_cross_encoder.config.max_seq_length = 64  # the tiny model's 64 positions
    return tiny_cross_encoder


def label(cross, train, lstm, tokenizer, **options):
    return silver_pairs(
        cross, train, bi_encoder=lstm, tokenizer=tokenizer, **{"neighbours": 3, "random_pairs": 40, **options}
    )


def test_no_excluded_question_no_pair_twice_and_no_gold_pair(cross, train_pairs, tiny_lstm, word_tokenizer):
    train_questions = {fold(q) for q in both(train_pairs)}
    # Held-out pairs sharing five training questions, written with other case and spacing: the same questions.
    shared = list(train_pairs["question1"][:5])
    exclude = datasets.Dataset.from_dict(
        {
            "question1": [f"  {q.upper()} " for q in shared],
            "question2": ["what is held out ?"] * 5,
            "label": [1, 0, 1, 0, 1],
        }
    )
    excluded = {fold(q) for q in shared}
    unguarded = label(cross, train_pairs, tiny_lstm, word_tokenizer)
    assert any(excluded & pair for pair in pair_set(unguarded))  # without exclude, they are paired

    silver = label(cross, train_pairs, tiny_lstm, word_tokenizer, exclude=exclude)
    pairs = pair_set(silver)
    assert not any(excluded & pair for pair in pairs)
    assert set().union(*pairs) <= train_questions - excluded
    assert all(len(pair) == 2 for pair in pairs)  # never a question with itself
    assert len(set(pairs)) == len(pairs)  # each unordered pair once
    assert not set(pairs) & set(pair_set(train_pairs))  # never a gold pair, whatever its label
    sources = np.asarray(silver["source"])
    assert (sources == "random").sum() == 40 and 0 < (sources == "neighbour").sum() <= 3 * len(train_questions)
    assert list(sources) == sorted(sources)  # neighbour pairs first
    assert silver.column_names == ["question1", "question2", "label", "silver_score", "source"]


def test_each_question_gets_its_nearest_non_gold_question(cross, train_pairs, tiny_lstm, word_tokenizer):
    silver = label(cross, train_pairs, tiny_lstm, word_tokenizer, neighbours=1, random_pairs=0)
    first = list({fold(q): q for q in reversed(both(train_pairs))}.values())[::-1]  # one text per question
    index = {fold(q): i for i, q in enumerate(first)}
    embeddings = torch.nn.functional.normalize(tiny_lstm.encode(first, word_tokenizer), dim=-1)
    scores = embeddings @ embeddings.T
    scores.fill_diagonal_(-float("inf"))
    for a, b in zip(train_pairs["question1"], train_pairs["question2"]):
        scores[index[fold(a)], index[fold(b)]] = scores[index[fold(b)], index[fold(a)]] = -float("inf")
    best = scores.max(dim=1).values
    partners = {i: set() for i in range(len(first))}
    for pair in pair_set(silver):
        i, j = (index[q] for q in pair)
        partners[i].add(j)
        partners[j].add(i)
    # Every question is paired with a nearest one (ties: any of them), and there are no more pairs than questions.
    assert all(any(torch.isclose(scores[i, j], best[i]) for j in partners[i]) for i in partners)
    assert len(silver) <= len(first)


def test_labels_follow_the_threshold_and_a_cross_encoder_without_one_is_refused(
    cross, train_pairs, tiny_lstm, word_tokenizer
):
    scores = np.asarray(label(cross, train_pairs, tiny_lstm, word_tokenizer)["silver_score"])
    cross.config.threshold = float(np.median(scores))
    silver = label(cross, train_pairs, tiny_lstm, word_tokenizer)
    labels, scores = np.asarray(silver["label"]), np.asarray(silver["silver_score"])
    assert np.array_equal(labels, (scores >= cross.config.threshold).astype(int)) and 0 < labels.mean() < 1
    # The stored score is the cross-encoder's own.
    again = cross.score_pairs(list(silver["question1"][:5]), list(silver["question2"][:5])).numpy()
    assert np.allclose(again, scores[:5], atol=1e-6)

    cross.config.threshold = None
    with pytest.raises(ValueError, match="has no calibrated threshold to label silver pairs with"):
        silver_pairs(cross, train_pairs, bi_encoder=object())  # refused before anything is encoded


def test_deterministic_for_a_seed(cross, train_pairs, tiny_lstm, word_tokenizer):
    first = label(cross, train_pairs, tiny_lstm, word_tokenizer, seed=3)
    assert label(cross, train_pairs, tiny_lstm, word_tokenizer, seed=3).to_dict() == first.to_dict()
    other = label(cross, train_pairs, tiny_lstm, word_tokenizer, seed=4)
    neighbours = np.asarray(first["source"]) == "neighbour"
    assert other.select(np.flatnonzero(neighbours)).to_dict() == first.select(np.flatnonzero(neighbours)).to_dict()
    assert pair_set(other.select(np.flatnonzero(~neighbours))) != pair_set(first.select(np.flatnonzero(~neighbours)))


def test_random_pairs_drawn_in_rounds_on_large_pools(cross, train_pairs, tiny_lstm, word_tokenizer, monkeypatch):
    monkeypatch.setattr(silver_module, "ENUMERATE_UP_TO", 0)  # as above a few million candidate pairs
    silver = label(cross, train_pairs, tiny_lstm, word_tokenizer, random_pairs=300)
    pairs = pair_set(silver)
    assert (np.asarray(silver["source"]) == "random").sum() == 300
    assert len(set(pairs)) == len(pairs) and not set(pairs) & set(pair_set(train_pairs))
    assert label(cross, train_pairs, tiny_lstm, word_tokenizer, random_pairs=300).to_dict() == silver.to_dict()


def test_a_small_pool_gives_every_remaining_pair_once(cross, tiny_lstm, word_tokenizer):
    train = datasets.Dataset.from_dict(
        {"question1": ["a b ?", "c d ?", "e f ?"], "question2": ["b a ?", "d c ?", "f e ?"], "label": [1, 0, 1]}
    )
    silver = label(cross, train, tiny_lstm, word_tokenizer, neighbours=1, random_pairs=100)
    # 6 questions: 15 pairs, 3 of them gold.
    assert len(silver) == 12 and len(set(pair_set(silver))) == 12


def test_question_ids_are_the_identity_and_are_kept(cross, tiny_lstm, word_tokenizer):
    train = datasets.Dataset.from_dict(
        {
            "question1": ["how do i learn python ?", "why is the sky blue ?", "how do i cook rice ?"],
            "question2": [
                "what is the best way to learn python ?",
                "what makes the sky look blue ?",
                "how to cook rice ?",
            ],
            "label": [1, 1, 0],
            "qid1": ["1", "3", "5"],
            "qid2": ["2", "4", "6"],
        }
    )
    # Held out by id: question 3, whatever its text there.
    exclude = datasets.Dataset.from_dict(
        {"question1": ["another text"], "question2": ["x"], "label": [0], "qid1": ["3"], "qid2": ["9"]}
    )
    silver = label(cross, train, tiny_lstm, word_tokenizer, exclude=exclude)
    assert silver.column_names == ["question1", "question2", "qid1", "qid2", "label", "silver_score", "source"]
    ids = set(both(silver, "qid"))
    assert "3" not in ids and ids <= {"1", "2", "4", "5", "6"}
    text_of = dict(zip(both(train, "qid"), both(train)))
    assert all(text_of[i] == q for i, q in zip(both(silver, "qid"), both(silver)))
    with pytest.raises(ValueError, match="identified by question ids but the excluded pairs by normalised text"):
        label(cross, train, tiny_lstm, word_tokenizer, exclude=exclude.remove_columns(["qid1", "qid2"]))
