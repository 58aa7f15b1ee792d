"""ROC-AUC of similarity scores, the chance that a duplicate outscores a non-duplicate (a local `evaluate` module)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import ThresholdFreeMetric


class RocAuc(ThresholdFreeMetric):
    def _of_scores(self, labels, scores):
        return sklearn.metrics.roc_auc_score(labels, scores)

    _key = "roc_auc"
    _description = """
Area under the ROC curve of the scores (ties count one half). """
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.ROC_AUC)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1])
    {'roc_auc': 0.75}
"""
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.roc_auc_score.html"
