"""Accuracy of duplicate decisions `score >= threshold` on scored pairs.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.PAIR_ACCURACY)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import THRESHOLD_ARGS_DOC, PairScoreMetric
from hfsiamese.metrics.thresholds import decisions_at


class PairAccuracy(PairScoreMetric):
    _description = """
Share of pairs whose decision `score >= threshold` matches the label.
"""
    _kwargs_description = (
        THRESHOLD_ARGS_DOC
        + """Returns:
    accuracy (`float`).
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.PAIR_ACCURACY)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], threshold=0.5)
    {'accuracy': 0.5}
"""
    )
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.accuracy_score.html"

    def _score(self, scores, labels, *, threshold, calibrate_for, target_precision):
        decisions = decisions_at(scores, threshold, self.name)
        return {"accuracy": float(sklearn.metrics.accuracy_score(labels, decisions))}
