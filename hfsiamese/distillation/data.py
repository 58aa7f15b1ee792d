"""Stage 1's rows: pairs whose texts the teacher embedded, each side pointing at its teacher vector."""

from __future__ import annotations

import datasets
import numpy as np
import pandas as pd

from hfsiamese.data.views import group_pairs, labelled_pairs
from hfsiamese.distillation.collator import TEACHER_ROW_COLUMNS
from hfsiamese.distillation.teacher import TeacherEmbeddings

__all__ = ["distillation_pairs", "with_teacher_rows"]

TEXT_COLUMNS = ("question1", "question2")


def distillation_pairs(
    train_pairs: datasets.Dataset,
    *,
    include_group_pairs: bool = True,
    max_pairs_per_group: int | None = None,
    seed: int = 0,
) -> datasets.Dataset:
    """
    The pairs stage 1 learns the teacher on: every labelled training pair, duplicate or not (so every
    training question, and QQP's same-topic non-duplicates, whose scores matter most), and with
    `include_group_pairs` every pair within a duplicate group (`group_pairs`), each unordered pair
    once. Columns: question1, question2. Labels are left out: the teacher's scores are the targets.
    """
    parts = [labelled_pairs(train_pairs).select_columns(list(TEXT_COLUMNS)).to_pandas()]
    if include_group_pairs:
        grouped = group_pairs(train_pairs, max_pairs_per_group=max_pairs_per_group, seed=seed)
        parts.append(grouped.select_columns(list(TEXT_COLUMNS)).to_pandas())
    pairs = pd.concat(parts, ignore_index=True)
    first, second = pairs["question1"].to_numpy(dtype=object), pairs["question2"].to_numpy(dtype=object)
    swap = first > second
    unordered = pd.DataFrame({"low": np.where(swap, second, first), "high": np.where(swap, first, second)})
    pairs = pairs[~unordered.duplicated().to_numpy()]
    return datasets.Dataset.from_pandas(pairs, preserve_index=False)


def with_teacher_rows(pairs: datasets.Dataset, teacher: TeacherEmbeddings) -> datasets.Dataset:
    """`pairs` with `teacher_row_a`/`teacher_row_b`: the row of each side's text in `teacher.vectors`."""
    for column, text_column in zip(TEACHER_ROW_COLUMNS, TEXT_COLUMNS, strict=True):
        rows = teacher.rows_of(pairs[text_column])
        if column in pairs.column_names:
            pairs = pairs.remove_columns(column)
        pairs = pairs.add_column(column, rows, feature=datasets.Value("int64"))
    return pairs
