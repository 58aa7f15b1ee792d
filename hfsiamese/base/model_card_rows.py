"""What both families' model cards show alike: the metric table's rows, the Hub `model-index` of the results, and
the base model named only when it is a Hub id.

A bi-encoder's card (`hfsiamese.bi_encoder.model_card`) and a cross-encoder's (`hfsiamese.cross_encoder.model_card`)
describe different models but report one evaluation (`PairTrainer`'s metrics), so its rows are written once, here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from huggingface_hub import EvalResult
from huggingface_hub.utils import HFValidationError, validate_repo_id

# (metric key, model-index metric type, pretty name), in the order of the card's table.
METRICS = (
    ("average_precision", "average_precision", "Average precision"),
    ("roc_auc", "roc_auc", "ROC-AUC"),
    ("accuracy", "accuracy", "Accuracy at the calibrated threshold"),
    ("f1", "f1", "F1 at the calibrated threshold"),
    ("precision", "precision", "Precision at the calibrated threshold"),
    ("recall", "recall", "Recall at the calibrated threshold"),
)
# Split prefixes of the Trainer's metrics, and the split name the model-index records.
SPLITS = (("eval", "validation"), ("test", "test"))


def hub_model_id(name_or_path: str | os.PathLike | None) -> str | None:
    """`name_or_path` if it names a Hub repository rather than a local folder (only those make a `base_model`)."""
    if not name_or_path or os.path.exists(name_or_path):
        return None
    try:
        validate_repo_id(str(name_or_path))
    except HFValidationError:
        return None
    return str(name_or_path)


def eval_results(
    metrics: Mapping[str, float], *, dataset_type: str, dataset_name: str, dataset_config: str | None = None
) -> list[EvalResult]:
    """The `model-index` entries of the validation (`eval_*`) and test (`test_*`) metrics found in `metrics`."""
    results = []
    for prefix, split in SPLITS:
        for key, metric_type, pretty in METRICS:
            value = metrics.get(f"{prefix}_{key}")
            if value is None:
                continue
            results.append(
                EvalResult(
                    task_type="text-classification",
                    task_name="Duplicate question detection",
                    dataset_type=dataset_type,
                    dataset_name=dataset_name,
                    dataset_config=dataset_config,
                    dataset_split=split,
                    metric_type=metric_type,
                    metric_name=f"{pretty} ({split})",
                    metric_value=round(float(value), 4),
                )
            )
    return results


def metrics_from_log_history(log_history: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The latest value of every logged metric (the final evaluation last): what a run ended with."""
    metrics: dict[str, float] = {}
    for entry in log_history:
        metrics.update({k: v for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return metrics


def metric_rows(metrics: Mapping[str, float], dataset_names: Sequence[str] = ()) -> list[dict[str, Any]]:
    """One row per split, and with several data sets one per data set and split (`eval_<name>_*`, `test_<name>_*`)."""
    rows = []
    splits = [
        *SPLITS,
        *((f"{prefix}_{name}", f"{split}: {name}") for prefix, split in SPLITS for name in dataset_names),
    ]
    for prefix, split in splits:
        values = {key: metrics.get(f"{prefix}_{key}") for key, _, _ in METRICS}
        if all(v is None for v in values.values()):
            continue
        pairs = metrics.get(f"{prefix}_num_pairs")
        rows.append(
            {
                "split": split,
                "threshold": metrics.get(f"{prefix}_threshold"),
                "pairs": int(pairs) if pairs else None,
                **values,
            }
        )
    return rows


__all__ = ["METRICS", "SPLITS", "eval_results", "hub_model_id", "metric_rows", "metrics_from_log_history"]
