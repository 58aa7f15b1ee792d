"""Precision of duplicate decisions `score >= threshold` on scored pairs.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.PAIR_PRECISION)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import THRESHOLD_ARGS_DOC, PairScoreMetric
from hfsiamese.metrics.thresholds import decisions_at


class PairPrecision(PairScoreMetric):
    _description = """
Of the pairs called duplicates (`score >= threshold`), the share that are duplicates; 0 when none is called one.
"""
    _kwargs_description = (
        THRESHOLD_ARGS_DOC
        + """Returns:
    precision (`float`).
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.PAIR_PRECISION)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], threshold=0.5)
    {'precision': 0.5}
"""
    )
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.precision_score.html"

    def _score(self, scores, labels, *, threshold, calibrate_for, target_precision):
        decisions = decisions_at(scores, threshold, self.name)
        return {"precision": float(sklearn.metrics.precision_score(labels, decisions, zero_division=0))}
