"""Threshold calibration during training: tuned on the validation pairs, applied unchanged to any other set."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import datasets
import numpy as np
from transformers import EvalPrediction
from transformers.utils import logging

from hfsiamese.data.collator import LABEL_COLUMNS
from hfsiamese.metrics import pair_classification_metrics
from hfsiamese.metrics.thresholds import UnreachablePrecisionError, one_kind, threshold_above

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

    def check_before_training(self, config: Any | None, eval_dataset: Any) -> None:
        """
        Refuse, before any step, a run whose evaluations could only fail or store a threshold that means nothing:
        calibrating on validation pairs of one class (every pair is on one side of any cut, so the "best" threshold is
        just below the lowest duplicate's score, with accuracy 1.0), or scoring at the threshold of a model that has
        none (`calibrate_threshold=False` on a new model: the first evaluation would fail, after the training).
        """
        if eval_dataset is None:
            return  # nothing is evaluated unless the caller passes a set later
        if not self.args.calibrate_threshold:
            if config is not None and hasattr(config, "threshold") and config.threshold is None:
                raise ValueError(
                    "calibrate_threshold=False scores the validation pairs at the model's config.threshold, and this "
                    "model has none (never calibrated): calibrate it on the validation pairs (the default), or start from "
                    "a calibrated checkpoint"
                )
            return
        sets = eval_dataset.values() if isinstance(eval_dataset, Mapping) else [eval_dataset]
        labels = [_label_column(part) for part in sets]
        if any(column is None for column in labels):
            return  # not a labelled map-style set: the evaluation says what it lacks
        together = np.concatenate(labels)
        kind = one_kind(together)
        if kind is not None:
            count = len(together)
            raise ValueError(
                f"the validation pairs are all {kind} ({count:,} pairs): a threshold calibrated on them separates "
                "nothing; give validation pairs of both kinds (--validation_file), or calibrate_threshold=False on a "
                "model whose config.threshold is set"
            )

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


def _label_column(dataset: Any) -> Any | None:
    """The 0/1 labels of a map-style evaluation set (`labels`, else `label`), None when it has none."""
    names = getattr(dataset, "column_names", None)
    if not isinstance(dataset, datasets.Dataset) or not names:
        return None
    name = next((name for name in LABEL_COLUMNS if name in names), None)
    return None if name is None else dataset.with_format("arrow")[name].to_numpy()  # after a select too


__all__ = ["ThresholdCalibration"]
