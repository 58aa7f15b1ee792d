"""
Duplicate groups and leak-free splits for pair data sets.

Two jobs that both need the same graph: questions are nodes, pairs are edges.

* `assign_duplicate_groups`: the connected components over the label-1 edges are the duplicate
  groups (duplicates are transitive: a~b and b~c make a~c). The trainer's sampler keeps a group
  out of a batch twice, since in-batch-negative losses would treat true duplicates as negatives.
* `split_by_group`: the components over *all* edges are the units of a train/validation split,
  so that no question is seen on both sides (a question in both leaks its labels/embedding).

Identity of a question is its id (`qid1`/`qid2`) when the data set has ids, else its normalised
text. Everything is vectorised: `pandas.factorize` numbers the questions and
`scipy.sparse.csgraph.connected_components` finds the components, so millions of pairs take
seconds. (No union-find loop in Python; no library offers "group pairs into components" directly.)
"""

from __future__ import annotations

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from .arrow_columns import column_arrow, column_numpy

__all__ = ["assign_duplicate_groups", "split_by_group"]


def assign_duplicate_groups(dataset: datasets.Dataset, *, normalize: bool = True) -> datasets.Dataset:
    """
    Add an int64 `group_id` column: pairs in one group share a question up to duplicates.

    Groups are the connected components of the label-1 pairs (transitive closure). A pair gets its
    question1's group; for a label-1 pair that is also question2's group. Ids run 0..G-1 in order
    of first appearance. `normalize` (text identity only) strips, lowercases and collapses
    whitespace before comparing texts; it has no effect when the data set has `qid1`/`qid2`.
    """
    codes1, codes2, n_questions = _question_codes(dataset, normalize=normalize)
    labels = column_numpy(dataset, "label").astype(np.int64, copy=False)
    duplicate = labels == 1
    component = _components(codes1[duplicate], codes2[duplicate], n_questions)
    # Renumber so that ids are contiguous over the groups the pairs actually carry.
    group_ids, _ = pd.factorize(component[codes1])
    group_ids = group_ids.astype(np.int64, copy=False)
    if "group_id" in dataset.column_names:
        dataset = dataset.remove_columns("group_id")
    return dataset.add_column("group_id", group_ids, feature=datasets.Value("int64"))


def split_by_group(
    dataset: datasets.Dataset, *, validation_fraction: float = 0.1, seed: int = 42
) -> datasets.DatasetDict:
    """
    Split into train/validation so that no question appears on both sides.

    The units are the connected components over all pairs (duplicates and non-duplicates). They
    are shuffled with `seed` and moved to validation until it holds about `validation_fraction`
    of the pairs (a unit larger than that whole share stays in train unless nothing else fits).
    Row order inside each side is kept. Identity is as for `assign_duplicate_groups` (ids, else
    normalised text, which merges at least as much as raw text, so the split is leak-free for
    either identity).
    """
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be strictly between 0 and 1, got {validation_fraction}")
    n = len(dataset)
    codes1, codes2, n_questions = _question_codes(dataset, normalize=True)
    component = _components(codes1, codes2, n_questions)[codes1]
    units, pair_unit = np.unique(component, return_inverse=True)
    unit_sizes = np.bincount(pair_unit, minlength=len(units))

    target = validation_fraction * n
    order = np.random.default_rng(seed).permutation(len(units))
    # Units bigger than the whole target (a "giant" component) go last, so that they only land
    # in validation when nothing else can (tiny data sets); otherwise one of them would decide
    # the split size alone.
    order = order[np.argsort(unit_sizes[order] > target, kind="stable")]
    filled = np.cumsum(unit_sizes[order])
    # Smallest prefix reaching the target, or the one just before it if that is closer.
    k = int(np.searchsorted(filled, target)) + 1
    if k > 1 and abs(filled[k - 2] - target) <= abs(filled[k - 1] - target):
        k -= 1
    k = min(k, len(units))
    in_validation = np.zeros(len(units), dtype=bool)
    in_validation[order[:k]] = True
    is_val = in_validation[pair_unit]
    val_idx = np.flatnonzero(is_val)
    train_idx = np.flatnonzero(~is_val)
    if len(val_idx) == 0 or len(train_idx) == 0:
        raise ValueError(
            f"cannot split {n} pairs ({len(units)} connected question components, the largest "
            f"{int(unit_sizes.max())} pairs) with validation_fraction={validation_fraction}: one side would be empty"
        )
    return datasets.DatasetDict(train=dataset.select(train_idx), validation=dataset.select(val_idx))


# --------------------------------------------------------------------------------------------
def _question_codes(dataset: datasets.Dataset, *, normalize: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Number the questions: codes for question1 and question2 of each pair, and their count."""
    if len(dataset) == 0:
        raise ValueError("the data set has no pairs")
    if "qid1" in dataset.column_names and "qid2" in dataset.column_names:
        keys = [column_arrow(dataset, "qid1"), column_arrow(dataset, "qid2")]
        what = "qid1/qid2"
    else:
        missing = [c for c in ("question1", "question2") if c not in dataset.column_names]
        if missing:
            raise ValueError(f"the data set lacks {missing} (columns: {dataset.column_names})")
        keys = [column_arrow(dataset, "question1"), column_arrow(dataset, "question2")]
        if normalize:
            keys = [_normalise_text(key) for key in keys]
        what = "question1/question2"
    keys = [key.cast(pa.string()) for key in keys]  # ids may be ints; one type for both sides
    both = pa.chunked_array(keys[0].chunks + keys[1].chunks, type=pa.string())
    if both.null_count:
        raise ValueError(f"{both.null_count} null value(s) in {what}: every question needs an identity")
    codes, uniques = pd.factorize(both.to_pandas(types_mapper=pd.ArrowDtype))
    n = len(dataset)
    return codes[:n].astype(np.int64), codes[n:].astype(np.int64), len(uniques)


def _normalise_text(texts: pa.ChunkedArray) -> pa.ChunkedArray:
    texts = pc.utf8_trim_whitespace(texts.cast(pa.string()))
    return pc.utf8_lower(pc.replace_substring_regex(texts, r"\s+", " "))


def _components(rows: np.ndarray, cols: np.ndarray, n_nodes: int) -> np.ndarray:
    """Connected-component label of every node of the undirected graph with the given edges."""
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n_nodes, n_nodes)).tocsr()
    _, labels = connected_components(graph, directed=False)
    return labels
