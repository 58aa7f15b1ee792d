"""Best decision threshold for similarity scores: maximal accuracy, maximal F1, or a target precision.

A local `evaluate` module shipped inside hfsiamese (loads offline): `evaluate.load(hfsiamese.metrics.BEST_THRESHOLD)`.
"""

# One import per line: evaluate's loader for local modules reads imports line by line.
import sklearn.metrics

from hfsiamese.metrics.base import PAIR_ARGS_DOC, PairScoreMetric
from hfsiamese.metrics.thresholds import best_threshold


class BestThreshold(PairScoreMetric):
    _description = """
Searches every distinct score for the cut `score >= threshold` that is best on these pairs:
"accuracy" and "f1" maximise that metric; "precision" takes the lowest cut whose precision is at
least `target_precision`, which is the cut with the most recall at that precision (an error when
no cut reaches it). Reports the threshold, halfway between the chosen cut and the next lower score,
and the metric it optimised. Calibrate on validation pairs, then score test pairs at the threshold. Pairs of
one kind (all duplicates, or none) are refused: any cut below or above every score would be "best" on them.
"""
    _kwargs_description = (
        PAIR_ARGS_DOC
        + """    calibrate_for (`str`, defaults to "accuracy"): "accuracy", "f1" or "precision".
    target_precision (`float`, optional): the precision to reach, in (0, 1]; needed by
        calibrate_for="precision" and refused otherwise.
    threshold: accepted and ignored (this metric chooses it), so that `evaluate.combine` can pass
        one set of options to every pair metric.
Returns:
    best_threshold (`float`), and the optimised figure at it: best_accuracy, best_f1, or for
    "precision" best_recall (the most recall at that precision) with precision_at_best (the
    precision actually reached).
Examples:
    >>> metric = evaluate.load(hfsiamese.metrics.BEST_THRESHOLD)
    >>> metric.compute(predictions=[0.9, 0.2, 0.8, 0.4], references=[1, 0, 0, 1], calibrate_for="f1")
    {'best_threshold': 0.30000000000000004, 'best_f1': 0.8}
"""
    )
    _reference_url = "https://scikit-learn.org/stable/modules/generated/sklearn.metrics.roc_curve.html"

    def _score(self, scores, labels, *, threshold, calibrate_for, target_precision):
        chosen = best_threshold(scores, labels, calibrate_for, target_precision)
        decisions = (scores >= chosen).astype(labels.dtype)
        if calibrate_for == "accuracy":
            return {"best_threshold": chosen, "best_accuracy": float(sklearn.metrics.accuracy_score(labels, decisions))}
        if calibrate_for == "f1":
            return {
                "best_threshold": chosen,
                "best_f1": float(sklearn.metrics.f1_score(labels, decisions, zero_division=0)),
            }
        return {
            "best_threshold": chosen,
            "best_recall": float(sklearn.metrics.recall_score(labels, decisions, zero_division=0)),
            "precision_at_best": float(sklearn.metrics.precision_score(labels, decisions, zero_division=0)),
        }
