import evaluate
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from hfsiamese.metrics import PAIR_CLASSIFICATION, pair_classification_metrics


def _brute_force_best(scores, labels, score_fn):
    return max(score_fn(labels, (scores >= t).astype(int)) for t in np.concatenate([scores, [np.inf]]))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("target,score_fn", [("accuracy", accuracy_score), ("f1", f1_score)])
def test_calibrated_threshold_is_optimal(seed, target, score_fn):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, 300)
    scores = np.round(labels * 0.4 + rng.normal(0, 0.3, 300), 2)  # ties included
    result = pair_classification_metrics(scores, labels, calibrate_for=target)
    assert result[target] == pytest.approx(_brute_force_best(scores, labels, score_fn))
    assert result["num_pairs"] == 300


def test_fixed_threshold_and_known_values():
    result = pair_classification_metrics([0.9, 0.2, 0.8, 0.1], [1, 0, 0, 1], threshold=0.5)
    assert result["threshold"] == 0.5
    assert result["accuracy"] == 0.5 and result["precision"] == 0.5 and result["recall"] == 0.5
    assert result["roc_auc"] == pytest.approx(0.5)


def test_loads_offline_and_combines():
    metric = evaluate.load(PAIR_CLASSIFICATION)
    metric.add_batch(predictions=[0.9, 0.1], references=[1, 0])
    assert metric.compute(threshold=0.5)["accuracy"] == 1.0
    combined = evaluate.combine([PAIR_CLASSIFICATION])
    assert combined.compute(predictions=[0.9, 0.1], references=[1, 0], threshold=0.5)["f1"] == 1.0


def test_rejects_non_binary_labels():
    with pytest.raises(ValueError, match="0/1"):
        pair_classification_metrics([0.1, 0.2], [0, 2])
