"""
Data preparation for training, in the order a run needs it: pairs → splits → duplicate groups →
the rows the loss trains on.

The training recipe, the benchmarks and the tests all split and view the data this way; keeping
it in the package means a benchmark's validation pairs are the recipe's, to the last pair.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets

from ..mining import mine_hard_negatives
from .arrow_columns import column_numpy
from .deduplication import deduplicate_pairs
from .groups import assign_duplicate_groups
from .loading import load_pairs
from .question_ids import with_question_keys
from .splits import split_by_group, split_report
from .views import duplicate_pairs, group_pairs, labelled_pairs, triplets

if TYPE_CHECKING:
    from ..arguments import DataArguments
    from ..losses.base import SiameseLoss

__all__ = ["TRAIN_VIEWS", "load_splits", "training_view", "view_for_loss"]

logger = logging.getLogger(__name__)

TRAIN_VIEWS: tuple[str, ...] = (
    "auto", "duplicate_pairs", "group_pairs", "labelled_pairs", "triplets", "mined_triplets",
)  # fmt: skip


def load_splits(data_args: DataArguments, *, default_train_file: str | Path | None = None) -> datasets.DatasetDict:
    """
    Training pairs (with `group_id`) and labelled validation (and test) pairs, no question shared.

    The pairs come from `data_args.dataset_name` (a Hub data set), else `data_args.train_file`,
    else `default_train_file` (the recipe passes its embedded QQP file). Without a
    `validation_file`, validation (and test) are split off by connected question components.
    """
    columns = dict(
        format=data_args.data_format,
        question1_column=data_args.question1_column,
        question2_column=data_args.question2_column,
        label_column=data_args.label_column,
        id1_column=data_args.id1_column,
        id2_column=data_args.id2_column,
    )
    if data_args.dataset_name and data_args.train_file:
        raise ValueError("pass either --train_file or --dataset_name, not both")
    if data_args.dataset_name:
        train_file = data_args.dataset_name
        pairs = _load_with_identity(train_file, **{**columns, "format": "hub"}, split=data_args.dataset_split)
    else:
        if not data_args.train_file and default_train_file is None:
            raise ValueError("pass --train_file or --dataset_name: no pairs to train on")
        train_file = data_args.train_file or str(default_train_file)
        pairs = _load_with_identity(train_file, **columns)
    if data_args.validation_file:
        splits = datasets.DatasetDict(train=pairs, validation=_load_with_identity(data_args.validation_file, **columns))
    else:
        splits = split_by_group(
            pairs,
            validation_fraction=data_args.validation_fraction,
            test_fraction=data_args.test_fraction,
            seed=data_args.split_seed,
        )
    splits["train"] = assign_duplicate_groups(splits["train"])
    if not (column_numpy(splits["train"], "label") == 1).any():
        raise ValueError(f"{train_file} holds no duplicate pairs (label 1) on the training side: nothing to train on")
    for split, limit in (("train", data_args.max_train_pairs), ("validation", data_args.max_eval_pairs)):
        if limit is not None:
            splits[split] = splits[split].select(range(min(limit, len(splits[split]))))
    logger.info("splits: %s", json.dumps(split_report(splits)))
    return splits


def view_for_loss(loss: SiameseLoss) -> str:
    """The view `train_view="auto"` picks: what the loss declares it needs."""
    if loss.requires_labels:
        return "labelled_pairs"
    if loss.requires_negatives:
        return "mined_triplets"
    return "duplicate_pairs"


def training_view(
    train_pairs: datasets.Dataset, data_args: DataArguments, loss: SiameseLoss, model: Any, tokenizer: Any
) -> datasets.Dataset:
    """The rows the loss trains on: `data_args.train_view`, or with "auto" the view it declares it needs."""
    view = view_for_loss(loss) if data_args.train_view == "auto" else data_args.train_view
    if view == "duplicate_pairs":
        return duplicate_pairs(train_pairs)
    if view == "group_pairs":
        return group_pairs(train_pairs, max_pairs_per_group=data_args.max_pairs_per_group, seed=data_args.split_seed)
    if view == "labelled_pairs":
        return labelled_pairs(train_pairs)
    if view == "triplets":
        return triplets(train_pairs, seed=data_args.split_seed)
    if view == "mined_triplets":
        return mine_hard_negatives(
            model, train_pairs, tokenizer, top_k=data_args.mining_top_k, margin=data_args.mining_margin
        ).remove_columns("negative_score")
    raise ValueError(f"train_view must be one of {', '.join(TRAIN_VIEWS)}; got {data_args.train_view!r}")


def _load_with_identity(source: str, **options: Any) -> datasets.Dataset:
    """
    `load_pairs(source, **options)` with the question identity computed once, before de-duplication,
    and kept as columns for the splits, groups, split report and views that follow (`load_pairs`
    itself returns only the pair columns, so it would fold the texts for de-duplication and drop them).
    """
    pairs = load_pairs(source, **options, deduplicate=False)
    return deduplicate_pairs(with_question_keys(pairs), source=source, stacklevel=3)[0]
