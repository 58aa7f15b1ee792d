"""
Collapsing repeated pairs: a pair that occurs twice (or once as (q1, q2) and once as the mirror
(q2, q1)) is one training example, not two; repeats over-weight it and, after a split, can put the
same pair in train and validation.

Identity of a question is the library's one (`question_ids`: ids when the data set has
`qid1`/`qid2`, else normalised text), so "the same pair" means the same thing everywhere.
Everything is vectorised (pandas factorize + numpy over integer codes); no Python loop per row.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa

from hfsiamese.data.arrow_columns import column_numpy
from hfsiamese.data.question_ids import QuestionCodes, identity_name, question_codes

__all__ = ["DeduplicationReport", "deduplicate_pairs", "repeated_pairs"]


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
    (`hfsiamese.data.question_ids`). When copies disagree on the label, the first copy's label is kept
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
        dataset = _keep_rows(dataset, ~repeat)
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
        pair_codes, _ = pd.factorize(low * np.int64(n_questions) + high)
    else:  # pragma: no cover - needs billions of distinct questions
        _, pair_codes = np.unique(np.stack([low, high], axis=1), axis=0, return_inverse=True)
        pair_codes = pd.factorize(pair_codes.ravel())[0]
    # factorize numbers pairs in order of first appearance, so the first rows of the pairs, in
    # order, are the rows where a new code appears: first_row[code] is that pair's first row.
    repeat = np.ones(n, dtype=bool)
    first_row = np.flatnonzero(np.diff(np.maximum.accumulate(pair_codes), prepend=-1) > 0)
    repeat[first_row] = False
    return repeat, first_row, pair_codes


def _keep_rows(dataset: datasets.Dataset, keep: np.ndarray) -> datasets.Dataset:
    """
    The rows where `keep` is true, as a flat Arrow data set in `dataset`'s format.

    `select` + `flatten_indices` would do, but flattening gathers row by row (minutes for millions
    of rows); a batched Arrow `map` that returns fewer rows filters whole batches, and writes a
    cache file next to `dataset`'s when it has some (memory-mapped, like the input).
    """
    fmt = dataset.format
    kept = dataset.with_format("arrow").map(
        _filter_batch,
        batched=True,
        batch_size=10_000,
        with_indices=True,
        features=dataset.features,
        fn_kwargs={"keep": keep},
        desc="Collapsing repeated pairs",
    )
    return kept.with_format(
        fmt["type"], columns=fmt["columns"], output_all_columns=fmt["output_all_columns"], **fmt["format_kwargs"]
    )


def _filter_batch(batch: pa.Table, indices: list[int], *, keep: np.ndarray) -> pa.Table:
    return batch.filter(pa.array(keep[np.asarray(indices, dtype=np.int64)]))
