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

__all__ = ["assign_duplicate_groups", "question_groups", "split_by_group", "split_report"]


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


def question_groups(dataset: datasets.Dataset, *, normalize: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """
    Per-question view of the duplicate groups: for each pair the question codes of both sides
    (`codes1`, `codes2`, numbering questions as `assign_duplicate_groups` identifies them) and, per
    question code, its duplicate group (`group_of`) and the row/side where it first appears
    (`first_position`: an index into the concatenation [question1 column, question2 column]), so
    a view can fetch a question's text. Group ids agree with `assign_duplicate_groups`.
    """
    codes1, codes2, n_questions = _question_codes(dataset, normalize=normalize)
    duplicate = column_numpy(dataset, "label") == 1
    component = _components(codes1[duplicate], codes2[duplicate], n_questions)
    # Same numbering as assign_duplicate_groups: order of first appearance over question1.
    _, uniques = pd.factorize(component[codes1])
    lookup = np.full(n_questions, -1, dtype=np.int64)
    lookup[uniques] = np.arange(len(uniques))
    group_of = lookup[component]
    missing = group_of == -1  # components that occur only as question2 get the next ids
    if missing.any():
        renumbered, _ = pd.factorize(component[missing])
        group_of[missing] = len(uniques) + renumbered
    both = np.concatenate([codes1, codes2])
    first_position = np.full(n_questions, -1, dtype=np.int64)
    # reversed assignment leaves the FIRST occurrence's position in place
    positions = np.arange(len(both))[::-1]
    first_position[both[::-1]] = positions
    return codes1, codes2, group_of, first_position


def split_by_group(
    dataset: datasets.Dataset,
    *,
    validation_fraction: float = 0.1,
    test_fraction: float = 0.0,
    seed: int = 42,
) -> datasets.DatasetDict:
    """
    Split into train/validation (and test, when `test_fraction > 0`) so that no question appears
    on two sides.

    The units are the connected components over all pairs (duplicates and non-duplicates). They
    are shuffled with `seed` and dealt to validation, then test, until each holds about its
    fraction of the pairs (a unit larger than that whole share stays in train unless nothing else
    fits). Row order inside each side is kept. Identity is as for `assign_duplicate_groups` (ids,
    else normalised text, which merges at least as much as raw text, so the split is leak-free for
    either identity).
    """
    fractions = {"validation": validation_fraction, "test": test_fraction}
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be strictly between 0 and 1, got {validation_fraction}")
    if not 0.0 <= test_fraction < 1.0 or validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            f"test_fraction must be in [0, 1) and leave room for training (validation_fraction + test_fraction < 1), "
            f"got validation_fraction={validation_fraction}, test_fraction={test_fraction}"
        )
    n = len(dataset)
    codes1, codes2, n_questions = _question_codes(dataset, normalize=True)
    component = _components(codes1, codes2, n_questions)[codes1]
    units, pair_unit = np.unique(component, return_inverse=True)
    unit_sizes = np.bincount(pair_unit, minlength=len(units))

    order = np.random.default_rng(seed).permutation(len(units))
    # Units bigger than a whole held-out share (a "giant" component) go last, so that they only
    # land there when nothing else can (tiny data sets); otherwise one of them would decide the
    # split size alone.
    largest_target = max(f * n for f in fractions.values() if f > 0)
    order = order[np.argsort(unit_sizes[order] > largest_target, kind="stable")]
    unit_split = np.zeros(len(units), dtype=np.int8)  # 0 = train
    for code, name in enumerate(("validation", "test"), start=1):
        if fractions[name] == 0:
            continue
        remaining = order[unit_split[order] == 0]
        k = _prefix_closest_to(np.cumsum(unit_sizes[remaining]), fractions[name] * n)
        unit_split[remaining[:k]] = code
    pair_split = unit_split[pair_unit]
    names = ["train", "validation"] + (["test"] if test_fraction > 0 else [])
    indices = {name: np.flatnonzero(pair_split == code) for code, name in enumerate(names)}
    empty = [name for name, idx in indices.items() if len(idx) == 0]
    if empty:
        raise ValueError(
            f"cannot split {n} pairs ({len(units)} connected question components, the largest "
            f"{int(unit_sizes.max())} pairs) with validation_fraction={validation_fraction}, "
            f"test_fraction={test_fraction}: {', '.join(empty)} would be empty"
        )
    return datasets.DatasetDict({name: dataset.select(idx) for name, idx in indices.items()})


def split_report(splits: datasets.DatasetDict) -> dict[str, dict[str, float]]:
    """
    Size and duplicate rate of each split, and how many questions two splits share (0 for a
    leak-free split). Questions are identified as in `split_by_group`.
    """
    report: dict[str, dict[str, float]] = {}
    question_sets = {}
    for name, split in splits.items():
        labels = column_numpy(split, "label")
        keys = _identity_keys(split, normalize=True)
        question_sets[name] = set(pa.chunked_array(keys[0].chunks + keys[1].chunks, type=pa.string()).unique().to_pylist())
        report[name] = {
            "pairs": len(split),
            "duplicates": int((labels == 1).sum()),
            "duplicate_rate": float((labels == 1).mean()) if len(split) else 0.0,
            "questions": len(question_sets[name]),
        }
        if "group_id" in split.column_names:
            report[name]["duplicate_groups"] = int(len(np.unique(column_numpy(split, "group_id"))))
    names = list(splits)
    shared = {
        f"{a}/{b}": len(question_sets[a] & question_sets[b]) for i, a in enumerate(names) for b in names[i + 1 :]
    }
    report["shared_questions"] = shared
    return report


def _prefix_closest_to(filled: np.ndarray, target: float) -> int:
    """Length of the prefix of units whose cumulative size is closest to `target` (at least 1)."""
    if len(filled) == 0:
        return 0
    k = int(np.searchsorted(filled, target)) + 1
    if k > 1 and abs(filled[k - 2] - target) <= abs(filled[min(k, len(filled)) - 1] - target):
        k -= 1
    return min(k, len(filled))


# --------------------------------------------------------------------------------------------
def _identity_keys(dataset: datasets.Dataset, *, normalize: bool) -> list[pa.ChunkedArray]:
    """The identity of question1 and question2 of each pair: ids when present, else (normalised) text."""
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
    nulls = keys[0].null_count + keys[1].null_count
    if nulls:
        raise ValueError(f"{nulls} null value(s) in {what}: every question needs an identity")
    return keys


def _question_codes(dataset: datasets.Dataset, *, normalize: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """Number the questions: codes for question1 and question2 of each pair, and their count."""
    keys = _identity_keys(dataset, normalize=normalize)
    both = pa.chunked_array(keys[0].chunks + keys[1].chunks, type=pa.string())
    codes, uniques = pd.factorize(both.to_pandas(types_mapper=pd.ArrowDtype))
    n = len(dataset)
    return codes[:n].astype(np.int64), codes[n:].astype(np.int64), len(uniques)


def _normalise_text(texts: pa.ChunkedArray) -> pa.ChunkedArray:
    texts = pc.utf8_trim_whitespace(texts.cast(pa.string()))
    # split + join collapses whitespace runs like a `\s+` regex replace, about twice as fast.
    return pc.utf8_lower(pc.binary_join(pc.utf8_split_whitespace(texts), " "))


def _components(rows: np.ndarray, cols: np.ndarray, n_nodes: int) -> np.ndarray:
    """Connected-component label of every node of the undirected graph with the given edges."""
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n_nodes, n_nodes)).tocsr()
    _, labels = connected_components(graph, directed=False)
    return labels
