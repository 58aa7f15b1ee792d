"""Average precision of similarity scores, the area under their precision-recall curve (a local `evaluate` module)."""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import ThresholdFreeMetric


class AveragePrecision(ThresholdFreeMetric):
    def _of_scores(self, labels, scores):
        return sklearn.metrics.average_precision_score(labels, scores)

    _key = "average_precision"
    _description = """
Average precision (scikit-learn's step-wise area under the precision-recall curve) of the scores. """
    _examples = """
    >>> metric = evaluate.load(hfsiamese.metrics.AVERAGE_PRECISION)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1])
    {'average_precision': 0.8333333333333333}
"""
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.average_precision_score.html"
