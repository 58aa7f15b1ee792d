"""The validation pairs a run evaluates and calibrates on: all of them, or a bounded, seeded sample of a large set.

Every evaluation during training, the one after it and the threshold calibration score the validation pairs; on a
site's whole history (396,010 validation pairs out of 4M) that took minutes each time. A sample bounds that time
whatever the size of the set; the figures it gives are estimates of the whole set's. The sample is stratified by label, so its duplicate rate is the set's, and drawn
with the split's seed, so that `hfsiamese split` writes the very pairs the run evaluated on.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import datasets
import numpy as np

__all__ = ["DEFAULT_MAX_EVAL_PAIRS", "ValidationSample", "sample_validation_pairs", "validation_sample_indices"]

logger = logging.getLogger("hfsiamese.training.validation_sample")  # the logger its lines have always come from

# Above the bundled recipes' validation sets (about 1,000 pairs of the embedded 10,000; QQP's own dev set has
# 40,430, which this bounds), so that those are evaluated whole.
DEFAULT_MAX_EVAL_PAIRS = 20_000


@dataclass(frozen=True)
class ValidationSample:
    """The validation pairs a run uses, and how many the set held (`total` > `len(pairs)` when sampled)."""

    pairs: datasets.Dataset
    total: int

    @property
    def sampled(self) -> bool:
        return len(self.pairs) < self.total


def validation_sample_indices(labels: np.ndarray, max_pairs: int | None, seed: int) -> np.ndarray:
    """
    The rows of a sample of at most `max_pairs` of these `labels` (all rows when `max_pairs` is None or 0, or
    when there are no more), in their original order. Each label keeps its share of the rows (largest remainder),
    and the rows of each label are drawn with `seed`: the same labels and seed give the same rows.
    """
    labels = np.asarray(labels)
    total = len(labels)
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max_eval_pairs must be 0 (all pairs) or more, got {max_pairs}")
    if not max_pairs or total <= max_pairs:
        return np.arange(total)
    values, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    shares = counts * (max_pairs / total)
    taken = np.floor(shares).astype(np.int64)
    # The rows left by rounding down go to the labels with the largest remainders (ties: the smaller label).
    for label in np.argsort(-(shares - taken), kind="stable")[: max_pairs - int(taken.sum())]:
        taken[label] += 1
    rng = np.random.default_rng(seed)
    chosen = [
        rng.choice(np.flatnonzero(inverse == label), size=int(taken[label]), replace=False)
        for label in range(len(values))
    ]
    return np.sort(np.concatenate(chosen))


def sample_validation_pairs(
    pairs: datasets.Dataset, labels: np.ndarray, max_pairs: int | None, seed: int
) -> ValidationSample:
    """`pairs` whole when they are at most `max_pairs` (or `max_pairs` is None or 0), else a sample of `max_pairs`
    (`validation_sample_indices` of `labels`, the pairs' `label` column as the run read it with the question
    identity's column reader); the sample is logged with the set's size."""
    total = len(pairs)
    if len(labels) != total:
        raise ValueError(f"{len(labels)} labels for {total} validation pairs: pass the pairs' own label column")
    rows = validation_sample_indices(labels, max_pairs, seed)
    if len(rows) == total:
        return ValidationSample(pairs, total)
    logger.info(
        "validation: a sample of %d of %d pairs, stratified by label, seed %d (--max_eval_pairs; 0 evaluates all)",
        len(rows),
        total,
        seed,
    )
    return ValidationSample(pairs.select(rows), total)
