"""Metrics shipped as local `evaluate` modules: they load offline, and `evaluate.combine` takes them."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import evaluate

PAIR_CLASSIFICATION = str(Path(__file__).parent / "pair_classification")


@lru_cache(maxsize=None)
def load_pair_classification() -> evaluate.EvaluationModule:
    """The pair-classification metric (accuracy/precision/recall/F1 at a threshold, AP, ROC-AUC)."""
    return evaluate.load(PAIR_CLASSIFICATION)


def pair_classification_metrics(
    scores: Any, labels: Any, *, threshold: float | None = None, calibrate_for: str = "accuracy"
) -> dict[str, float]:
    """Compute the pair-classification metrics; calibrates the threshold when none is given."""
    return load_pair_classification().compute(
        predictions=scores, references=labels, threshold=threshold, calibrate_for=calibrate_for
    )


__all__ = ["PAIR_CLASSIFICATION", "load_pair_classification", "pair_classification_metrics"]
