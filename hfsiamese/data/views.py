"""Training views of a labelled pair data set, built from its duplicate groups.

Different losses need different rows: duplicate pairs (anchor, positive) for in-batch losses,
labelled pairs for contrastive losses, triplets (anchor, positive, negative) for losses with
explicit negatives, and all pairs of each group to get more positives out of groups of k
questions. Every view is a `datasets.Dataset` with a `group_id` column, built with numpy over
whole columns (no Python loop per pair).
"""

from __future__ import annotations

import datasets
import numpy as np
import pyarrow as pa

from hfsiamese.data.question_identity import (
    assign_duplicate_groups,
    column_numpy,
    question_groups,
    question_texts,
    with_question_keys,
)

__all__ = ["duplicate_pairs", "group_pairs", "labelled_pairs", "triplets", "view_sizes"]


def labelled_pairs(dataset: datasets.Dataset) -> datasets.Dataset:
    """All pairs with their 0/1 labels and the group of their first question."""
    return assign_duplicate_groups(dataset) if "group_id" not in dataset.column_names else dataset


def duplicate_pairs(dataset: datasets.Dataset) -> datasets.Dataset:
    """The label-1 pairs as (anchor = question1, positive = question2), with their group."""
    dataset = labelled_pairs(dataset)
    keep = np.flatnonzero(column_numpy(dataset, "label") == 1)
    if len(keep) == 0:
        raise ValueError("the data set holds no duplicate pairs (label 1): no (anchor, positive) view")
    return dataset.select(keep)


def triplets(dataset: datasets.Dataset, *, seed: int = 0) -> datasets.Dataset:
    """
    (anchor, positive, negative) rows: each duplicate pair gets as its negative a question that a
    labelled non-duplicate pair sets against a member of its duplicate group — the "same topic,
    different meaning" questions that make QQP's negatives hard. One negative per duplicate pair,
    drawn with `seed` among its group's candidates; duplicate pairs whose group has no labelled
    non-duplicate are left out (see `view_sizes` for how many).

    Columns: question1 (anchor), question2 (positive), negative, label (1), group_id.
    """
    codes1, codes2, group_of, first_position = question_groups(dataset)
    labels = column_numpy(dataset, "label")
    non_duplicate = labels == 0
    # Each non-duplicate (x, y) gives y as a negative of x's group and x as one of y's group.
    cand_group = np.concatenate([group_of[codes1[non_duplicate]], group_of[codes2[non_duplicate]]])
    cand_question = np.concatenate([codes2[non_duplicate], codes1[non_duplicate]])
    by_group = np.argsort(cand_group, kind="stable")
    cand_group, cand_question = cand_group[by_group], cand_question[by_group]
    n_groups = int(group_of.max()) + 1
    starts = np.searchsorted(cand_group, np.arange(n_groups))
    counts = np.bincount(cand_group, minlength=n_groups)

    duplicate_rows = np.flatnonzero(labels == 1)
    pair_group = group_of[codes1[duplicate_rows]]
    has_candidate = counts[pair_group] > 0
    rows, pair_group = duplicate_rows[has_candidate], pair_group[has_candidate]
    if len(rows) == 0:
        raise ValueError("no duplicate pair has a labelled non-duplicate in its group: cannot build triplets")
    pick = starts[pair_group] + (np.random.default_rng(seed).random(len(rows)) * counts[pair_group]).astype(np.int64)
    negative_text = question_texts(dataset, first_position[cand_question[pick]])
    view = dataset.select(rows)
    if "group_id" in view.column_names:
        view = view.remove_columns("group_id")
    view = view.add_column("negative", negative_text.combine_chunks(), feature=datasets.Value("string"))
    return view.add_column("group_id", pair_group, feature=datasets.Value("int64"))


def group_pairs(
    dataset: datasets.Dataset, *, max_pairs_per_group: int | None = None, seed: int = 0
) -> datasets.Dataset:
    """
    All positive pairs within each duplicate group: a group of k distinct questions gives
    k·(k−1)/2 pairs (the transitive closure turns a~b, b~c into a~c as well). With
    `max_pairs_per_group`, larger groups contribute a random subset of that size (seeded), so
    one big group cannot dominate training.

    Columns: question1, question2, label (1), group_id.
    """
    if max_pairs_per_group is not None and max_pairs_per_group < 1:
        raise ValueError(f"max_pairs_per_group must be positive, got {max_pairs_per_group}")
    codes1, codes2, group_of, first_position = question_groups(dataset)
    labels = column_numpy(dataset, "label")
    in_duplicates = np.unique(np.concatenate([codes1[labels == 1], codes2[labels == 1]]))
    if len(in_duplicates) == 0:
        raise ValueError("the data set holds no duplicate pairs (label 1): no group pairs")
    members = in_duplicates[np.argsort(group_of[in_duplicates], kind="stable")]
    member_group = group_of[members]
    group_ids, starts, sizes = np.unique(member_group, return_index=True, return_counts=True)
    rng = np.random.default_rng(seed)
    left_parts, right_parts, group_parts = [], [], []
    # Groups of one size share the same index pattern: one triu_indices per distinct size.
    for size in np.unique(sizes[sizes >= 2]):
        of_size = np.flatnonzero(sizes == size)
        i, j = np.triu_indices(int(size), k=1)
        if max_pairs_per_group is not None and len(i) > max_pairs_per_group:
            # A fresh random subset per group: rank random keys within each group's row.
            keys = rng.random((len(of_size), len(i)))
            chosen = np.argsort(keys, axis=1)[:, :max_pairs_per_group]
            left = members[starts[of_size][:, None] + i[chosen]]
            right = members[starts[of_size][:, None] + j[chosen]]
        else:
            left = members[starts[of_size][:, None] + i[None, :]]
            right = members[starts[of_size][:, None] + j[None, :]]
        left_parts.append(left.ravel())
        right_parts.append(right.ravel())
        group_parts.append(np.repeat(group_ids[of_size], left.shape[1]))
    left, right, groups = (np.concatenate(parts) for parts in (left_parts, right_parts, group_parts))
    table = pa.table(
        {
            "question1": question_texts(dataset, first_position[left]).combine_chunks(),
            "question2": question_texts(dataset, first_position[right]).combine_chunks(),
            "label": pa.array(np.ones(len(left), dtype=np.int64)),
            "group_id": pa.array(groups.astype(np.int64)),
        }
    )
    return datasets.Dataset(table)


def view_sizes(dataset: datasets.Dataset, *, max_pairs_per_group: int | None = None) -> dict[str, int]:
    """How many rows each view gives (and the group statistics behind them)."""
    dataset = with_question_keys(dataset)  # identified once for all the views below
    grouped = labelled_pairs(dataset)
    _, _, group_of, _ = question_groups(dataset)
    questions_per_group = np.bincount(group_of)
    try:
        n_triplets = len(triplets(dataset))
    except ValueError:
        n_triplets = 0
    try:
        n_group_pairs = len(group_pairs(dataset, max_pairs_per_group=max_pairs_per_group))
    except ValueError:
        n_group_pairs = 0
    labels = column_numpy(grouped, "label")
    return {
        "labelled_pairs": len(grouped),
        "duplicate_pairs": int((labels == 1).sum()),
        "triplets": n_triplets,
        "group_pairs": n_group_pairs,
        "questions": len(group_of),
        "duplicate_groups": int((questions_per_group >= 2).sum()),
        "largest_group_questions": int(questions_per_group.max()),
    }
