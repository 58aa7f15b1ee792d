"""
What makes two questions the same question, said once for the whole library.

A question is identified by its id when the pairs carry `qid1`/`qid2`, else by its folded text
(stripped, lowercased, whitespace runs collapsed: "How  do I?" and "how do i?" are one question).
Cleaning, duplicate groups, splits, views, mining, retrieval evaluation and search all ask this
module, so "the same question" means the same thing everywhere.

Folding millions of texts costs seconds, so it is done once per data set: `with_question_keys`
stores the identity as two string columns (`question1_key`, `question2_key`) that `select`,
splits and views carry along, and every later consumer reads them instead of folding again.
Numbering (`question_codes`) stays per data set, in order of first appearance, because groups,
views and splits depend on that order.
"""

from __future__ import annotations

from dataclasses import dataclass

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from hfsiamese.data.arrow_columns import column_arrow

__all__ = [
    "ID_COLUMNS",
    "KEY_COLUMNS",
    "QuestionCodes",
    "distinct_questions",
    "first_positions",
    "fold_text",
    "identity_name",
    "question_codes",
    "question_keys",
    "question_texts",
    "with_question_keys",
]

ID_COLUMNS = ("qid1", "qid2")  # question ids given by the source
KEY_COLUMNS = ("question1_key", "question2_key")  # the identity as stored by `with_question_keys`


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
