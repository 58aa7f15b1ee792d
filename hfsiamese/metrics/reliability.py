"""
How far predicted duplicate probabilities are from the observed duplicate rates: the reliability
curve (with the pairs behind each point), the expected calibration error and the Brier score.

scikit-learn gives the curve (`calibration_curve`) and the Brier score (`brier_score_loss`); it has no
expected calibration error, and its curve drops the bin counts the ECE weights by, so the counts are
taken here with the very bins `calibration_curve(strategy="uniform")` uses.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import sklearn.calibration
import sklearn.metrics

from hfsiamese.metrics.thresholds import check_pair_inputs

__all__ = ["ReliabilityCurve", "calibration_metrics", "expected_calibration_error", "reliability_curve"]

DEFAULT_BINS = 10


class ReliabilityCurve(NamedTuple):
    """Per non-empty probability bin: mean predicted probability, observed duplicate rate, pairs."""

    predicted: np.ndarray
    observed: np.ndarray
    counts: np.ndarray


def _check_probabilities(probabilities: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """Pairs as every pair metric checks them (`check_pair_inputs`), their scores probabilities in [0, 1]."""
    probabilities, labels = check_pair_inputs(probabilities, labels)
    if not ((probabilities >= 0).all() and (probabilities <= 1).all()):
        raise ValueError("probabilities must be finite numbers in [0, 1]")
    return probabilities, labels


def reliability_curve(probabilities: Any, labels: Any, *, n_bins: int = DEFAULT_BINS) -> ReliabilityCurve:
    """`n_bins` equal-width probability bins; the empty ones are left out (as scikit-learn does)."""
    probabilities, labels = _check_probabilities(probabilities, labels)
    observed, predicted = sklearn.calibration.calibration_curve(
        labels, probabilities, n_bins=n_bins, strategy="uniform"
    )
    # calibration_curve's own binning (uniform edges, right edge folded into the last bin).
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    counts = np.bincount(np.searchsorted(edges[1:-1], probabilities), minlength=n_bins)
    return ReliabilityCurve(predicted, observed, counts[counts > 0])


def expected_calibration_error(probabilities: Any, labels: Any, *, n_bins: int = DEFAULT_BINS) -> float:
    """ECE: the pair-weighted mean |observed duplicate rate − mean predicted probability| over the bins."""
    curve = reliability_curve(probabilities, labels, n_bins=n_bins)
    return float(np.sum(curve.counts * np.abs(curve.observed - curve.predicted)) / curve.counts.sum())


def calibration_metrics(probabilities: Any, labels: Any, *, n_bins: int = DEFAULT_BINS) -> dict[str, float]:
    """`ece` and `brier` (mean squared error of the probabilities) of predicted duplicate probabilities."""
    probabilities, labels = _check_probabilities(probabilities, labels)
    return {
        "ece": expected_calibration_error(probabilities, labels, n_bins=n_bins),
        "brier": float(sklearn.metrics.brier_score_loss(labels, probabilities)),
    }
