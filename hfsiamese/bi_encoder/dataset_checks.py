"""What the trainer checks of its data sets before training: tokenised pairs, and the labels its loss needs."""

from __future__ import annotations

from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hfsiamese.data.question_identity import column_arrow, column_numpy
from hfsiamese.losses import SiameseLoss
from hfsiamese.losses.teacher_scores import TEACHER_SCORES_COLUMN

REQUIRED_COLUMNS = ("input_ids_a", "attention_mask_a", "input_ids_b", "attention_mask_b")


def check_pair_columns(name: str, dataset: Any, *, texts_allowed: bool = False) -> None:
    """`dataset` (or each of a dict of them) holds tokenised pairs; `name` is the argument it came as. With
    `texts_allowed` (a collator that tokenises: `TokenizingPairCollator`) untokenised pairs do too."""
    if dataset is None:
        return
    for part in dataset.values() if isinstance(dataset, dict) else [dataset]:
        columns = getattr(part, "column_names", None)
        if columns is None:
            continue
        if texts_allowed and {"question1", "question2"} <= set(columns):
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


def check_teacher_scores(train_dataset: datasets.Dataset | None, loss: SiameseLoss, loss_name: str) -> None:
    """
    A loss on a teacher's scores needs them, and negatives to match: every row as many scores, one more
    than its negatives (said once, before training, rather than by the first batch that differs).
    """
    if train_dataset is None or not loss.requires_teacher_scores:
        return
    columns = train_dataset.column_names
    if TEACHER_SCORES_COLUMN not in columns:
        raise ValueError(
            f"{loss_name} learns a teacher's scores: train_dataset needs a `{TEACHER_SCORES_COLUMN}` column "
            "(a list of floats per row: [score(q,p), score(q,n1), ...])"
        )
    if "input_ids_n" not in columns:
        raise ValueError(
            f"{loss_name} compares each positive with negatives: train_dataset needs a `negative` column (a text, or a "
            "list of texts, per row) tokenised with hfsiamese.data.tokenize_pairs"
        )
    scores_column = column_arrow(train_dataset, TEACHER_SCORES_COLUMN)
    if scores_column.null_count:
        raise ValueError(f"{TEACHER_SCORES_COLUMN} holds {scores_column.null_count} null rows: score every row")
    scores = np.unique(pc.list_value_length(scores_column).to_numpy())
    if not len(scores):
        return  # no rows: nothing to compare
    negatives_column = column_arrow(train_dataset, "input_ids_n")
    negatives = (
        np.unique(pc.list_value_length(negatives_column).to_numpy())
        if pa.types.is_list(negatives_column.type.value_type)
        else np.array([1])
    )
    if len(scores) > 1 or len(negatives) > 1:
        raise ValueError(
            f"{loss_name} needs every row to hold the same number of negatives and of {TEACHER_SCORES_COLUMN}; "
            f"train_dataset's rows hold {sorted(negatives.tolist())} negatives and {sorted(scores.tolist())} scores"
        )
    if scores[0] != negatives[0] + 1:
        raise ValueError(
            f"{TEACHER_SCORES_COLUMN} holds {scores[0]} scores per row but the rows hold {negatives[0]} negatives: "
            "give the positive's score, then each negative's ([score(q,p), score(q,n1), ...])"
        )


__all__ = ["REQUIRED_COLUMNS", "check_pair_columns", "check_teacher_scores", "check_training_labels"]
