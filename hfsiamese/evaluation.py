"""Scoring labelled pair files with a trained model: the metrics `recipes/evaluate.py` prints."""

from __future__ import annotations

import warnings
from typing import Any

import datasets
import numpy as np

from .metrics import pair_classification_metrics


def evaluate_pairs(
    model: Any,
    dataset: datasets.Dataset,
    tokenizer: Any | None = None,
    *,
    threshold: float | None = None,
    batch_size: int = 256,
    max_length: int | None = None,
    show_progress_bar: bool = False,
) -> dict[str, float]:
    """
    Score every pair of `dataset` (`question1`, `question2`, `label`) and compute accuracy,
    precision, recall and F1 at `threshold` (default: the model's calibrated `config.threshold`),
    average precision and ROC-AUC.

    A model without a calibrated threshold gets one fitted on these very pairs, with a warning:
    that figure is optimistic and must not be reported as a test result.
    """
    missing = [c for c in ("question1", "question2", "label") if c not in dataset.column_names]
    if missing:
        raise ValueError(f"pairs lack columns {missing} (have {dataset.column_names}); load them with hfsiamese.data.load_pairs")
    if threshold is None:
        threshold = model.config.threshold
        if threshold is None:
            warnings.warn(
                "the model has no calibrated threshold (config.threshold): calibrating on the evaluated pairs "
                "themselves, so accuracy/F1 are optimistic",
                UserWarning,
                stacklevel=2,
            )
    encode = dict(batch_size=batch_size, max_length=max_length, show_progress_bar=show_progress_bar)
    scores = model.score_pairs(list(dataset["question1"]), list(dataset["question2"]), tokenizer, **encode)
    labels = np.asarray(dataset["label"], dtype=np.int64)
    return pair_classification_metrics(scores.numpy(), labels, threshold=threshold)
