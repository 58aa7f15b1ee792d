"""Threshold calibration during training: tuned on the validation pairs, applied unchanged to any other set."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from transformers import EvalPrediction
from transformers.utils import logging

from hfsiamese.metrics import pair_classification_metrics
from hfsiamese.metrics.thresholds import UnreachablePrecisionError, threshold_above

logger = logging.get_logger(__name__)

# The metrics that need no threshold: all a cut size reports when none was calibrated for it in this run.
THRESHOLD_FREE_METRICS = ("average_precision", "roc_auc", "num_pairs")


class ThresholdCalibration:
    """
    The trainer's `compute_metrics`: accuracy/precision/recall/F1 at a threshold, average precision
    and ROC-AUC. On the validation set (`metric_key_prefix="eval"`) with `calibrate_threshold` the
    threshold is chosen for `calibrate_for` and stored in `config.threshold`; any other set is
    scored at the stored threshold, so a test set never tunes the threshold it is judged by.

    With `truncated_dims` (a Matryoshka loss's smaller sizes) the predictions hold one column per
    size, the full one first: its metrics are the ones above, and each cut size ``d`` adds the same
    metrics as ``dim{d}_...``, at a threshold of its own calibrated on the validation set and kept
    here (the config stores the full size's only); where none was calibrated in this run
    (`calibrate_threshold=False`), a cut size reports only the metrics that need no threshold.
    """

    def __init__(self, args: Any, model_config: Callable[[], Any], truncated_dims: tuple[int, ...] = ()) -> None:
        self.args = args
        self.model_config = model_config
        self.calibrating = False
        self.truncated_dims = truncated_dims
        self.truncated_thresholds: dict[int, float] = {}

    @contextmanager
    def evaluating(self, metric_key_prefix: str) -> Iterator[None]:
        """Around one evaluation: calibrate during it if it is the validation set's."""
        self.calibrating = self.calibrates(metric_key_prefix)
        try:
            yield
        finally:
            self.calibrating = False

    def calibrates(self, metric_key_prefix: str) -> bool:
        return self.args.calibrate_threshold and metric_key_prefix == "eval"

    def __call__(self, eval_pred: EvalPrediction) -> dict[str, float]:
        if eval_pred.label_ids is None:
            raise ValueError("evaluation pairs need a `labels` (or `label`) column of 0/1")
        scores = np.asarray(eval_pred.predictions, dtype=np.float64).reshape(-1)
        labels = np.asarray(eval_pred.label_ids).reshape(-1)
        if self.truncated_dims:
            scores = scores.reshape(len(labels), 1 + len(self.truncated_dims))
            metrics = self._metrics(scores[:, 0], labels, None if self.calibrating else self._stored_threshold())
            for dim, column in zip(self.truncated_dims, scores[:, 1:].T, strict=True):
                metrics.update(
                    {f"dim{dim}_{name}": value for name, value in self._truncated_metrics(dim, column, labels).items()}
                )
            return metrics
        return self._metrics(scores, labels, None if self.calibrating else self._stored_threshold())

    def _metrics(self, scores: np.ndarray, labels: np.ndarray, threshold: float | None) -> dict[str, float]:
        options = dict(calibrate_for=self.args.calibrate_for, target_precision=self.args.target_precision)
        try:
            return pair_classification_metrics(scores, labels, threshold=threshold, **options)
        except UnreachablePrecisionError as err:
            # A still-weak model at an early evaluation must not end the run. Keep the precision
            # promise instead: call no evaluated pair a duplicate (recall 0 shows it), and say so.
            logger.warning(f"{err}: storing a threshold above every score until an evaluation reaches the target")
            return pair_classification_metrics(scores, labels, threshold=threshold_above(scores), **options)

    def _truncated_metrics(self, dim: int, scores: np.ndarray, labels: np.ndarray) -> dict[str, float]:
        """One cut size's metrics: calibrated here on the validation set, else at the threshold calibrated there."""
        if self.calibrating:
            metrics = self._metrics(scores, labels, None)
            self.truncated_thresholds[dim] = metrics["threshold"]
            return metrics
        if dim in self.truncated_thresholds:
            return self._metrics(scores, labels, self.truncated_thresholds[dim])
        metrics = self._metrics(scores, labels, threshold_above(scores))
        return {name: metrics[name] for name in THRESHOLD_FREE_METRICS}

    def store(self, metrics: dict[str, float], metric_key_prefix: str) -> None:
        """After a calibrating evaluation, keep its threshold in the model's config."""
        threshold = metrics.get(f"{metric_key_prefix}_threshold")
        if self.calibrates(metric_key_prefix) and threshold is not None:
            self.model_config().threshold = float(threshold)

    def _stored_threshold(self) -> float:
        threshold = self.model_config().threshold
        if threshold is None:
            raise ValueError("calibrate_threshold=False needs a model whose config.threshold is set")
        return threshold


__all__ = ["ThresholdCalibration"]
