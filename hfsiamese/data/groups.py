"""
Duplicate groups: questions are nodes, label-1 pairs are edges, and the connected components are
the groups (duplicates are transitive: a~b and b~c make a~c).

The trainer's sampler keeps a group out of a batch twice, since in-batch-negative losses would
treat true duplicates as negatives; the views draw positives and negatives from the groups.
Questions are identified as `question_ids` says (ids, else folded text). Everything is vectorised:
`pandas.factorize` numbers the questions and `scipy.sparse.csgraph.connected_components` finds
the components, so millions of pairs take seconds (no union-find loop in Python).
"""

from __future__ import annotations

import datasets
import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from hfsiamese.data.arrow_columns import column_numpy
from hfsiamese.data.question_ids import QuestionCodes, first_positions, question_codes, with_question_keys

__all__ = ["assign_duplicate_groups", "connected_questions", "groups_of_questions", "question_groups"]


# Marks the pairs a model labelled (`hfsiamese.distillation.silver_pairs`), added to the gold training pairs by
# `--silver_pairs_file`. Groups are the transitive closure of *gold* duplicates only: chaining a model's positives
# made one QQP group of 1,551 pairs out of 18,632 silver pairs (and 1.4M "pairs within groups" for distillation).
SILVER_COLUMN = "silver"


def assign_duplicate_groups(dataset: datasets.Dataset, *, normalize: bool = True) -> datasets.Dataset:
    """
    Add an int64 `group_id` column: pairs in one group share a question up to duplicates.

    Groups are the connected components of the label-1 pairs (transitive closure), silver pairs (a true
    `SILVER_COLUMN`) left out of it. A pair gets its question1's group; for a gold label-1 pair that is also
    question2's group. Ids run 0..G-1 in order
    of first appearance. `normalize` (text identity only) strips, lowercases and collapses
    whitespace before comparing texts; it has no effect when the data set has `qid1`/`qid2`.
    With `normalize`, the question identity is stored too (`hfsiamese.data.question_ids`), so that
    the views built on the result do not recompute it.
    """
    if normalize:
        dataset = with_question_keys(dataset)
    codes1, _, group_of, _ = question_groups(dataset, normalize=normalize)
    group_ids = group_of[codes1]  # a pair's group is its question1's
    if "group_id" in dataset.column_names:
        dataset = dataset.remove_columns("group_id")
    return dataset.add_column("group_id", group_ids, feature=datasets.Value("int64"))


def question_groups(
    dataset: datasets.Dataset, *, normalize: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """
    Per-question view of the duplicate groups: for each pair the question codes of both sides
    (`codes1`, `codes2`, numbering questions as `assign_duplicate_groups` identifies them) and, per
    question code, its duplicate group (`group_of`) and the row/side where it first appears
    (`first_position`: an index into the concatenation [question1 column, question2 column]), so
    a view can fetch a question's text. Group ids agree with `assign_duplicate_groups`.
    """
    codes = question_codes(dataset, normalize=normalize)
    duplicate = column_numpy(dataset, "label") == 1
    if SILVER_COLUMN in dataset.column_names:  # a model's labels: they never chain questions into one group
        duplicate &= ~column_numpy(dataset, SILVER_COLUMN).astype(bool)
    group_of = groups_of_questions(codes, duplicate)
    codes1, codes2 = codes.codes1, codes.codes2
    return codes1, codes2, group_of, first_positions(codes)


def groups_of_questions(codes: QuestionCodes, duplicate: np.ndarray) -> np.ndarray:
    """
    The duplicate group of every question code: components of the `duplicate` pairs, numbered in order of first
    appearance over question1 (then question2). The core of `question_groups`, which the out-of-core preparation
    (`hfsiamese.preparation`) calls on its compact arrays.
    """
    codes1, codes2 = codes.codes1, codes.codes2
    component = connected_questions(codes1[duplicate], codes2[duplicate], codes.count)
    # Same numbering as assign_duplicate_groups: order of first appearance over question1.
    _, uniques = pd.factorize(component[codes1])
    lookup = np.full(codes.count, -1, dtype=np.int64)
    lookup[uniques] = np.arange(len(uniques))
    group_of = lookup[component]
    missing = group_of == -1  # components that occur only as question2 get the next ids
    if missing.any():
        renumbered, _ = pd.factorize(component[missing])
        group_of[missing] = len(uniques) + renumbered
    return group_of


def connected_questions(rows: np.ndarray, cols: np.ndarray, n_nodes: int) -> np.ndarray:
    """Connected-component label of every question (node) of the undirected graph with the given pairs (edges)."""
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n_nodes, n_nodes)).tocsr()
    _, labels = connected_components(graph, directed=False)
    return labels
