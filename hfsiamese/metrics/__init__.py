"""
Metrics shipped as local `evaluate` modules: they load offline by path, and `evaluate.combine` takes them.

Pair metrics (inputs: `predictions` = similarity scores, `references` = 0/1 labels) and retrieval
metrics (inputs per query: `predictions` = retrieved ids best first, `references` = relevant ids):

    >>> import evaluate
    >>> from hfsiamese import metrics
    >>> pair = evaluate.combine([metrics.PAIR_F1, metrics.AVERAGE_PRECISION])
    >>> pair.compute(predictions=[0.9, 0.2, 0.8], references=[1, 0, 0], threshold=0.5)
    {'f1': 0.6666666666666666, 'average_precision': 1.0}

Options go to every module of a combination, so each pair module accepts (and ignores the ones
it has no use for) `threshold`, `calibrate_for` and `target_precision`; retrieval modules take `k`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import evaluate

from hfsiamese.metrics.thresholds import CALIBRATION_TARGETS, UnreachablePrecisionError, best_threshold, threshold_sweep

_HERE = Path(__file__).parent

PAIR_CLASSIFICATION = str(_HERE / "pair_classification")
"""All pair metrics at once, with threshold calibration (what the trainer and `evaluate_pairs` use)."""
PAIR_ACCURACY = str(_HERE / "pair_accuracy")
PAIR_PRECISION = str(_HERE / "pair_precision")
PAIR_RECALL = str(_HERE / "pair_recall")
PAIR_F1 = str(_HERE / "pair_f1")
AVERAGE_PRECISION = str(_HERE / "average_precision")
ROC_AUC = str(_HERE / "roc_auc")
BEST_THRESHOLD = str(_HERE / "best_threshold")
MRR_AT_K = str(_HERE / "mrr_at_k")
RECALL_AT_K = str(_HERE / "recall_at_k")
NDCG_AT_K = str(_HERE / "ndcg_at_k")

PAIR_METRICS = (PAIR_ACCURACY, PAIR_PRECISION, PAIR_RECALL, PAIR_F1, AVERAGE_PRECISION, ROC_AUC, BEST_THRESHOLD)
RETRIEVAL_METRICS = (MRR_AT_K, RECALL_AT_K, NDCG_AT_K)


@cache
def load_pair_classification() -> evaluate.EvaluationModule:
    """The pair-classification metric (accuracy/precision/recall/F1 at a threshold, AP, ROC-AUC)."""
    return evaluate.load(PAIR_CLASSIFICATION)


def pair_classification_metrics(
    scores: Any,
    labels: Any,
    *,
    threshold: float | None = None,
    calibrate_for: str = "accuracy",
    target_precision: float | None = None,
) -> dict[str, float]:
    """Compute the pair-classification metrics; calibrates the threshold when none is given."""
    return load_pair_classification().compute(
        predictions=scores,
        references=labels,
        threshold=threshold,
        calibrate_for=calibrate_for,
        target_precision=target_precision,
    )


@cache
def load_retrieval_metrics() -> evaluate.CombinedEvaluations:
    """MRR@k, recall@k and nDCG@k as one `evaluate.combine`d module."""
    return evaluate.combine(list(RETRIEVAL_METRICS))


def retrieval_metrics(retrieved: Any, relevant: Any, *, k: int | Iterable[int] = (1, 5, 10)) -> dict[str, float]:
    """MRR@k, recall@k and nDCG@k (keys like `mrr@10`) of per-query result lists against relevant ids."""
    return load_retrieval_metrics().compute(
        predictions=retrieved, references=relevant, k=list(k) if not isinstance(k, int) else k
    )


__all__ = [
    "AVERAGE_PRECISION",
    "BEST_THRESHOLD",
    "CALIBRATION_TARGETS",
    "MRR_AT_K",
    "NDCG_AT_K",
    "PAIR_ACCURACY",
    "PAIR_CLASSIFICATION",
    "PAIR_F1",
    "PAIR_METRICS",
    "PAIR_PRECISION",
    "PAIR_RECALL",
    "RECALL_AT_K",
    "RETRIEVAL_METRICS",
    "ROC_AUC",
    "UnreachablePrecisionError",
    "best_threshold",
    "load_pair_classification",
    "load_retrieval_metrics",
    "pair_classification_metrics",
    "retrieval_metrics",
    "threshold_sweep",
]
