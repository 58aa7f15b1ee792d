"""Reliability curve, ECE and Brier score of predicted duplicate probabilities, against scikit-learn and by hand."""

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from hfsiamese.metrics.reliability import calibration_metrics, expected_calibration_error, reliability_curve


def test_the_curve_is_scikit_learns_with_the_pairs_behind_each_point():
    rng = np.random.default_rng(0)
    probabilities = np.concatenate([rng.uniform(0, 1, 300), [0.0, 1.0, 0.5, 0.1]])  # edges included
    labels = (rng.random(len(probabilities)) < probabilities).astype(int)
    curve = reliability_curve(probabilities, labels, n_bins=10)
    observed, predicted = calibration_curve(labels, probabilities, n_bins=10, strategy="uniform")
    assert curve.observed == pytest.approx(observed) and curve.predicted == pytest.approx(predicted)
    assert curve.counts.sum() == len(probabilities)
    # Recount by hand: a bin holds the probabilities above its lower edge up to its upper one (0 in the first).
    inner_edges = [i / 10 for i in range(1, 10)]

    def bin_of(p):
        return sum(edge < p for edge in inner_edges)

    for point, count in zip(curve.predicted, curve.counts):
        members = [p for p in probabilities if bin_of(p) == bin_of(point)]
        assert count == len(members) and np.mean(members) == pytest.approx(point)


def test_ece_by_hand():
    probabilities = np.array([0.05, 0.05, 0.95, 0.95, 0.95, 0.95, 0.55, 0.55])
    labels = np.array([0, 0, 1, 1, 1, 0, 1, 1])
    # Bins: {0.05 x2, rate 0}, {0.95 x4, rate 0.75}, {0.55 x2, rate 1}.
    expected = (2 * 0.05 + 4 * 0.2 + 2 * 0.45) / 8
    assert expected_calibration_error(probabilities, labels) == pytest.approx(expected)
    assert expected_calibration_error(labels.astype(float), labels) == 0.0  # certain and right


def test_calibration_metrics_and_bad_input():
    probabilities, labels = np.array([0.2, 0.7, 0.9]), np.array([0, 1, 0])
    metrics = calibration_metrics(probabilities, labels)
    assert metrics["brier"] == pytest.approx(brier_score_loss(labels, probabilities))
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        calibration_metrics([0.2, 1.3], [0, 1])
    with pytest.raises(ValueError, match="must be 0/1 labels"):
        calibration_metrics([0.2, 0.3], [0, 2])
    with pytest.raises(ValueError, match="got 1 scores but 2 labels"):
        calibration_metrics([0.2], [0, 1])
    with pytest.raises(ValueError, match="NaN or infinite"):
        calibration_metrics([0.2, float("nan")], [0, 1])
