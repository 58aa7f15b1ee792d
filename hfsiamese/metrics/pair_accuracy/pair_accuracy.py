"""Accuracy of duplicate decisions `score >= threshold` on scored pairs (a local `evaluate` module: loads offline)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import DecisionMetric


class PairAccuracy(DecisionMetric):
    def _of_decisions(self, labels, decisions):
        return sklearn.metrics.accuracy_score(labels, decisions)

    _key = "accuracy"
    _description = """
Share of pairs whose decision `score >= threshold` matches the label.
"""
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.PAIR_ACCURACY)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], threshold=0.5)
    {'accuracy': 0.5}
"""
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.accuracy_score.html"
