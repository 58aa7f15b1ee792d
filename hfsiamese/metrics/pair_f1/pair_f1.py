"""F1 of duplicate decisions `score >= threshold` on scored pairs (a local `evaluate` module: loads offline)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import DecisionMetric


class PairF1(DecisionMetric):
    def _of_decisions(self, labels, decisions):
        return sklearn.metrics.f1_score(labels, decisions, zero_division=0)

    _key = "f1"
    _description = """
Harmonic mean of the precision and recall of the decisions `score >= threshold`; 0 when both are 0.
"""
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.PAIR_F1)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], threshold=0.5)
    {'f1': 0.5}
"""
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.f1_score.html"
