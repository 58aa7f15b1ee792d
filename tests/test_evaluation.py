"""Pair evaluation and duplicate retrieval with a tiny model, checked against brute-force loops."""

import math
from types import SimpleNamespace

import datasets
import numpy as np
import pytest
import torch

from hfsiamese.evaluation import (
    decision_threshold,
    evaluate_pairs,
    evaluate_retrieval,
    question_corpus,
    retrieval_of_embeddings,
)
from hfsiamese.metrics import pair_classification_metrics
from tests.conftest import TEXTS

# Eight distinct questions in groups {0, 1}, {2, 3, 7}, {4, 5} and the singleton {6}.
GROUPS = np.array([0, 0, 1, 1, 2, 2, 3, 1])


def _brute_force_retrieval(embeddings, group_ids, k):
    """Score every pair of questions, rank all others for each query in a plain loop."""
    similarity = (embeddings @ embeddings.T).numpy()
    mrr, recall, ndcg, queries = [], [], [], 0
    for query in range(len(group_ids)):
        wanted = {i for i in range(len(group_ids)) if i != query and group_ids[i] == group_ids[query]}
        if not wanted:
            continue
        queries += 1
        others = sorted((i for i in range(len(group_ids)) if i != query), key=lambda i: -similarity[query, i])
        ranks = [rank for rank, item in enumerate(others[:k], start=1) if item in wanted]
        mrr.append(1 / ranks[0] if ranks else 0.0)
        recall.append(len(ranks) / len(wanted))
        ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(wanted), k) + 1))
        ndcg.append(sum(1 / math.log2(r + 1) for r in ranks) / ideal)
    return {f"mrr@{k}": np.mean(mrr), f"recall@{k}": np.mean(recall), f"ndcg@{k}": np.mean(ndcg)}, queries


def test_retrieval_matches_brute_force(tiny_lstm, word_tokenizer):
    result = evaluate_retrieval(tiny_lstm, TEXTS, GROUPS, word_tokenizer, k=(1, 2, 5))
    embeddings = tiny_lstm.encode(TEXTS, word_tokenizer)
    for k in (1, 2, 5):
        expected, queries = _brute_force_retrieval(embeddings, GROUPS, k)
        for key, value in expected.items():
            assert result[key] == pytest.approx(value), key
    assert result["num_queries"] == queries == 7  # the singleton question is searched, never searching
    assert result["corpus_size"] == 8


def test_retrieval_is_the_same_in_small_chunks(tiny_lstm, word_tokenizer):
    whole = evaluate_retrieval(tiny_lstm, TEXTS, GROUPS, word_tokenizer, k=3)
    chunked = evaluate_retrieval(tiny_lstm, TEXTS, GROUPS, word_tokenizer, k=3, query_chunk_size=2, corpus_chunk_size=3)
    assert chunked == pytest.approx(whole)


def test_perfect_embeddings_score_one():
    class GroupEmbedder:
        """Embeds each question as the one-hot vector of its group: duplicates are identical."""

        def encode(self, texts, tokenizer=None, **kwargs):
            return torch.nn.functional.one_hot(torch.as_tensor(GROUPS[[TEXTS.index(t) for t in texts]])).float()

    result = evaluate_retrieval(GroupEmbedder(), TEXTS, GROUPS, k=(1, 2))
    assert result["mrr@1"] == 1.0 and result["ndcg@2"] == pytest.approx(1.0) and result["recall@2"] == 1.0


def test_retrieval_of_embeddings_made_elsewhere_e_g_cut_to_fewer_dimensions(tiny_lstm, word_tokenizer):
    embeddings = tiny_lstm.encode(TEXTS, word_tokenizer)
    assert retrieval_of_embeddings(embeddings, GROUPS, k=(1, 5)) == evaluate_retrieval(
        tiny_lstm, TEXTS, GROUPS, word_tokenizer, k=(1, 5)
    )
    cut = torch.nn.functional.normalize(embeddings[:, :3], dim=-1)
    expected, _ = _brute_force_retrieval(cut, GROUPS, 5)
    result = retrieval_of_embeddings(cut, GROUPS, k=5)
    assert all(result[key] == pytest.approx(value) for key, value in expected.items())
    with pytest.raises(ValueError, match="got 8 questions but group ids of shape \\(2,\\)"):
        retrieval_of_embeddings(embeddings, [0, 0])


def test_retrieval_needs_a_group_with_two_questions(tiny_lstm, word_tokenizer):
    with pytest.raises(ValueError, match="nothing to retrieve"):
        evaluate_retrieval(tiny_lstm, TEXTS[:3], [0, 1, 2], word_tokenizer)
    with pytest.raises(ValueError, match="group ids"):
        evaluate_retrieval(tiny_lstm, TEXTS[:3], [0, 0], word_tokenizer)


def test_question_corpus_builds_duplicate_groups():
    pairs = datasets.Dataset.from_dict(
        {
            "question1": ["A ?", "b ?", "c ?", "d ?", "a ?"],
            "question2": ["b ?", "C ?", "e ?", "a ?", "f ?"],
            "label": [1, 1, 0, 0, 1],
        }
    )
    questions, groups = question_corpus(pairs)
    # one entry per normalised question, with the text of its first occurrence
    assert sorted(questions) == ["A ?", "b ?", "c ?", "d ?", "e ?", "f ?"]
    group_of = dict(zip(questions, groups))
    assert group_of["A ?"] == group_of["b ?"] == group_of["c ?"] == group_of["f ?"]  # a~b, b~C, a~f
    assert len({group_of["A ?"], group_of["d ?"], group_of["e ?"]}) == 3

    view = pairs.select([4, 2, 0])  # an indices mapping, as after a split: only these rows count
    questions, groups = question_corpus(view)
    assert sorted(questions) == ["a ?", "b ?", "c ?", "e ?", "f ?"]
    group_of = dict(zip(questions, groups))
    assert group_of["a ?"] == group_of["b ?"] == group_of["f ?"]
    assert len({group_of["a ?"], group_of["c ?"], group_of["e ?"]}) == 3


def test_evaluate_pairs_uses_the_models_threshold(tiny_lstm, word_tokenizer):
    pairs = datasets.Dataset.from_dict({"question1": TEXTS[0::2], "question2": TEXTS[1::2], "label": [1, 1, 0, 0]})
    tiny_lstm.config.threshold = 0.25
    result = evaluate_pairs(tiny_lstm, pairs, word_tokenizer)
    scores = tiny_lstm.score_pairs(TEXTS[0::2], TEXTS[1::2], word_tokenizer).numpy()
    assert result == pytest.approx(pair_classification_metrics(scores, [1, 1, 0, 0], threshold=0.25))
    tiny_lstm.config.threshold = None
    with pytest.warns(UserWarning, match="optimistic"):
        evaluate_pairs(tiny_lstm, pairs, word_tokenizer)
    with pytest.raises(ValueError, match="lack columns"):
        evaluate_pairs(tiny_lstm, pairs.remove_columns("label"), word_tokenizer)


def test_a_threshold_outside_the_unit_of_the_models_scores_is_refused(tiny_lstm, word_tokenizer):
    pairs = datasets.Dataset.from_dict({"question1": TEXTS[0::2], "question2": TEXTS[1::2], "label": [1, 1, 0, 0]})
    with pytest.raises(ValueError, match=r"threshold is a cosine similarity and must lie in \[-1, 1\], got 5.0"):
        evaluate_pairs(tiny_lstm, pairs, word_tokenizer, threshold=5.0)
    assert evaluate_pairs(tiny_lstm, pairs, word_tokenizer, threshold=-0.5)["threshold"] == -0.5  # a cosine may be < 0
    head = SimpleNamespace(config=SimpleNamespace(classifier_head=True, threshold=None))  # its scores: P(duplicate)
    with pytest.raises(ValueError, match=r"P\(duplicate\) for this model .* must lie in \[0, 1\], got -0.5"):
        decision_threshold(head, -0.5)
    assert decision_threshold(head, 0.7) == 0.7


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, "batch_size must be a positive integer, got 0"),
        ({"max_length": 0}, r"max_length must be a positive integer \(or unset\), got 0"),
        ({"truncate_dim": 0}, r"truncate_dim must be a positive integer \(or unset\), got 0"),
        ({"retrieval_k": [0, 5]}, r"retrieval_k cut-offs must be positive integers, got \[0, 5\]"),
    ],
)
def test_evaluate_refuses_sizes_no_run_can_use_with_its_flags(options, message):
    # they were refused by the encoder, once the model was loaded and the pairs read
    from hfsiamese.evaluation import EvaluationArguments

    with pytest.raises(ValueError, match=message):
        EvaluationArguments(model_name_or_path="m", test_file="pairs.tsv", **options)
    assert EvaluationArguments(model_name_or_path="m", test_file="pairs.tsv").batch_size == 256
