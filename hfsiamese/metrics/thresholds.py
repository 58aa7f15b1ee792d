"""
Decisions from similarity scores: the quality of every possible cut, and the threshold search.

Shared by the pair metric modules, the trainer's calibration and the evaluation report. Every
distinct score is a candidate cut; scikit-learn's ROC and precision-recall curves give the
confusion counts at all cuts at once, so nothing loops over pairs in Python.
"""

from __future__ import annotations

import warnings
from typing import Any, NamedTuple

import numpy as np
import sklearn.exceptions
import sklearn.metrics

CALIBRATION_TARGETS: tuple[str, ...] = ("accuracy", "f1", "precision")

__all__ = [
    "CALIBRATION_TARGETS",
    "ThresholdSweep",
    "UnreachablePrecisionError",
    "best_threshold",
    "check_calibration_options",
    "check_pair_inputs",
    "decisions_at",
    "one_kind",
    "threshold_above",
    "threshold_sweep",
]


class UnreachablePrecisionError(ValueError):
    """No threshold gives the requested precision on these pairs."""


class ThresholdSweep(NamedTuple):
    """Decision quality of `score >= thresholds[i]` for every distinct score, thresholds descending."""

    thresholds: np.ndarray
    accuracy: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray


def check_pair_inputs(scores: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """Scores as float64 and labels as int64 arrays of equal length, labels 0/1, scores finite."""
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels).reshape(-1)
    if len(scores) != len(labels):
        raise ValueError(f"got {len(scores)} scores but {len(labels)} labels")
    if len(scores) == 0:
        raise ValueError("no pairs to evaluate")
    if not set(np.unique(labels).tolist()) <= {0, 1}:
        raise ValueError(f"references must be 0/1 labels, got values {sorted(np.unique(labels).tolist())[:10]}")
    if not np.isfinite(scores).all():
        raise ValueError(f"{int((~np.isfinite(scores)).sum())} score(s) are NaN or infinite")
    return scores, labels.astype(np.int64)


def check_calibration_options(calibrate_for: str, target_precision: float | None) -> None:
    """`calibrate_for` is a known target; `target_precision` in (0, 1] is given exactly when it is used."""
    if calibrate_for not in CALIBRATION_TARGETS:
        raise ValueError(f"calibrate_for must be one of {CALIBRATION_TARGETS}, got {calibrate_for!r}")
    if calibrate_for == "precision":
        if target_precision is None:
            raise ValueError("calibrate_for='precision' needs target_precision (e.g. 0.9)")
        if not 0.0 < target_precision <= 1.0:
            raise ValueError(f"target_precision must be in (0, 1], got {target_precision}")
    elif target_precision is not None:
        raise ValueError(
            f"target_precision={target_precision} is only used with calibrate_for='precision' (got {calibrate_for!r})"
        )


def decisions_at(scores: np.ndarray, threshold: float | None, metric: str) -> np.ndarray:
    """0/1 decisions `score >= threshold`; a missing threshold is an error, never a silent calibration."""
    if threshold is None:
        raise ValueError(
            f"{metric} needs threshold=...: choose one on validation pairs (the best_threshold metric, or a "
            "trained model's config.threshold), then score test pairs at it"
        )
    return (scores >= threshold).astype(np.int64)


def threshold_sweep(scores: Any, labels: Any) -> ThresholdSweep:
    """Accuracy, precision, recall and F1 of the decision at every distinct score (thresholds descending).

    Precision is 0 where nothing is called a duplicate (scikit-learn's `zero_division=0`).
    """
    scores, labels = check_pair_inputs(scores, labels)
    positives = labels.sum()
    negatives = len(labels) - positives
    # drop_intermediate=False keeps every distinct score as a cut; the first cut (+inf) is "nothing".
    with warnings.catch_warnings():  # one class only: roc_curve warns, and the rates are fixed below
        warnings.simplefilter("ignore", sklearn.exceptions.UndefinedMetricWarning)
        fpr, tpr, thresholds = sklearn.metrics.roc_curve(labels, scores, drop_intermediate=False)
    thresholds, fpr, tpr = thresholds[1:], fpr[1:], tpr[1:]
    if positives == 0:  # roc_curve warns and leaves tpr NaN
        tpr = np.zeros_like(fpr)
    if negatives == 0:
        fpr = np.zeros_like(tpr)
    true_pos = tpr * positives
    predicted_pos = true_pos + fpr * negatives
    accuracy = (true_pos + (1.0 - fpr) * negatives) / len(labels)
    precision = np.divide(true_pos, predicted_pos, out=np.zeros_like(true_pos), where=predicted_pos > 0)
    recall = tpr
    denominator = predicted_pos + positives
    f1 = np.divide(2 * true_pos, denominator, out=np.zeros_like(true_pos), where=denominator > 0)
    return ThresholdSweep(thresholds, accuracy, precision, recall, f1)


def best_threshold(
    scores: Any, labels: Any, calibrate_for: str = "accuracy", target_precision: float | None = None
) -> float:
    """
    The decision threshold for `score >= threshold` chosen on labelled pairs.

    - `"accuracy"` / `"f1"`: the cut that maximises it.
    - `"precision"`: the lowest cut whose precision is at least `target_precision`, i.e. the most
      recall that precision allows. Raises `UnreachablePrecisionError` when no cut reaches it.

    The returned threshold lies halfway between the chosen cut and the next lower score (same
    decisions on these pairs, and a margin on both sides for unseen ones). Pairs of one kind are refused: any
    threshold below (or above) every score would be "best" on them.
    """
    check_calibration_options(calibrate_for, target_precision)
    scores, labels = check_pair_inputs(scores, labels)
    kind = one_kind(labels)
    if kind is not None:  # every cut "separates" them: the best would be one below or above every score
        raise ValueError(
            f"a threshold separates duplicates from non-duplicates: these {len(labels):,} pairs are all {kind}"
        )
    sweep = threshold_sweep(scores, labels)
    if calibrate_for == "precision":
        reaching = np.flatnonzero(sweep.precision >= target_precision)
        if reaching.size == 0:
            raise UnreachablePrecisionError(
                f"no threshold reaches precision {target_precision} on these {len(labels)} pairs "
                f"({int(labels.sum())} duplicates); the highest precision at any threshold is {sweep.precision.max():.4f}"
            )
        best = int(reaching[-1])  # thresholds descend: the last one reaching the target is the lowest
    else:
        objective = sweep.accuracy if calibrate_for == "accuracy" else sweep.f1
        best = int(np.argmax(objective))
        nothing = (labels == 0).mean() if calibrate_for == "accuracy" else 0.0
        if objective[best] < nothing:
            # Calling nothing a duplicate beats every cut (only possible for accuracy).
            return threshold_above(scores)
    cut = sweep.thresholds[best]
    lower = scores[scores < cut]
    return float((cut + lower.max()) / 2.0) if lower.size else float(cut)


def one_kind(labels: Any) -> str | None:
    """`"duplicates"` or `"non-duplicates"` when 0/1 `labels` hold only that kind (nothing to separate), else None."""
    values = np.unique(np.asarray(labels))
    return None if len(values) != 1 else ("duplicates" if values[0] == 1 else "non-duplicates")


def threshold_above(scores: np.ndarray) -> float:
    """A threshold that calls none of `scores` a duplicate."""
    return float(np.nextafter(np.max(scores), np.inf))
