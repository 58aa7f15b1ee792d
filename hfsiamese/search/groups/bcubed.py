"""B-cubed precision, recall and F1 of a clustering against known groups (Bagga and Baldwin, 1998; Amigó et al.,
2009): per item, the share of its predicted group that truly belongs with it, and the share of its true group that
was put with it, averaged over items. Unlike pair counts it does not let one giant group dominate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def bcubed_scores(predicted: Sequence[Any], truth: Sequence[Any]) -> dict[str, float]:
    """`{"precision", "recall", "f1"}` of `predicted` group labels against `truth` labels, one of each per item."""
    if len(predicted) != len(truth):
        raise ValueError(f"got {len(predicted)} predicted labels but {len(truth)} true ones")
    if not len(predicted):
        raise ValueError("B-cubed needs at least one item")
    _, pred = np.unique(np.asarray(predicted, dtype=object).astype(str), return_inverse=True)
    _, true = np.unique(np.asarray(truth, dtype=object).astype(str), return_inverse=True)
    # Items sharing both labels: each (predicted, true) cell's size, seen from every item in it.
    _, cell = np.unique(pred.astype(np.int64) * (true.max() + 1) + true, return_inverse=True)
    both = np.bincount(cell)[cell]
    precision = float(np.mean(both / np.bincount(pred)[pred]))
    recall = float(np.mean(both / np.bincount(true)[true]))
    f1 = 2 * precision * recall / (precision + recall)
    return {"precision": precision, "recall": recall, "f1": f1}


__all__ = ["bcubed_scores"]
