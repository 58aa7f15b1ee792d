"""Recall of duplicate decisions `score >= threshold` on scored pairs.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.PAIR_RECALL)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import THRESHOLD_ARGS_DOC, PairScoreMetric
from hfsiamese.metrics.thresholds import decisions_at


class PairRecall(PairScoreMetric):
    _description = """
Of the duplicate pairs, the share called duplicates (`score >= threshold`); 0 when there are none.
"""
    _kwargs_description = (
        THRESHOLD_ARGS_DOC
        + """Returns:
    recall (`float`).
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.PAIR_RECALL)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], threshold=0.5)
    {'recall': 0.5}
"""
    )
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.recall_score.html"

    def _score(self, scores, labels, *, threshold, calibrate_for, target_precision):
        decisions = decisions_at(scores, threshold, self.name)
        return {"recall": float(sklearn.metrics.recall_score(labels, decisions, zero_division=0))}
