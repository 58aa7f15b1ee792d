"""Pair-classification metrics for similarity scores: decisions at a threshold and ranking quality.

A local `evaluate` module, shipped inside hfsiamese so that it loads offline:
`evaluate.load(hfsiamese.metrics.PAIR_CLASSIFICATION)`.
"""

import datasets
import evaluate
import numpy
import sklearn.metrics

_DESCRIPTION = """
Scores each pair by a similarity (higher = more likely duplicate) and reports:
accuracy, precision, recall and F1 of the decision `score >= threshold`; average precision and
ROC-AUC of the scores (threshold-free); and the threshold itself. Without a `threshold`, the one
that maximises `calibrate_for` ("accuracy" or "f1") on these very pairs is chosen and reported, so
calibrate on validation data and pass that threshold when scoring test data.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float`): similarity score of each pair.
    references (`list` of `int`): 1 for duplicates, 0 otherwise.
    threshold (`float`, optional): decision threshold; calibrated when omitted.
    calibrate_for (`str`, optional, defaults to "accuracy"): what the calibration maximises.
Returns:
    accuracy, precision, recall, f1, average_precision, roc_auc, threshold, num_pairs.
Examples:
    >>> metric = evaluate.load("hfsiamese/metrics/pair_classification")
    >>> metric.compute(predictions=[0.9, 0.2, 0.8], references=[1, 0, 0], threshold=0.5)["accuracy"]
    0.6666666666666666
"""

_CITATION = """
@article{scikit-learn,
  title={Scikit-learn: Machine Learning in {P}ython},
  author={Pedregosa, F. and others},
  journal={Journal of Machine Learning Research},
  volume={12},
  pages={2825--2830},
  year={2011}
}
"""

CALIBRATION_TARGETS = ("accuracy", "f1")


def best_threshold(scores, labels, calibrate_for="accuracy"):
    """The threshold maximising accuracy or F1 of `score >= threshold`.

    Every distinct score is a candidate cut (taken from scikit-learn's ROC / PR curves, so no
    Python loop over pairs); the returned threshold lies halfway between the best cut and the next
    lower score, which generalises better than sitting exactly on a training score.
    """
    if calibrate_for not in CALIBRATION_TARGETS:
        raise ValueError(f"calibrate_for must be one of {CALIBRATION_TARGETS}, got {calibrate_for!r}")
    scores = numpy.asarray(scores, dtype=numpy.float64)
    labels = numpy.asarray(labels, dtype=numpy.int64)
    positives = labels.sum()
    negatives = len(labels) - positives
    fpr, tpr, thresholds = sklearn.metrics.roc_curve(labels, scores, drop_intermediate=False)
    if calibrate_for == "accuracy":
        objective = (tpr * positives + (1.0 - fpr) * negatives) / len(labels)
    else:
        true_pos = tpr * positives
        predicted_pos = true_pos + fpr * negatives
        objective = numpy.divide(2 * true_pos, predicted_pos + positives, out=numpy.zeros_like(true_pos), where=(predicted_pos + positives) > 0)
    best = int(numpy.argmax(objective))
    cut = thresholds[best]
    if not numpy.isfinite(cut):
        # sklearn's first candidate (+inf) means "call nothing a duplicate".
        return float(min(1.0, scores.max() + 1e-6))
    lower = scores[scores < cut]
    return float((cut + lower.max()) / 2.0) if lower.size else float(cut)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class PairClassification(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("float64"), "references": datasets.Value("int64")}
            ),
            reference_urls=["https://scikit-learn.org/stable/modules/model_evaluation.html"],
        )

    def _compute(self, predictions, references, threshold=None, calibrate_for="accuracy"):
        scores = numpy.asarray(predictions, dtype=numpy.float64)
        labels = numpy.asarray(references, dtype=numpy.int64)
        if len(scores) == 0:
            raise ValueError("no pairs to evaluate")
        if not set(numpy.unique(labels).tolist()) <= {0, 1}:
            raise ValueError("references must be 0/1 labels")
        if threshold is None:
            threshold = best_threshold(scores, labels, calibrate_for)
        decisions = (scores >= threshold).astype(numpy.int64)
        both_classes = len(numpy.unique(labels)) == 2
        return {
            "accuracy": float(sklearn.metrics.accuracy_score(labels, decisions)),
            "precision": float(sklearn.metrics.precision_score(labels, decisions, zero_division=0)),
            "recall": float(sklearn.metrics.recall_score(labels, decisions, zero_division=0)),
            "f1": float(sklearn.metrics.f1_score(labels, decisions, zero_division=0)),
            "average_precision": float(sklearn.metrics.average_precision_score(labels, scores)) if both_classes else float("nan"),
            "roc_auc": float(sklearn.metrics.roc_auc_score(labels, scores)) if both_classes else float("nan"),
            "threshold": float(threshold),
            "num_pairs": int(len(labels)),
        }
