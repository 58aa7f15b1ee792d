"""The middle of a training run, the same for both families and both stages of distillation: train, evaluate, save.

The order matters: evaluating on the validation pairs calibrates `config.threshold`, which the save then stores
with the weights; a test set is scored after it, at that threshold, never re-fitted on itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import datasets

from hfsiamese.base.trainer import PairTrainer
from hfsiamese.training.run_end import save_run


def train_and_evaluate(
    trainer: PairTrainer,
    *,
    resume_from: str | None = None,
    test_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None = None,
) -> dict[str, float]:
    """Train (from the checkpoint `resume_from`, if any), then evaluate on the validation pairs (calibrating the
    threshold) and on `test_dataset` at that threshold: the training metrics with `train_samples` (the training
    rows), the `eval_*` and the `test_*` metrics."""
    metrics = dict(trainer.train(resume_from_checkpoint=resume_from).metrics)
    metrics["train_samples"] = len(trainer.train_dataset)  # type: ignore[arg-type]  # a datasets.Dataset
    metrics.update(trainer.evaluate())
    if test_dataset is not None:
        metrics.update(trainer.evaluate(test_dataset, metric_key_prefix="test"))
    return metrics


def train_evaluate_save(
    trainer: PairTrainer,
    *,
    card: Mapping[str, Any],
    resume_from: str | None = None,
    test_dataset: datasets.Dataset | dict[str, datasets.Dataset] | None = None,
    earlier_metrics: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """
    `train_and_evaluate`, then save the run (`save_run`: the model with its threshold, `all_results.json`, the
    state, the model card from `card`). `earlier_metrics` (distillation's stage 1 and teacher) come first in the
    run's metrics, which are returned.
    """
    metrics = dict(earlier_metrics or {})
    metrics.update(train_and_evaluate(trainer, resume_from=resume_from, test_dataset=test_dataset))
    save_run(trainer, metrics, card=card)
    return metrics


__all__ = ["train_and_evaluate", "train_evaluate_save"]
