"""Pair-classification metrics for similarity scores: decisions at a threshold and ranking quality.

A local `evaluate` module, shipped inside hfsiamese so that it loads offline:
`evaluate.load(hfsiamese.metrics.PAIR_CLASSIFICATION)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import numpy
import sklearn.metrics

from hfsiamese.metrics.base import PairScoreMetric
from hfsiamese.metrics.thresholds import best_threshold


class PairClassification(PairScoreMetric):
    _description = """
Scores each pair by a similarity (higher = more likely duplicate) and reports:
accuracy, precision, recall and F1 of the decision `score >= threshold`; average precision and
ROC-AUC of the scores (threshold-free); and the threshold itself. Without a `threshold`, one is
chosen on these very pairs and reported: the one that maximises `calibrate_for` ("accuracy" or
"f1"), or with calibrate_for="precision" the lowest one whose precision reaches
`target_precision` (the most recall at that precision; an error when none reaches it). So
calibrate on validation data and pass that threshold when scoring test data.
"""
    _kwargs_description = """
Args:
    predictions (`list` of `float`): similarity score of each pair.
    references (`list` of `int`): 1 for duplicates, 0 otherwise.
    threshold (`float`, optional): decision threshold; calibrated when omitted.
    calibrate_for (`str`, optional, defaults to "accuracy"): what the calibration optimises:
        "accuracy", "f1" or "precision".
    target_precision (`float`, optional): with calibrate_for="precision", the precision to reach, in (0, 1].
Returns:
    accuracy, precision, recall, f1, average_precision, roc_auc, threshold, num_pairs.
Examples:
    >>> metric = evaluate.load("hfsiamese/metrics/pair_classification")
    >>> metric.compute(predictions=[0.9, 0.2, 0.8], references=[1, 0, 0], threshold=0.5)["accuracy"]
    0.6666666666666666
"""
    _reference_url = "https://scikit-learn.org/stable/modules/model_evaluation.html"
    _check_calibration_first = True

    def _score(self, scores, labels, *, threshold, calibrate_for, target_precision):
        if threshold is None:
            threshold = best_threshold(scores, labels, calibrate_for, target_precision)
        decisions = (scores >= threshold).astype(numpy.int64)
        both_classes = len(numpy.unique(labels)) == 2
        return {
            "accuracy": float(sklearn.metrics.accuracy_score(labels, decisions)),
            "precision": float(sklearn.metrics.precision_score(labels, decisions, zero_division=0)),
            "recall": float(sklearn.metrics.recall_score(labels, decisions, zero_division=0)),
            "f1": float(sklearn.metrics.f1_score(labels, decisions, zero_division=0)),
            "average_precision": float(sklearn.metrics.average_precision_score(labels, scores))
            if both_classes
            else float("nan"),
            "roc_auc": float(sklearn.metrics.roc_auc_score(labels, scores)) if both_classes else float("nan"),
            "threshold": float(threshold),
            "num_pairs": len(labels),
        }
