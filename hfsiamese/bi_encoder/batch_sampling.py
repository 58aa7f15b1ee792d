"""Which pairs share a batch: no two of one duplicate group in training, optionally pairs of similar length."""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow.compute as pc
import torch
from transformers.trainer_pt_utils import LengthGroupedSampler
from transformers.utils import logging

from hfsiamese.data.question_identity import column_arrow, column_numpy
from hfsiamese.data.sampler import NoDuplicateGroupSampler

logger = logging.get_logger(__name__)


def training_sampler(
    dataset: datasets.Dataset, *, batch_size: int, seed: int, length_column: str | None = None
) -> NoDuplicateGroupSampler:
    """
    Batches that never hold two pairs of one duplicate group (`group_id` column), so in-batch
    negatives are real negatives; with `length_column` (or the token lists' lengths when that column
    is absent) they also gather pairs of similar length, so little padding is computed.
    """
    if "group_id" in dataset.column_names:
        group_ids = column_numpy(dataset, "group_id")
    else:
        logger.warning(
            "train_dataset has no `group_id` column: batches may hold duplicates of one another, which the "
            "loss then counts as negatives. Add groups with hfsiamese.data.assign_duplicate_groups."
        )
        group_ids = np.arange(len(dataset))  # every pair its own group: plain shuffled batches
    lengths = pair_lengths(dataset, length_column) if length_column is not None else None
    return NoDuplicateGroupSampler(group_ids, batch_size=batch_size, seed=seed, lengths=lengths)


def length_grouped_sampler(
    dataset: datasets.Dataset, *, batch_size: int, seed: int, length_column: str
) -> LengthGroupedSampler:
    """Evaluation pairs grouped by their two sides' lengths (the Trainer's own looks for one `input_ids` column)."""
    return LengthGroupedSampler(
        batch_size,
        lengths=pair_lengths(dataset, length_column).tolist(),
        generator=torch.Generator().manual_seed(seed),
    )


def pair_lengths(dataset: datasets.Dataset, length_column: str) -> np.ndarray:
    """Tokens per pair (both sides), from a precomputed column or the token-id lists' lengths."""
    if length_column in dataset.column_names:
        return column_numpy(dataset, length_column)
    if "input_ids_a" not in dataset.column_names:
        raise ValueError(
            "grouping pairs by length needs their token lists, and these pairs are tokenised batch by batch in the "
            "collator: pass --tokenize_in_collator false, or give a length column"
        )
    return sum(pc.list_value_length(column_arrow(dataset, f"input_ids_{side}")).to_numpy() for side in ("a", "b"))


__all__ = ["length_grouped_sampler", "pair_lengths", "training_sampler"]
