"""
A question's identity, said once for the whole library: what makes two questions the same question, which pairs
repeat one another, and which questions are duplicates of each other (the duplicate groups).

A question is identified by its id when the pairs carry `qid1`/`qid2`, else by its folded text (stripped,
lowercased, whitespace runs collapsed: "How  do I?" and "how do i?" are one question). Cleaning, duplicate groups,
splits, views, mining, retrieval evaluation and search all ask this module, so "the same question" means the same
thing everywhere.

Folding millions of texts costs seconds, so it is done once per data set: `with_question_keys` stores the identity as
two string columns (`question1_key`, `question2_key`) that `select`, splits and views carry along, and every later
consumer reads them (`column_arrow`: a whole column at once, no Python object per row) instead of folding again.
Numbering (`question_codes`) stays per data set, in order of first appearance, because groups, views and splits
depend on that order.

Repeated pairs (`deduplicate_pairs`): a pair that occurs twice (or once as (q1, q2) and once as the mirror (q2, q1))
is one training example, not two; repeats over-weight it and, after a split, can put the same pair in train and
validation.

Duplicate groups (`assign_duplicate_groups`): questions are nodes, label-1 pairs are edges, and the connected
components are the groups (duplicates are transitive: a~b and b~c make a~c). The trainer's sampler keeps a group out
of a batch twice, since in-batch-negative losses would treat true duplicates as negatives; the views draw positives
and negatives from the groups. `split_report` counts the questions two splits share by this identity.

Everything is vectorised: `pandas.factorize` numbers questions and pairs, `scipy.sparse.csgraph.connected_components`
finds the components, so millions of pairs take seconds (no union-find loop in Python).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from hfsiamese.data.first_appearance import first_appearance_codes
from hfsiamese.data.row_filtering import keep_rows

__all__ = [
    "ID_COLUMNS",
    "KEY_COLUMNS",
    "SILVER_COLUMN",
    "DeduplicationReport",
    "QuestionCodes",
    "assign_duplicate_groups",
    "column_arrow",
    "column_numpy",
    "connected_questions",
    "deduplicate_pairs",
    "distinct_questions",
    "first_positions",
    "fold_text",
    "groups_of_questions",
    "identity_name",
    "pair_components",
    "question_codes",
    "question_groups",
    "question_keys",
    "question_texts",
    "repeated_pairs",
    "split_report",
    "with_question_keys",
]

ID_COLUMNS = ("qid1", "qid2")  # question ids given by the source
KEY_COLUMNS = ("question1_key", "question2_key")  # the identity as stored by `with_question_keys`

# Marks the pairs a model labelled (`hfsiamese.distillation.silver_pairs`), added to the gold training pairs by
# `--silver_pairs_file`. Groups are the transitive closure of *gold* duplicates only: chaining a model's positives
# made one QQP group of 1,551 pairs out of 18,632 silver pairs (and 1.4M "pairs within groups" for distillation).
SILVER_COLUMN = "silver"

_VALUES_PER_PART = 1 << 22  # `split_report` counts distinct values about this many at a time


def column_arrow(dataset: datasets.Dataset, name: str) -> pa.ChunkedArray:
    """
    One column as Arrow, in the data set's row order, without Python objects per row.

    `dataset.with_format("arrow")[name]` would do, but on a data set with an indices mapping
    (after `select`/`filter`/`shuffle`, e.g. a split) it gathers row by row into one Arrow chunk
    per row, which makes every later compute call crawl (seconds per 100k rows). One `take` over
    the indices mapping gives the same values in a few chunks.
    """
    if name not in dataset.column_names:
        raise ValueError(f"the data set has no {name!r} column (columns: {dataset.column_names})")
    column = dataset.data.column(name)
    indices = getattr(dataset, "_indices", None)  # private, but stable since datasets 1.x
    if indices is not None:
        column = column.take(indices.column(0))
    return column


def column_numpy(dataset: datasets.Dataset, name: str) -> np.ndarray:
    """
    One column as a numpy array, in the data set's row order (see `column_arrow`).

    A numeric column is copied a chunk at a time into an array numpy allocates: Arrow's `to_numpy` of a whole column
    allocates from Arrow's memory pool, which keeps what is freed for the rest of the process (the 80M question
    hashes of a 40M-pair preparation left 600 MB held after their arrays were gone).
    """
    column = column_arrow(dataset, name)
    if column.null_count or not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        return column.to_numpy()
    array = np.empty(len(column), dtype=column.type.to_pandas_dtype())
    start = 0
    for chunk in column.chunks:
        array[start : start + len(chunk)] = chunk.to_numpy()  # a view of the chunk's buffer: no copy in Arrow's pool
        start += len(chunk)
    return array


@dataclass(frozen=True)
class QuestionCodes:
    """The questions of a pair data set numbered 0..count-1, in order of first appearance over
    [question1 column, question2 column]: `codes1[i]`/`codes2[i]` are the two questions of pair i."""

    codes1: np.ndarray
    codes2: np.ndarray
    count: int


def identity_name(dataset: datasets.Dataset) -> str:
    """How `dataset`'s questions are identified: "question ids" or "normalised text"."""
    return "question ids" if set(ID_COLUMNS) <= set(dataset.column_names) else "normalised text"


def fold_text(texts: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """The text identity of questions: stripped, lowercased, runs of whitespace made one space."""
    texts = pc.utf8_trim_whitespace(texts.cast(pa.string()))
    # split + join collapses whitespace runs like a `\s+` regex replace, about twice as fast.
    return pc.utf8_lower(pc.binary_join(pc.utf8_split_whitespace(texts), " "))


def question_keys(dataset: datasets.Dataset, *, normalize: bool = True) -> tuple[pa.ChunkedArray, pa.ChunkedArray]:
    """
    The identity of question1 and question2 of each pair, as strings: the stored key columns when
    present, else ids when present, else the (with `normalize`, folded) text. `normalize=False`
    only matters for text identity: it compares texts as they are.
    """
    if len(dataset) == 0:
        raise ValueError("the data set has no pairs")
    names = dataset.column_names
    has_ids = set(ID_COLUMNS) <= set(names)
    if set(KEY_COLUMNS) <= set(names) and (normalize or has_ids):
        return column_arrow(dataset, KEY_COLUMNS[0]), column_arrow(dataset, KEY_COLUMNS[1])
    if has_ids:
        keys, what = [column_arrow(dataset, name) for name in ID_COLUMNS], "qid1/qid2"
    else:
        missing = [c for c in ("question1", "question2") if c not in names]
        if missing:
            raise ValueError(f"the data set lacks {missing} (columns: {names})")
        keys, what = [column_arrow(dataset, "question1"), column_arrow(dataset, "question2")], "question1/question2"
        if normalize:
            keys = [fold_text(key) for key in keys]
    keys = [key.cast(pa.string()) for key in keys]  # ids may be ints; one type for both sides
    nulls = keys[0].null_count + keys[1].null_count
    if nulls:
        raise ValueError(f"{nulls} null value(s) in {what}: every question needs an identity")
    return keys[0], keys[1]


def with_question_keys(dataset: datasets.Dataset) -> datasets.Dataset:
    """
    `dataset` with its question identity stored as `question1_key`/`question2_key` (unchanged if
    they are there), so that later steps on it, its splits and views read it instead of recomputing.
    The keys describe the texts as they are now: recompute them after rewriting the questions.
    """
    if set(KEY_COLUMNS) <= set(dataset.column_names):
        return dataset
    keys = question_keys(dataset)
    for name, key in zip(KEY_COLUMNS, keys):
        dataset = dataset.add_column(name, key, feature=datasets.Value("string"))
    return dataset


def question_codes(dataset: datasets.Dataset, *, normalize: bool = True) -> QuestionCodes:
    """Number the questions of `dataset` by their identity (see `question_keys`)."""
    key1, key2 = question_keys(dataset, normalize=normalize)
    both = pa.chunked_array(key1.chunks + key2.chunks, type=pa.string())
    codes, uniques = pd.factorize(both.to_pandas(types_mapper=pd.ArrowDtype))
    n = len(dataset)
    return QuestionCodes(codes[:n].astype(np.int64), codes[n:].astype(np.int64), len(uniques))


def first_positions(codes: QuestionCodes) -> np.ndarray:
    """Per question code, where it first appears: an index into [question1 column, question2 column]."""
    both = np.concatenate([codes.codes1, codes.codes2])
    first = np.full(codes.count, -1, dtype=np.int64)
    # reversed assignment leaves the FIRST occurrence's position in place
    first[both[::-1]] = np.arange(len(both))[::-1]
    return first


def question_texts(dataset: datasets.Dataset, positions: np.ndarray) -> pa.ChunkedArray:
    """The question texts at `positions` (indices into [question1 column, question2 column])."""
    both = pa.chunked_array(column_arrow(dataset, "question1").chunks + column_arrow(dataset, "question2").chunks)
    return both.take(pa.array(positions))


def distinct_questions(pairs: datasets.Dataset) -> tuple[list[str], list[str] | None]:
    """
    Each question of a pair data set once, in order of first appearance, as the text of its first
    occurrence, with its id (a string) when the pairs carry `qid1`/`qid2`, else None.
    """
    codes = question_codes(pairs)
    first = first_positions(codes)
    texts = question_texts(pairs, first).to_pylist()
    if identity_name(pairs) != "question ids":
        return texts, None
    key1, key2 = question_keys(pairs)
    return texts, pa.chunked_array(key1.chunks + key2.chunks, type=pa.string()).take(pa.array(first)).to_pylist()


def assign_duplicate_groups(dataset: datasets.Dataset, *, normalize: bool = True) -> datasets.Dataset:
    """
    Add an int64 `group_id` column: pairs in one group share a question up to duplicates.

    Groups are the connected components of the label-1 pairs (transitive closure), silver pairs (a true
    `SILVER_COLUMN`) left out of it. A pair gets its question1's group; for a gold label-1 pair that is also
    question2's group. Ids run 0..G-1 in order
    of first appearance. `normalize` (text identity only) strips, lowercases and collapses
    whitespace before comparing texts; it has no effect when the data set has `qid1`/`qid2`.
    With `normalize`, the question identity is stored too (`with_question_keys`), so that
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


def pair_components(codes: QuestionCodes) -> np.ndarray:
    """
    The connected component of every pair over *all* pairs (duplicates and non-duplicates): the units a leak-free
    split deals out (`hfsiamese.data.splits`), since no question may be seen on two sides.
    """
    return connected_questions(codes.codes1, codes.codes2, codes.count)[codes.codes1]


def connected_questions(rows: np.ndarray, cols: np.ndarray, n_nodes: int) -> np.ndarray:
    """Connected-component label of every question (node) of the undirected graph with the given pairs (edges)."""
    graph = coo_matrix((np.ones(len(rows), dtype=np.int8), (rows, cols)), shape=(n_nodes, n_nodes)).tocsr()
    _, labels = connected_components(graph, directed=False)
    return labels


@dataclass(frozen=True)
class DeduplicationReport:
    """What `deduplicate_pairs` did: rows in, rows removed, and removed rows whose label disagreed."""

    rows: int
    collapsed: int
    conflicting: int
    identity: str  # "question ids" or "normalised text"

    def message(self, source: str) -> str:
        text = (
            f"collapsed {self.collapsed} of {self.rows} row(s) of {source} that repeat an earlier pair "
            f"(same pair or its (question2, question1) mirror; identity by {self.identity}); the first copy is kept"
        )
        if self.conflicting:
            text += (
                f"; {self.conflicting} of the collapsed copies had a different label than the kept first copy "
                f"(label noise: the first copy's label was kept)"
            )
        return text


def deduplicate_pairs(
    dataset: datasets.Dataset, *, source: str = "the data set", warn: bool = True, stacklevel: int = 2
) -> tuple[datasets.Dataset, DeduplicationReport]:
    """
    Keep the first row of every unordered question pair; drop exact repeats and mirrors.

    Identity of a question is `qid1`/`qid2` when present, else its normalised text
    (`question_keys`). When copies disagree on the label, the first copy's label is kept
    (a conflict is label noise; no vote). With `warn`, a `UserWarning` gives the count collapsed,
    the count of conflicting copies and `source`. Row order is kept. The result is a flat Arrow
    data set (no indices mapping), written to the cache next to `dataset`'s files when it has some.
    """
    codes = question_codes(dataset)
    identity = identity_name(dataset)
    n = len(dataset)
    repeat, first_row, pair_codes = repeated_pairs(codes)
    collapsed = int(repeat.sum())
    conflicting = 0
    if collapsed:
        labels = column_numpy(dataset, "label")
        conflicting = int((repeat & (labels != labels[first_row[pair_codes]])).sum())
        dataset = keep_rows(dataset, ~repeat, desc="Collapsing repeated pairs")
    report = DeduplicationReport(rows=n, collapsed=collapsed, conflicting=conflicting, identity=identity)
    if warn and collapsed:
        warnings.warn(report.message(source), UserWarning, stacklevel=stacklevel + 1)
    return dataset, report


def repeated_pairs(codes: QuestionCodes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Which pairs repeat an earlier one (bool per pair), from question codes alone: with the first row of every
    distinct pair and each pair's number (`first_row[pair_codes]` is a pair's first copy). The core of
    `deduplicate_pairs`, which the out-of-core preparation (`hfsiamese.preparation`) calls on its compact arrays.
    """
    codes1, codes2, n_questions = codes.codes1, codes.codes2, codes.count
    n = len(codes1)
    low, high = np.minimum(codes1, codes2), np.maximum(codes1, codes2)
    if n_questions < 3_000_000_000:  # low * n + high fits in int64
        key = low * np.int64(n_questions) + high
        del low, high  # (tens of millions of pairs: freed before the hash table is built)
        pair_codes, _ = first_appearance_codes(key)  # pandas.factorize's codes in bounded memory
        del key
    else:  # pragma: no cover - needs billions of distinct questions
        _, pair_codes = np.unique(np.stack([low, high], axis=1), axis=0, return_inverse=True)
        pair_codes = pd.factorize(pair_codes.ravel())[0]
    # factorize numbers pairs in order of first appearance, so the first rows of the pairs, in
    # order, are the rows where a new code appears: first_row[code] is that pair's first row.
    repeat = np.ones(n, dtype=bool)
    first_row = np.flatnonzero(np.diff(np.maximum.accumulate(pair_codes), prepend=-1) > 0)
    repeat[first_row] = False
    return repeat, first_row, pair_codes


def split_report(splits: datasets.DatasetDict) -> dict[str, dict[str, float]]:
    """
    Size and duplicate rate of each split, and how many questions two splits share (0 for a
    leak-free split). Questions are identified as in `split_by_group`.

    Counted in bounded memory: distinct values are counted a partition at a time (`_distinct_parts`), so that tens of
    millions of questions never sit in one hash table (the whole table and its strings were the peak of a 40M-pair
    preparation: 7 GB); the counts are exact, the same as one table gives.
    """
    report: dict[str, dict[str, float]] = {}
    keys, groups = {}, {}
    for name, split in splits.items():
        label = column_arrow(split, "label")
        if pa.types.is_boolean(label.type):  # (Arrow compares no booleans with 1)
            label = label.cast(pa.int8())
        duplicates = int(pc.sum(pc.equal(label, 1)).as_py() or 0)
        key1, key2 = question_keys(split)
        keys[name] = pa.chunked_array(key1.chunks + key2.chunks, type=pa.string())
        report[name] = {
            "pairs": len(split),
            "duplicates": duplicates,
            "duplicate_rate": duplicates / len(split) if len(split) else 0.0,
            "questions": 0,
        }
        if "group_id" in split.column_names:
            groups[name] = column_arrow(split, "group_id")
    names = list(splits)
    shared = {f"{a}/{b}": 0 for i, a in enumerate(names) for b in names[i + 1 :]}
    for distinct in _distinct_parts(keys, pc.binary_length):  # equal strings have equal lengths
        for i, a in enumerate(names):
            report[a]["questions"] += len(distinct[a])
            for b in names[i + 1 :]:
                smaller, larger = sorted((distinct[a], distinct[b]), key=len)  # the hash table over the smaller
                shared[f"{a}/{b}"] += int(pc.sum(pc.is_in(larger, value_set=smaller)).as_py() or 0)
    for distinct in _distinct_parts(groups, lambda ids: ids):
        for name, values in distinct.items():
            report[name]["duplicate_groups"] = report[name].get("duplicate_groups", 0) + len(values)
    report["shared_questions"] = shared
    return report


def _distinct_parts(
    arrays: dict[str, pa.ChunkedArray], spread: Callable[[pa.Array], pa.Array]
) -> Iterator[dict[str, pa.Array]]:
    """
    The distinct values of each of `arrays`, a partition at a time: the values whose `spread` (an integer per value,
    equal for equal values) falls in one partition, for every array at once, so that values shared by two arrays are
    in the same partition. About 4 million values a partition (one when there are fewer): Arrow's hash tables, which
    copy the values they hold, stay that small.
    """
    total = sum(len(array) for array in arrays.values())
    parts = 1 << max(0, math.ceil(math.log2(max(total, 1) / _VALUES_PER_PART)))
    for part in range(parts):
        yield {
            name: pa.chunked_array(
                [
                    chunk if parts == 1 else chunk.filter(pc.equal(pc.bit_wise_and(spread(chunk), parts - 1), part))
                    for chunk in array.chunks
                ],
                type=array.type,
            ).unique()
            for name, array in arrays.items()
        }
