"""Recall of duplicate decisions `score >= threshold` on scored pairs (a local `evaluate` module: loads offline)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import DecisionMetric


class PairRecall(DecisionMetric):
    def _of_decisions(self, labels, decisions):
        return sklearn.metrics.recall_score(labels, decisions, zero_division=0)

    _key = "recall"
    _description = """
Of the duplicate pairs, the share called duplicates (`score >= threshold`); 0 when there are none.
"""
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.PAIR_RECALL)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], threshold=0.5)
    {'recall': 0.5}
"""
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.recall_score.html"
