"""The per-metric pair modules: each against scikit-learn, and all of them through evaluate.combine."""

import evaluate
import numpy as np
import pytest
from sklearn import metrics as skm

from hfsiamese import metrics

AT_THRESHOLD = [
    (metrics.PAIR_ACCURACY, "accuracy", skm.accuracy_score),
    (metrics.PAIR_PRECISION, "precision", lambda y, d: skm.precision_score(y, d, zero_division=0)),
    (metrics.PAIR_RECALL, "recall", lambda y, d: skm.recall_score(y, d, zero_division=0)),
    (metrics.PAIR_F1, "f1", lambda y, d: skm.f1_score(y, d, zero_division=0)),
]
THRESHOLD_FREE = [
    (metrics.AVERAGE_PRECISION, "average_precision", skm.average_precision_score),
    (metrics.ROC_AUC, "roc_auc", skm.roc_auc_score),
]


def _scored_pairs(seed, n=200):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = np.round(np.tanh(labels * 0.6 + rng.normal(0, 0.5, n)), 2)  # cosine-like, with ties
    return scores, labels


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("path,key,reference", AT_THRESHOLD)
def test_threshold_metrics_match_sklearn(path, key, reference, seed):
    scores, labels = _scored_pairs(seed)
    threshold = float(np.quantile(scores, 0.3 + 0.2 * seed))
    result = evaluate.load(path).compute(predictions=scores, references=labels, threshold=threshold)
    assert result == {key: pytest.approx(reference(labels, (scores >= threshold).astype(int)))}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("path,key,reference", THRESHOLD_FREE)
def test_ranking_metrics_match_sklearn(path, key, reference, seed):
    scores, labels = _scored_pairs(seed)
    result = evaluate.load(path).compute(predictions=scores, references=labels)
    assert result == {key: pytest.approx(reference(labels, scores))}


@pytest.mark.parametrize("path,key,_", THRESHOLD_FREE)
def test_ranking_metrics_are_nan_for_one_class(path, key, _):
    assert np.isnan(evaluate.load(path).compute(predictions=[0.2, 0.9], references=[1, 1])[key])


@pytest.mark.parametrize("path,key,_", AT_THRESHOLD)
def test_threshold_metrics_need_a_threshold(path, key, _):
    with pytest.raises(ValueError, match="needs threshold="):
        evaluate.load(path).compute(predictions=[0.2, 0.9], references=[0, 1])


def test_bad_inputs_are_named():
    metric = evaluate.load(metrics.PAIR_F1)
    with pytest.raises(ValueError, match="0/1 labels"):
        metric.compute(predictions=[0.2, 0.9], references=[0, 2], threshold=0.5)
    with pytest.raises(ValueError, match="NaN or infinite"):
        metric.compute(predictions=[float("nan"), 0.9], references=[0, 1], threshold=0.5)


def test_combine_passes_one_set_of_options_to_every_pair_metric():
    scores, labels = _scored_pairs(7)
    combined = evaluate.combine(list(metrics.PAIR_METRICS))
    result = combined.compute(predictions=scores, references=labels, threshold=0.3, calibrate_for="f1")
    decisions = (scores >= 0.3).astype(int)
    assert result["accuracy"] == pytest.approx(skm.accuracy_score(labels, decisions))
    assert result["precision"] == pytest.approx(skm.precision_score(labels, decisions))
    assert result["recall"] == pytest.approx(skm.recall_score(labels, decisions))
    assert result["f1"] == pytest.approx(skm.f1_score(labels, decisions))
    assert result["average_precision"] == pytest.approx(skm.average_precision_score(labels, scores))
    assert result["roc_auc"] == pytest.approx(skm.roc_auc_score(labels, scores))
    best_f1 = max(skm.f1_score(labels, (scores >= t).astype(int)) for t in np.unique(scores))
    assert result["best_f1"] == pytest.approx(best_f1)
    assert set(result) == {
        "accuracy",
        "precision",
        "recall",
        "f1",
        "average_precision",
        "roc_auc",
        "best_threshold",
        "best_f1",
    }


def test_combine_accumulates_batches():
    scores, labels = _scored_pairs(3)
    combined = evaluate.combine([metrics.PAIR_ACCURACY, metrics.ROC_AUC])
    for start in range(0, len(scores), 64):
        combined.add_batch(predictions=scores[start : start + 64], references=labels[start : start + 64])
    result = combined.compute(threshold=0.1)
    assert result["accuracy"] == pytest.approx(skm.accuracy_score(labels, (scores >= 0.1).astype(int)))
    assert result["roc_auc"] == pytest.approx(skm.roc_auc_score(labels, scores))


def test_misspelt_option_is_not_silently_ignored():
    with pytest.raises(TypeError, match="treshold"):
        evaluate.load(metrics.ROC_AUC).compute(predictions=[0.2, 0.9], references=[0, 1], treshold=0.5)
