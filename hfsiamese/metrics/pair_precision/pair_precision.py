"""Precision of duplicate decisions `score >= threshold` on scored pairs (a local `evaluate` module: loads offline)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import DecisionMetric


class PairPrecision(DecisionMetric):
    def _of_decisions(self, labels, decisions):
        return sklearn.metrics.precision_score(labels, decisions, zero_division=0)

    _key = "precision"
    _description = """
Of the pairs called duplicates (`score >= threshold`), the share that are duplicates; 0 when none is called one.
"""
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.PAIR_PRECISION)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], threshold=0.5)
    {'precision': 0.5}
"""
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.precision_score.html"
