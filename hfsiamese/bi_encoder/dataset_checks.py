"""What the trainer checks of its data sets before training: tokenised pairs, and the labels its loss needs."""

from __future__ import annotations

from typing import Any

import datasets
import numpy as np

from hfsiamese.data.arrow_columns import column_numpy
from hfsiamese.losses import SiameseLoss

REQUIRED_COLUMNS = ("input_ids_a", "attention_mask_a", "input_ids_b", "attention_mask_b")


def check_pair_columns(name: str, dataset: Any) -> None:
    """`dataset` (or each of a dict of them) holds tokenised pairs; `name` is the argument it came as."""
    if dataset is None:
        return
    for part in dataset.values() if isinstance(dataset, dict) else [dataset]:
        columns = getattr(part, "column_names", None)
        if columns is None:
            continue
        missing = [c for c in REQUIRED_COLUMNS if c not in columns]
        if missing:
            raise ValueError(f"{name} lacks {missing} (has {columns}); tokenise it with hfsiamese.data.tokenize_pairs")


def check_training_labels(train_dataset: datasets.Dataset | None, loss: SiameseLoss, loss_name: str) -> None:
    """Duplicate-pair losses must not see non-duplicates (they would become positives); labelled-pair losses need labels."""
    if train_dataset is None:
        return
    if "labels" not in train_dataset.column_names:
        if loss.requires_labels:
            raise ValueError(
                f"{loss_name} trains on labelled pairs: train_dataset needs a `labels` (or `label`) column"
            )
        return
    labels = column_numpy(train_dataset, "labels")
    if len(labels) == 0:
        raise ValueError("train_dataset holds no pairs to train on")
    if not loss.requires_labels and (labels != 1).any():
        raise ValueError(
            f"{loss_name} trains on duplicate pairs only, but train_dataset holds {(labels != 1).sum()} "
            "non-duplicate pairs: keep label 1 (hfsiamese.data.duplicate_pairs)"
        )
    if loss.requires_labels and len(np.unique(labels)) < 2:
        raise ValueError(
            f"{loss_name} learns from duplicates AND non-duplicates, but train_dataset holds only label {labels[0]}"
        )


__all__ = ["REQUIRED_COLUMNS", "check_pair_columns", "check_training_labels"]
