"""Average precision of similarity scores: the area under the precision-recall curve of duplicates.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.AVERAGE_PRECISION)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import numpy
import sklearn.metrics

from hfsiamese.metrics.base import THRESHOLD_FREE_ARGS_DOC, THRESHOLD_FREE_DOC, PairScoreMetric


class AveragePrecision(PairScoreMetric):
    _description = (
        """
Average precision (scikit-learn's step-wise area under the precision-recall curve) of the scores. """
        + THRESHOLD_FREE_DOC
    )
    _kwargs_description = (
        THRESHOLD_FREE_ARGS_DOC
        + """Returns:
    average_precision (`float`).
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.AVERAGE_PRECISION)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1])
    {'average_precision': 0.8333333333333333}
"""
    )
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.average_precision_score.html"

    def _score(self, scores, labels, *, threshold, calibrate_for, target_precision):
        if len(numpy.unique(labels)) < 2:
            return {"average_precision": float("nan")}
        return {"average_precision": float(sklearn.metrics.average_precision_score(labels, scores))}
