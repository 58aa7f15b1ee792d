"""ROC-AUC of similarity scores: the chance that a duplicate pair outscores a non-duplicate one.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.ROC_AUC)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import numpy
import sklearn.metrics

from hfsiamese.metrics.base import THRESHOLD_FREE_ARGS_DOC, THRESHOLD_FREE_DOC, PairScoreMetric


class RocAuc(PairScoreMetric):
    _description = (
        """
Area under the ROC curve of the scores (ties count one half). """
        + THRESHOLD_FREE_DOC
    )
    _kwargs_description = (
        THRESHOLD_FREE_ARGS_DOC
        + """Returns:
    roc_auc (`float`).
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.ROC_AUC)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1])
    {'roc_auc': 0.75}
"""
    )
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.roc_auc_score.html"

    def _score(self, scores, labels, *, threshold, calibrate_for, target_precision):
        if len(numpy.unique(labels)) < 2:
            return {"roc_auc": float("nan")}
        return {"roc_auc": float(sklearn.metrics.roc_auc_score(labels, scores))}
