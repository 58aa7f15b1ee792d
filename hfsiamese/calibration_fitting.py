"""
Fitting a model's decision to a new domain from a few labelled pairs of it (`model.calibrate`).

Three methods, all on the model's pair scores (cosine, or a head's P(duplicate): see `scoring`):

- `"threshold"`: the threshold search the trainer uses on validation (`metrics.thresholds.best_threshold`,
  for accuracy, F1 or a target precision), nothing else;
- `"platt"`: scikit-learn's `LogisticRegression` of the label on the score (P = sigmoid(a·s + b));
- `"isotonic"`: scikit-learn's `IsotonicRegression` (a non-decreasing step-wise map, linearly
  interpolated between its breakpoints).

The two probability methods store their map in `config.calibration` as plain numbers, applied by
`hfsiamese.models.siamese.calibration` (remote code: no scikit-learn needed to use a calibrated checkpoint). Their
threshold for `calibrate_for="accuracy"` is the score where the calibrated P(duplicate) crosses 0.5 (the
decision with the highest expected accuracy under that map; the smooth Platt curve makes it less
noisy than the best cut of ~100 pairs); for F1 and precision it is the threshold search's.

This module is not remote code: it imports scikit-learn and the library's threshold search, which
a downloaded checkpoint does not carry; `SiameseModel.calibrate` imports it when called.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import scipy.stats
import sklearn.isotonic
import sklearn.linear_model

from hfsiamese.metrics import pair_classification_metrics
from hfsiamese.metrics.reliability import calibration_metrics
from hfsiamese.metrics.thresholds import best_threshold, check_calibration_options, check_pair_inputs, one_kind
from hfsiamese.models.siamese.score_calibrator import (
    CALIBRATION_METHODS,
    PROBABILITY_METHODS,
    ScoreCalibrator,
    check_calibration,
)
from hfsiamese.models.siamese.scoring import score_unit
from hfsiamese.utils.deprecation import warn_deprecated

logger = logging.getLogger(__name__)

__all__ = ["CalibrationReport", "calibrate_model", "fit_calibrator", "fit_threshold"]

# Platt's logistic regression: an L2 penalty this weak only keeps the slope finite on pairs the score
# separates perfectly (frequent with ~50 pairs); cosine scores span [-1, 1], so slopes stay far below it.
PLATT_C = 100.0
INTERVAL_CONFIDENCE = 0.9
MIN_PAIRS_PER_CLASS = 10
# A target precision is "vouched for" when its interval allows at most this multiple of the error rate asked.
MAX_ERROR_RATE_RATIO = 1.5


@dataclass
class CalibrationReport:
    """What `model.calibrate` chose and how far to trust it."""

    method: str
    target: str
    target_precision: float | None
    num_pairs: int
    num_duplicates: int
    threshold: float
    threshold_interval: tuple[float, float]
    """Bootstrap interval of the threshold (`interval_confidence`) from resampling the pairs given."""
    interval_confidence: float
    num_bootstrap: int
    metrics: dict[str, float]
    """Metrics on the calibration pairs themselves, at `threshold` (in-sample: optimistic)."""
    calibration: dict[str, Any]
    """What was stored in `config.calibration`."""
    data_name: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values (the recipe prints this)."""
        out = asdict(self)
        # No interval (every resample failed) is null, not NaN: the recipe prints strict JSON.
        out["threshold_interval"] = [None if math.isnan(v) else v for v in self.threshold_interval]
        return out


def fit_calibrator(scores: Any, labels: Any, method: str) -> ScoreCalibrator:
    """A Platt or isotonic map from score to P(duplicate), fitted with scikit-learn."""
    scores, labels = check_pair_inputs(scores, labels)
    if method == "platt":
        regression = sklearn.linear_model.LogisticRegression(C=PLATT_C).fit(scores[:, None], labels)
        coef, intercept = float(regression.coef_[0, 0]), float(regression.intercept_[0])
        if coef <= 0:
            raise ValueError(
                f"on these {len(labels)} pairs a higher score does not mean a likelier duplicate (Platt slope {coef:.4g}): "
                "the model does not rank this domain's pairs; calibration cannot fix that"
            )
        return ScoreCalibrator("platt", coef=coef, intercept=intercept)
    if method == "isotonic":
        regression = sklearn.isotonic.IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        regression.fit(scores, labels)
        return ScoreCalibrator(
            "isotonic",
            scores=tuple(regression.X_thresholds_.tolist()),
            probabilities=tuple(regression.y_thresholds_.tolist()),
        )
    raise ValueError(f"a probability calibrator's method is one of {PROBABILITY_METHODS}, got {method!r}")


def fit_threshold(
    scores: np.ndarray,
    labels: np.ndarray,
    method: str,
    target: str = "accuracy",
    target_precision: float | None = None,
) -> tuple[float, ScoreCalibrator | None]:
    """The decision threshold (and, for the probability methods, the map) fitted on these pairs."""
    calibrator = fit_calibrator(scores, labels, method) if method in PROBABILITY_METHODS else None
    if calibrator is not None and target == "accuracy":
        return calibrator.score_threshold(0.5), calibrator
    return best_threshold(scores, labels, calibrate_for=target, target_precision=target_precision), calibrator


def bootstrap_thresholds(
    scores: np.ndarray,
    labels: np.ndarray,
    method: str,
    target: str,
    target_precision: float | None,
    *,
    num_bootstrap: int,
    seed: int,
) -> tuple[np.ndarray, int]:
    """Thresholds refitted on `num_bootstrap` resamples (with replacement) of the pairs, and how many resamples gave none."""
    rng = np.random.default_rng(seed)
    found, failed = [], 0
    for _ in range(num_bootstrap):
        rows = rng.integers(0, len(labels), len(labels))
        sample_labels = labels[rows]
        if sample_labels.min() == sample_labels.max():
            failed += 1
            continue
        try:
            threshold, _ = fit_threshold(scores[rows], sample_labels, method, target, target_precision)
        except ValueError:  # an unreachable precision, or a resample that no longer ranks duplicates higher
            failed += 1
            continue
        found.append(threshold)
    return np.asarray(found, dtype=np.float64), failed


def calibrate_model(
    model: Any,
    pairs: Any,
    labels: Sequence[int] | None = None,
    *,
    method: str = "threshold",
    calibrate_for: str = "accuracy",
    target_precision: float | None = None,
    tokenizer: Any | None = None,
    data_name: str | None = None,
    num_bootstrap: int = 1000,
    seed: int = 0,
    batch_size: int = 256,
    max_length: int | None = None,
    target: str | None = None,
) -> CalibrationReport:
    """
    Score `pairs` with `model`, fit the decision (`method`, for `calibrate_for`) on them, store it in
    `model.config` (`threshold`, and `calibration`) and report it (see `SiameseModel.calibrate`).
    A threshold-only calibration removes a probability map stored before: it was fitted elsewhere.
    `target`: the old name of `calibrate_for` (kept for one release, with a FutureWarning).
    """
    if target is not None:
        warn_deprecated("keyword", "calibrate_model(target=...)")
        calibrate_for = target
    target = calibrate_for  # the report's name for it
    if method not in CALIBRATION_METHODS:
        raise ValueError(f"method must be one of {CALIBRATION_METHODS}, got {method!r}")
    check_calibration_options(target, target_precision)
    if num_bootstrap < 1:
        raise ValueError(f"num_bootstrap must be at least 1, got {num_bootstrap}")
    texts_a, texts_b, labels = _pairs_and_labels(pairs, labels)
    encode = {"batch_size": batch_size, "max_length": max_length}
    scores = model.score_pairs(texts_a, texts_b, tokenizer, **encode).double().numpy()
    scores, labels = check_pair_inputs(scores, labels)
    kind = one_kind(labels)
    if kind is not None:
        raise ValueError(
            f"calibration needs duplicates and non-duplicates; the {len(labels)} pairs given are all {kind}"
        )

    threshold, calibrator = fit_threshold(scores, labels, method, target, target_precision)
    notes = []
    low = 0.0 if score_unit(model.config) == "probability" else -1.0  # the range of the model's pair scores
    if not low <= threshold <= 1.0:  # a Platt/isotonic 0.5 crossing beyond every possible score
        clipped = float(np.clip(threshold, low, 1.0))
        notes.append(
            f"P(duplicate) = 0.5 falls at score {threshold:.4g}, beyond the score range: threshold set to {clipped}"
        )
        threshold = clipped
    resampled, failed = bootstrap_thresholds(
        scores, labels, method, target, target_precision, num_bootstrap=num_bootstrap, seed=seed
    )
    tail = (1.0 - INTERVAL_CONFIDENCE) / 2.0 * 100.0
    finite = resampled[np.isfinite(resampled)]
    interval = (
        tuple(float(v) for v in np.percentile(finite, [tail, 100.0 - tail])) if finite.size else (math.nan, math.nan)
    )
    metrics = pair_classification_metrics(scores, labels, threshold=threshold)
    if calibrator is not None:
        metrics.update(calibration_metrics(calibrator.probability(scores).numpy(), labels))
    notes += _small_sample_warnings(scores, labels, threshold, target, target_precision, failed, num_bootstrap)

    stored = {
        **({} if calibrator is None else calibrator.to_dict()),
        "method": method,
        "target": target,
        "target_precision": target_precision,
        "num_pairs": len(labels),
        "data": data_name,
    }
    model.config.threshold = float(threshold)
    model.config.calibration = check_calibration(stored)
    for note in notes:
        logger.warning(note)
    return CalibrationReport(
        method=method,
        target=target,
        target_precision=target_precision,
        num_pairs=len(labels),
        num_duplicates=int(labels.sum()),
        threshold=float(threshold),
        threshold_interval=interval,
        interval_confidence=INTERVAL_CONFIDENCE,
        num_bootstrap=num_bootstrap,
        metrics=metrics,
        calibration=stored,
        data_name=data_name,
        warnings=notes,
    )


def _small_sample_warnings(
    scores: np.ndarray,
    labels: np.ndarray,
    threshold: float,
    target: str,
    target_precision: float | None,
    failed: int,
    num_bootstrap: int,
) -> list[str]:
    """Why the threshold may not hold beyond these pairs: too few of a class, or too few calls for the precision asked."""
    notes = []
    duplicates, others = int(labels.sum()), int((labels == 0).sum())
    if min(duplicates, others) < MIN_PAIRS_PER_CLASS:
        notes.append(
            f"only {duplicates} duplicates and {others} non-duplicates: with fewer than {MIN_PAIRS_PER_CLASS} of "
            "either the threshold is a guess; label more pairs"
        )
    if failed:
        notes.append(
            f"{failed} of {num_bootstrap} bootstrap resamples gave no threshold; the interval is from the rest"
        )
    if target == "precision":
        called = scores >= threshold
        hits = int(labels[called].sum())
        if called.sum() == 0:
            notes.append(f"no pair is called a duplicate at precision {target_precision}: recall is 0")
        else:
            # The chosen cut just reaches the target on these pairs; too few pairs when the precision's
            # Clopper-Pearson interval allows an error rate (1 - precision) over 1.5 times the one asked.
            low = scipy.stats.binomtest(hits, int(called.sum())).proportion_ci(INTERVAL_CONFIDENCE, method="exact").low
            if 1.0 - low > MAX_ERROR_RATE_RATIO * (1.0 - target_precision):
                notes.append(
                    f"{len(labels)} pairs are too few to vouch for precision {target_precision}: the {int(called.sum())} "
                    f"pairs called duplicates have precision {hits / called.sum():.3f}, whose {INTERVAL_CONFIDENCE:.0%} "
                    f"interval reaches down to {low:.3f} (an error rate of {1 - low:.3f} where {1 - target_precision:.3f} "
                    "was asked); label more pairs"
                )
    return notes


def _pairs_and_labels(pairs: Any, labels: Sequence[int] | None) -> tuple[list[str], list[str], np.ndarray]:
    """Texts of both sides and 0/1 labels, from `(a, b)` tuples plus labels or a Dataset with a `label` column."""
    if hasattr(pairs, "column_names"):  # a datasets.Dataset from load_pairs
        missing = [name for name in ("question1", "question2") if name not in pairs.column_names]
        if missing:
            raise ValueError(f"calibration pairs lack columns {missing} (have {pairs.column_names})")
        if labels is None:
            if "label" not in pairs.column_names:
                raise ValueError("calibration pairs need labels: a `label` column, or labels=...")
            labels = pairs["label"]
        texts_a, texts_b = list(pairs["question1"]), list(pairs["question2"])
    else:
        pairs = list(pairs)
        bad = next(
            (i for i, pair in enumerate(pairs) if not (isinstance(pair, (tuple, list)) and len(pair) == 2)), None
        )
        if bad is not None:
            raise ValueError(f"pairs must be (text_a, text_b) tuples; item {bad} is {pairs[bad]!r:.80}")
        if labels is None:
            raise ValueError("pass labels=... (one 0/1 label per pair)")
        texts_a, texts_b = [a for a, _ in pairs], [b for _, b in pairs]
    labels = np.asarray(list(labels))
    if len(labels) != len(texts_a):
        raise ValueError(f"got {len(texts_a)} pairs but {len(labels)} labels")
    return texts_a, texts_b, labels
