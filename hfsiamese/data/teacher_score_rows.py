"""
Rows scored by a teacher, for the losses that learn its scores (`margin_mse`, `listwise_kl`): a query, its
positive, its negatives and the teacher's score of the query with each.

The file's columns (JSON lines, JSON or Parquet):

- ``question1``: the query (a text);
- ``question2``: its positive (a text);
- ``negative``: its negatives, a list of texts (or one text: one negative);
- ``teacher_scores``: the teacher's scores, a list of floats ``[score(q, p), score(q, n_1), ..., score(q, n_k)]``,
  the positive's first, then the negatives' in the order of ``negative``.

Every row holds the same number of negatives (and one score more): rows of different lengths are refused.
The `groups-with-scores` layout `hfsiamese mine` / `hfsiamese teacher-scores` write (``query``, ``positive``,
``negatives``, ``teacher_scores``: sentence-transformers' names) is read too, renamed to the columns above.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hfsiamese.data.formats import check_json_file, check_parquet_file
from hfsiamese.data.question_identity import column_arrow, fold_text
from hfsiamese.data.source_columns import check_required_columns

TEACHER_SCORE_ROW_COLUMNS = ("question1", "question2", "negative", "teacher_scores")
# The mined groups' names (hfsiamese.mining.mined_formats) -> the names the training pairs use.
MINED_GROUP_NAMES = {"query": "question1", "positive": "question2", "negatives": "negative"}
_READERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}

__all__ = ["TEACHER_SCORE_ROW_COLUMNS", "load_teacher_score_rows", "refuse_held_out_questions"]


def load_teacher_score_rows(path: str | Path) -> datasets.Dataset:
    """The rows of `path` in `TEACHER_SCORE_ROW_COLUMNS` (other columns dropped); a missing column is a ValueError naming it."""
    source = Path(path)
    reader = _READERS.get(source.suffix.lower())
    if reader is None:
        raise ValueError(f"{source}: teacher-score rows are read from {sorted(_READERS)} files, not {source.suffix!r}")
    if not source.is_file():
        raise FileNotFoundError(f"teacher-score rows: no file {source}")
    (check_parquet_file if reader == "parquet" else check_json_file)(source)  # one line naming it, not a traceback
    rows = datasets.load_dataset(reader, data_files=str(source), split="train")
    if not set(MINED_GROUP_NAMES.values()) & set(rows.column_names):
        rows = rows.rename_columns({old: new for old, new in MINED_GROUP_NAMES.items() if old in rows.column_names})
    check_required_columns(
        rows,
        TEACHER_SCORE_ROW_COLUMNS,
        str(source),
        "teacher-score rows hold question1 (the query), question2 (its positive), negative (a list of texts) and "
        "teacher_scores ([score(q,p), score(q,n1), ...])",
    )
    if len(rows) == 0:
        raise ValueError(f"{source} holds no rows")
    return rows.select_columns(list(TEACHER_SCORE_ROW_COLUMNS))


def refuse_held_out_questions(rows: datasets.Dataset, held_out: Sequence[datasets.Dataset], source: str) -> None:
    """
    A row whose query, positive or a negative is a question of a `held_out` split (validation, test) is a ValueError
    naming their count: training on it would let the validation figures see training data. Texts are compared by
    their folded text (`fold_text`), as the question identity and `hfsiamese mine --held_out_file` compare them: a
    copy that differs only in case or spaces is the same question.
    """
    texts = [column_arrow(split, name) for split in held_out if len(split) for name in ("question1", "question2")]
    if not texts:
        return
    held_texts = pa.chunked_array([chunk for column in texts for chunk in column.chunks], type=pa.string())
    held = fold_text(held_texts).unique()
    leaking = np.zeros(len(rows), dtype=bool)
    for name in ("question1", "question2"):
        leaking |= pc.is_in(fold_text(column_arrow(rows, name)), value_set=held).to_numpy(zero_copy_only=False)
    negatives = column_arrow(rows, "negative")
    if pa.types.is_list(negatives.type):
        owners = pc.list_parent_indices(negatives).to_numpy()
        found = pc.is_in(fold_text(pc.list_flatten(negatives)), value_set=held).to_numpy(zero_copy_only=False)
        leaking[owners[found]] = True
    else:
        leaking |= pc.is_in(fold_text(negatives), value_set=held).to_numpy(zero_copy_only=False)
    if leaking.any():
        raise ValueError(
            f"{int(leaking.sum())} of {len(rows)} teacher-score rows in {source} hold a validation or test question "
            "(by folded text): score rows of this configuration's training split only (its queries, positives and "
            "negatives)"
        )
