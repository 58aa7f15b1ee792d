"""MRR@k, recall@k and nDCG@k modules against brute-force loops and scikit-learn."""

import math

import evaluate
import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from hfsiamese import metrics
from hfsiamese.metrics import retrieval_metrics


def _random_queries(seed, num_queries=40, corpus_size=30, depth=10):
    """Ranked result lists (some shorter than depth) and relevant sets (some never retrieved)."""
    rng = np.random.default_rng(seed)
    retrieved, relevant = [], []
    for _ in range(num_queries):
        retrieved.append(rng.permutation(corpus_size)[: rng.integers(3, depth + 1)].tolist())
        relevant.append(rng.choice(corpus_size, size=rng.integers(1, 6), replace=False).tolist())
    return retrieved, relevant


def _brute_force(retrieved, relevant, k):
    mrr, recall, ndcg = [], [], []
    for results, wanted in zip(retrieved, relevant):
        top = results[:k]
        ranks = [rank for rank, item in enumerate(top, start=1) if item in wanted]
        mrr.append(1.0 / ranks[0] if ranks else 0.0)
        recall.append(len(ranks) / len(wanted))
        dcg = sum(1.0 / math.log2(rank + 1) for rank in ranks)
        ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
        ndcg.append(dcg / ideal)
    return {f"mrr@{k}": np.mean(mrr), f"recall@{k}": np.mean(recall), f"ndcg@{k}": np.mean(ndcg)}


@pytest.mark.parametrize("seed", range(4))
def test_modules_match_brute_force(seed):
    retrieved, relevant = _random_queries(seed)
    ks = [1, 3, 5, 10]
    expected = {}
    for k in ks:
        expected.update(_brute_force(retrieved, relevant, k))
    for path, name in ((metrics.MRR_AT_K, "mrr"), (metrics.RECALL_AT_K, "recall"), (metrics.NDCG_AT_K, "ndcg")):
        result = evaluate.load(path).compute(predictions=retrieved, references=relevant, k=ks)
        assert result == {key: pytest.approx(value) for key, value in expected.items() if key.startswith(f"{name}@")}


@pytest.mark.parametrize("seed", range(3))
def test_ndcg_matches_sklearn_on_a_full_score_matrix(seed):
    """Rank a whole corpus by scores; our nDCG over the top-k lists equals sklearn's over the matrix."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(25, 40))
    relevance = (rng.random((25, 40)) < 0.1).astype(int)
    relevance[np.arange(25), rng.integers(0, 40, 25)] = 1  # every query has a relevant item
    retrieved = np.argsort(-scores, axis=1)[:, :10].tolist()
    relevant = [np.flatnonzero(row).tolist() for row in relevance]
    result = retrieval_metrics(retrieved, relevant, k=[1, 5, 10])
    for k in (1, 5, 10):
        assert result[f"ndcg@{k}"] == pytest.approx(ndcg_score(relevance, scores, k=k))


def test_combine_and_single_k():
    retrieved, relevant = _random_queries(9)
    combined = evaluate.combine(list(metrics.RETRIEVAL_METRICS))
    result = combined.compute(predictions=retrieved, references=relevant, k=5)
    assert set(result) == {"mrr@5", "recall@5", "ndcg@5"}
    assert result == pytest.approx(_brute_force(retrieved, relevant, 5))


def test_known_values():
    result = retrieval_metrics([[3, 1, 2], [0, 2, 1]], [[1], [1, 3]], k=[1, 3])
    assert result["mrr@1"] == 0.0 and result["mrr@3"] == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert result["recall@3"] == pytest.approx((1 + 1 / 2) / 2)
    ndcg_2 = (1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert result["ndcg@3"] == pytest.approx((1 / math.log2(3) + ndcg_2) / 2)


@pytest.mark.parametrize(
    "retrieved,relevant,k,message",
    [
        ([[1, 2]], [[]], 2, "no relevant ids"),
        ([[1, 1]], [[1]], 2, "repeat an id"),
        ([[1, 2]], [[1, 1]], 2, "same relevant id twice"),
        ([[1, 2], [0]], [[1]], 2, "number of predictions"),  # evaluate checks this itself
        ([[1, 2]], [[1]], 0, "positive int"),
        ([[1, -3]], [[1]], 2, "non-negative"),
    ],
)
def test_bad_inputs_are_named(retrieved, relevant, k, message):
    with pytest.raises(ValueError, match=message):
        retrieval_metrics(retrieved, relevant, k=k)
