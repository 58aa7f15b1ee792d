"""
Data preparation for training, in the order a run needs it: pairs → splits → duplicate groups →
the rows the loss trains on.

The training recipe, the benchmarks and the tests all split and view the data this way; keeping
it in the package means a benchmark's validation pairs are the recipe's, to the last pair.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hfsiamese.bi_encoder.mining import mine_hard_negatives
from hfsiamese.data.pair_loading import load_pairs
from hfsiamese.data.question_identity import (
    ID_COLUMNS,
    SILVER_COLUMN,
    assign_duplicate_groups,
    column_numpy,
    deduplicate_pairs,
    identity_name,
    question_keys,
    with_question_keys,
)
from hfsiamese.data.splits import split_by_group
from hfsiamese.data.teacher_score_rows import load_teacher_score_rows, refuse_held_out_questions
from hfsiamese.data.validation_sample import sample_validation_pairs
from hfsiamese.data.views import duplicate_pairs, group_pairs, labelled_pairs, triplets
from hfsiamese.preparation import (
    PreparationOptions,
    is_prepared_folder,
    load_prepared_splits,
    prepare_pairs,
    prepared_cache_folder,
)
from hfsiamese.preparation.derived_cache import cached_pair_question_hashes, cached_split_report

if TYPE_CHECKING:
    from hfsiamese.losses.base import SiameseLoss
    from hfsiamese.training.arguments import DataArguments

__all__ = [
    "TRAIN_VIEWS",
    "load_splits",
    "load_splits_and_validation_size",
    "training_view",
    "view_for_loss",
    "with_silver_pairs",
]

logger = logging.getLogger(__name__)

# A temporary column: which training pair a triplet came from, to tell labelled from mined ones.
SOURCE_ROW = "__source_row"

TRAIN_VIEWS: tuple[str, ...] = (
    "auto", "duplicate_pairs", "group_pairs", "labelled_pairs", "triplets", "mined_triplets", "teacher_scores",
)  # fmt: skip


def load_splits(data_args: DataArguments, *, default_train_file: str | Path | None = None) -> datasets.DatasetDict:
    """
    Training pairs (with `group_id`) and labelled validation (and test) pairs, no question shared: the splits of
    `load_splits_and_validation_size`.
    """
    return load_splits_and_validation_size(data_args, default_train_file=default_train_file)[0]


def load_splits_and_validation_size(
    data_args: DataArguments, *, default_train_file: str | Path | None = None
) -> tuple[datasets.DatasetDict, int]:
    """
    Training pairs (with `group_id`) and labelled validation (and test) pairs, no question shared.

    The pairs come from `data_args.dataset_name` (a Hub data set), else `data_args.train_file`,
    else `default_train_file` (the recipe passes its embedded QQP file). Without a
    `validation_file`, validation (and test) are split off by connected question components.
    With `data_args.silver_pairs_file`, its silver pairs follow the gold training pairs (`with_silver_pairs`)
    before the duplicate groups are drawn, so that a silver duplicate joins groups as a gold one does.
    With `data_args.teacher_scores_file`, its rows are checked to hold no validation or test question (they are read
    again, as the training rows, by `training_view`).
    `data_args.max_eval_pairs` bounds the validation pairs: a larger set is sampled, stratified by label, with
    `split_seed` (`hfsiamese.data.validation_sample`); the validation set's size before that comes second.
    """
    if data_args.train_datasets:
        raise ValueError(
            "train_datasets lists several data sets, which `hfsiamese train` alone reads: give this command one data "
            "set's own flags (its --train_file or --dataset_name, its columns)"
        )
    if data_args.dataset_name and data_args.train_file:
        raise ValueError("pass either --train_file or --dataset_name, not both")
    prepared = _prepared_folder(data_args, default_train_file)
    if prepared is not None:  # split and grouped at preparation
        splits, train_file = load_prepared_splits(prepared, PreparationOptions.from_data_args(data_args)), str(prepared)
    else:
        splits, train_file = _pair_file_splits(data_args, default_train_file)
    return _finish_splits(splits, data_args, train_file, grouped=prepared is not None)


def _pair_file_splits(
    data_args: DataArguments, default_train_file: str | Path | None
) -> tuple[datasets.DatasetDict, str]:
    """The splits of a pair file or a Hub data set, read in memory (with its `validation_file`, else split off by
    connected question components), and the name of the training source."""
    columns = PreparationOptions.from_data_args(data_args).reading_options()
    if data_args.dataset_source:
        train_file = data_args.dataset_source
        pairs = _load_with_identity(train_file, **{**columns, "format": "hub"}, split=data_args.dataset_split)
    else:
        if not data_args.train_file and default_train_file is None:
            raise ValueError("pass --train_file or --dataset_name: no pairs to train on")
        train_file = data_args.train_file or str(default_train_file)
        pairs = _load_with_identity(train_file, **columns)
    if data_args.validation_file:
        validation = _load_with_identity(data_args.validation_file, **columns)
        return datasets.DatasetDict(train=pairs, validation=validation), train_file
    splits = split_by_group(
        pairs,
        validation_fraction=data_args.validation_fraction,
        test_fraction=data_args.test_fraction,
        seed=data_args.split_seed,
    )
    return splits, train_file


def derive_first_run_values(data_args: DataArguments, folder: str | Path) -> datasets.Dataset:
    """
    What a `train` from the prepared `folder` with these data options derives from its rows (the split report, the
    training questions' fingerprint: a hash per question, tens of seconds per million pairs), computed now by the
    code `train` runs and kept in the folder (`hfsiamese.preparation.derived_cache`), so that the first run after
    `hfsiamese prepare` starts as fast as the second. Returns the training pairs, as that run loads them (for what a
    model family derives from them: a word vocabulary).
    """
    splits, _ = load_splits_and_validation_size(dataclasses.replace(data_args, train_file=str(folder)))
    cached_pair_question_hashes(splits["train"])
    return splits["train"]


def _finish_splits(
    splits: datasets.DatasetDict, data_args: DataArguments, train_file: str, *, grouped: bool
) -> tuple[datasets.DatasetDict, int]:
    """What every source of splits goes through last: the silver pairs after the gold training pairs (a prepared
    folder has refused them), the teacher rows' check, the duplicate groups (unless a prepared folder's training
    pairs already carry them: `grouped`), the size limits and the split report."""
    held_out = [split for name, split in splits.items() if name != "train"]
    gold_pairs = len(splits["train"])
    if data_args.silver_pairs_file:
        splits["train"] = with_silver_pairs(splits["train"], held_out, data_args.silver_pairs_file)
    if data_args.teacher_scores_file:  # said now, before any training: its rows must hold no held-out question
        teacher_rows = load_teacher_score_rows(data_args.teacher_scores_file)
        refuse_held_out_questions(teacher_rows, held_out, data_args.teacher_scores_file)
    if not grouped:
        splits["train"] = assign_duplicate_groups(splits["train"])
    if not (column_numpy(splits["train"], "label") == 1).any():
        raise ValueError(f"{train_file} holds no duplicate pairs (label 1) on the training side: nothing to train on")
    # max_train_pairs keeps the first gold pairs, and every silver pair (they come after the gold ones).
    if data_args.max_train_pairs is not None:
        kept, total = min(data_args.max_train_pairs, gold_pairs), len(splits["train"])
        rows = range(kept) if total == gold_pairs else np.concatenate([np.arange(kept), np.arange(gold_pairs, total)])
        splits["train"] = splits["train"].select(rows)
    validation_labels = column_numpy(splits["validation"], "label")
    validation = sample_validation_pairs(
        splits["validation"], validation_labels, data_args.max_eval_pairs, data_args.split_seed
    )
    splits["validation"] = validation.pairs
    logger.info("splits: %s", json.dumps(cached_split_report(splits)))
    return splits, validation.total


def _prepared_folder(data_args: DataArguments, default_train_file: str | Path | None) -> Path | None:
    """
    The prepared folder the run reads, or None for the in-memory path: `train_file` when it is a prepared folder
    (`hfsiamese prepare`), else with `prepare_data` the cached preparation of the training file (made now when there
    is none, resumed when a run was killed making it). Options a prepared folder cannot honour are refused by name.
    """
    train_file = data_args.train_file
    given = is_prepared_folder(train_file)
    if not (given or data_args.prepare_data):
        return None
    if data_args.dataset_name:
        raise ValueError("--prepare_data prepares a --train_file; a Hub data set (--dataset_name) is read as before")
    unsupported = [name for name in ("validation_file", "silver_pairs_file") if getattr(data_args, name)]
    if unsupported:
        raise ValueError(
            f"--{unsupported[0]} cannot be combined with a prepared training file (its split and duplicate groups are "
            "fixed at preparation): train from the pair file itself"
        )
    if given:
        return Path(str(train_file))
    source = train_file or default_train_file
    if source is None:
        raise ValueError("pass --train_file: --prepare_data has no pair file to prepare")
    options = PreparationOptions.from_data_args(data_args)
    folder = prepared_cache_folder(source, options)
    prepare_pairs(source, folder, options, num_proc=data_args.preprocessing_num_workers)
    logger.info("training from the prepared folder %s", folder)
    return folder


def with_silver_pairs(
    train: datasets.Dataset, held_out: Sequence[datasets.Dataset], silver_file: str | Path
) -> datasets.Dataset:
    """
    `train` with the silver pairs of `silver_file` after its rows (`hfsiamese.distillation.silver_pairs`: question1,
    question2, hard 0/1 label, qid1/qid2 when the gold pairs have ids), in the gold pairs' columns and types.

    A silver pair holding a question of a `held_out` split (validation, test; by question identity) is a ValueError
    naming their count: silver labels must come from training questions alone. Silver pairs repeating a gold pair
    (in either order, whatever the labels) or an earlier silver pair are dropped; the counts are logged. Every row
    carries `SILVER_COLUMN`: silver duplicates do not join gold duplicate groups to each other.
    """
    source = str(silver_file)
    silver = load_pairs(source, deduplicate=False)
    identity = identity_name(train)
    if identity_name(silver) != identity:
        if identity == "question ids":
            raise ValueError(
                f"{source} has no qid1/qid2 but the training pairs are identified by question ids: write the silver pairs "
                "from this same data (hfsiamese silver-pairs keeps the ids)"
            )
        # The gold pairs are identified by their text: so are the silver pairs.
        silver = silver.remove_columns(list(ID_COLUMNS))
    silver = with_question_keys(silver)
    held = [key for split in held_out if len(split) for key in question_keys(split)]
    if held:
        held_keys = pa.chunked_array([chunk for key in held for chunk in key.chunks], type=pa.string()).unique()
        key1, key2 = question_keys(silver)
        leaking = pc.or_(pc.is_in(key1, value_set=held_keys), pc.is_in(key2, value_set=held_keys))
        count = pc.sum(leaking).as_py() or 0
        if count:
            raise ValueError(
                f"{count} of {len(silver)} silver pairs in {source} hold a validation or test question (by {identity}): "
                "make silver pairs from this configuration's training split (hfsiamese silver-pairs with the same config)"
            )
    missing = sorted(set(train.column_names) - set(silver.column_names))
    if missing:
        raise ValueError(f"{source} lacks the columns {missing} of the training pairs")
    silver = silver.select_columns(train.column_names).cast(train.features)
    # Marked, so that the duplicate groups stay the gold pairs' (`SILVER_COLUMN`).
    train = train.add_column(SILVER_COLUMN, np.zeros(len(train), dtype=bool))
    silver = silver.add_column(SILVER_COLUMN, np.ones(len(silver), dtype=bool)).cast(train.features)
    combined, report = deduplicate_pairs(datasets.concatenate_datasets([train, silver]), warn=False)
    added = len(combined) - len(train)
    duplicates = int((column_numpy(combined, "label")[len(train) :] == 1).sum())
    logger.info(
        "silver pairs: %d added to %d gold training pairs from %s (%d labelled duplicates); %d dropped that repeat a gold "
        "or an earlier silver pair (%d of them with another label)",
        added, len(train), source, duplicates, report.collapsed, report.conflicting,
    )  # fmt: skip
    return combined


def view_for_loss(loss: SiameseLoss) -> str:
    """The view `train_view="auto"` picks: what the loss declares it needs."""
    if loss.requires_teacher_scores:
        return "teacher_scores"
    if loss.requires_labels:
        return "labelled_pairs"
    if loss.requires_negatives:
        return "mined_triplets"
    return "duplicate_pairs"


def training_view(
    train_pairs: datasets.Dataset,
    data_args: DataArguments,
    loss: SiameseLoss,
    model: Any,
    tokenizer: Any,
) -> datasets.Dataset:
    """
    The rows the loss trains on: `data_args.train_view`, or with "auto" the view it declares it needs.

    A view of duplicate pairs that keeps fewer than half of them (triplets whose negatives could not
    be found) warns plainly: the loss then sees a small, biased part of the data.
    """
    view = view_for_loss(loss) if data_args.train_view == "auto" else data_args.train_view
    if view == "teacher_scores":
        if not data_args.teacher_scores_file:
            raise ValueError(
                "the teacher_scores view (losses margin_mse, listwise_kl) trains on rows a teacher scored: give "
                "--teacher_scores_file (question1, question2, negative, teacher_scores; hfsiamese.data.teacher_score_rows)"
            )
        return load_teacher_score_rows(data_args.teacher_scores_file)
    if data_args.teacher_scores_file:
        warnings.warn(
            f"teacher_scores_file is read by the teacher_scores view only (losses margin_mse, listwise_kl); the "
            f"{view} view ignores it",
            UserWarning,
            stacklevel=2,
        )
    if view == "duplicate_pairs":
        return duplicate_pairs(train_pairs)
    if view == "group_pairs":
        return group_pairs(
            train_pairs,
            max_pairs_per_group=data_args.max_pairs_per_group,
            seed=data_args.split_seed,
        )
    if view == "labelled_pairs":
        return labelled_pairs(train_pairs)
    if view == "triplets":
        rows = labelled_or_mined_triplets(train_pairs, data_args, model, tokenizer)
    elif view == "mined_triplets":
        rows = mined_triplets(train_pairs, data_args, model, tokenizer)
    else:
        raise ValueError(f"train_view must be one of {', '.join(TRAIN_VIEWS)}; got {data_args.train_view!r}")
    warn_if_thin(view, len(rows), int((column_numpy(train_pairs, "label") == 1).sum()))
    return rows


def mined_triplets(
    train_pairs: datasets.Dataset, data_args: DataArguments, model: Any, tokenizer: Any
) -> datasets.Dataset:
    """Triplets whose negatives the initial model finds, with the data arguments' rank window and margins."""
    return mine_hard_negatives(
        model,
        train_pairs,
        tokenizer,
        max_rank=data_args.mining_max_rank,
        skip_top=data_args.mining_skip_top,
        margin=data_args.mining_margin,
        relative_margin=data_args.mining_relative_margin,
    ).remove_columns("negative_score")


def labelled_or_mined_triplets(
    train_pairs: datasets.Dataset, data_args: DataArguments, model: Any, tokenizer: Any
) -> datasets.Dataset:
    """
    Triplets with a labelled negative where the pair's duplicate group has one (QQP's same-topic
    non-duplicates), and a mined one for the other duplicate pairs, so that the view is not cut to
    the few groups with labelled non-duplicates (82 of 4,465 QQP training duplicates).
    """
    numbered = train_pairs.add_column(SOURCE_ROW, np.arange(len(train_pairs), dtype=np.int64))
    try:
        labelled = triplets(numbered, seed=data_args.split_seed)
    except ValueError:  # no group has a labelled negative: every triplet is mined
        return mined_triplets(train_pairs, data_args, model, tokenizer)
    try:
        mined = mined_triplets(numbered, data_args, model, tokenizer)
    except ValueError:  # mining found nothing inside its window and margins: the labelled ones stay
        mined = labelled.select([])
    mined = mined.select(np.flatnonzero(~np.isin(column_numpy(mined, SOURCE_ROW), column_numpy(labelled, SOURCE_ROW))))
    logger.info(
        "triplets: %d with a labelled negative, %d with a mined one",
        len(labelled),
        len(mined),
    )
    mined = mined.select_columns(labelled.column_names).cast(labelled.features)
    return datasets.concatenate_datasets([labelled, mined]).remove_columns(SOURCE_ROW)


def warn_if_thin(view: str, kept: int, duplicate_pairs_total: int) -> None:
    """Warn when a view of duplicate pairs keeps fewer than half of them."""
    if duplicate_pairs_total and kept < duplicate_pairs_total / 2:
        warnings.warn(
            f"train_view={view} keeps {kept:,} of {duplicate_pairs_total:,} duplicate pairs "
            f"({kept / duplicate_pairs_total:.0%}): the others found no negative inside the mining window "
            "(--mining_max_rank) and margins (--mining_margin, --mining_relative_margin); widen them, or train on "
            "--train_view duplicate_pairs with in-batch negatives",
            UserWarning,
            stacklevel=2,
        )


def _load_with_identity(source: str, **options: Any) -> datasets.Dataset:
    """
    `load_pairs(source, **options)` with the question identity computed once, before de-duplication,
    and kept as columns for the splits, groups, split report and views that follow (`load_pairs`
    itself returns only the pair columns, so it would fold the texts for de-duplication and drop them).
    """
    pairs = load_pairs(source, **options, deduplicate=False)
    keyed = with_question_keys(pairs)
    return deduplicate_pairs(keyed, source=source, stacklevel=3)[0]
