"""
Which source columns hold the two questions, the label and the ids, and whether the question
columns really hold text.

The known column sets of Quora/GLUE/MRPC/PAWS files are tried in order unless the caller names
the columns; a numeric column mapped as a question (an id column given by a wrong flag) is caught
here, with a message naming the column, rather than trained on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import datasets
import pyarrow as pa
import pyarrow.compute as pc

from hfsiamese.data.arrow_columns import is_json_type
from hfsiamese.data.formats import TEXT_FORMATS
from hfsiamese.data.question_identity import column_arrow
from hfsiamese.data.readers import root_message

__all__ = [
    "KNOWN_COLUMN_SETS",
    "KNOWN_ID_COLUMNS",
    "check_required_columns",
    "check_arrow_text_type",
    "check_not_all_numbers",
    "check_text_column",
    "check_text_type",
    "resolve_columns",
    "streamed_column_names",
]

# Column sets tried, in order, when the caller names no columns: (question1, question2, label).
KNOWN_COLUMN_SETS: tuple[tuple[str, str, str], ...] = (
    ("question1", "question2", "is_duplicate"),  # Quora / Kaggle / GLUE-QQP files
    ("question1", "question2", "label"),  # GLUE-QQP on the Hub
    ("sentence1", "sentence2", "label"),  # GLUE MRPC/PAWS style
    ("text1", "text2", "label"),
    ("#1 String", "#2 String", "Quality"),  # MRPC original files
)
# Question-id column pairs picked up automatically when present.
KNOWN_ID_COLUMNS: tuple[tuple[str, str], ...] = (("qid1", "qid2"), ("#1 ID", "#2 ID"))

_NUMBER = r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$"


def streamed_column_names(raw: datasets.IterableDataset, source: str) -> list[str]:
    """Column names of a streamed source: from its features, else from its first row."""
    if raw.column_names is not None:
        return list(raw.column_names)
    try:
        first = next(iter(raw.take(1)), None)
    except Exception as err:  # any reader failure: one message naming the source
        raise ValueError(f"cannot read the first row of {source}: {root_message(err)}") from err
    if first is None:
        raise ValueError(f"{source} has no data rows")
    return list(first)


def check_required_columns(rows: datasets.Dataset, wanted: Sequence[str], source: str, hint: str) -> None:
    """A data set lacking a column its reader needs, refused in one wording: the missing and the found columns, `hint`."""
    missing = [name for name in wanted if name not in rows.column_names]
    if missing:
        raise ValueError(f"{source}: missing column(s) {missing} (columns found: {rows.column_names}): {hint}")


def resolve_columns(
    found: list[str],
    source: str,
    kind: str,
    q1: str | None,
    q2: str | None,
    label: str | None,
    id1: str | None,
    id2: str | None,
) -> dict[str, str]:
    """Map output names (question1, question2, label[, qid1, qid2]) to source column names."""
    flags_hint = (
        "name them with --question1_column, --question2_column, --label_column (--id1_column, --id2_column) in the "
        "recipes, or the same names as load_pairs keyword arguments"
    )
    candidates = [(q1 or a, q2 or b, label or c) for a, b, c in KNOWN_COLUMN_SETS]
    chosen = next((c for c in candidates if all(name in found for name in c)), None)
    if chosen is None:
        # Report against the first set, which holds the flags if all three were given.
        missing = [name for name in dict.fromkeys(candidates[0]) if name not in found]
        raise ValueError(
            f"{source}: missing column(s) {missing} (format {kind!r}); columns found: {found}; {flags_hint}"
            + _delimiter_hint(found, kind)
        )
    mapping = {"question1": chosen[0], "question2": chosen[1], "label": chosen[2]}

    if (id1 is None) != (id2 is None):
        raise ValueError(f"{source}: give both id1_column and id2_column, or neither")
    if id1 is not None:
        missing = [name for name in (id1, id2) if name not in found]
        if missing:
            raise ValueError(f"{source}: missing id column(s) {missing}; columns found: {found}; {flags_hint}")
        mapping.update(qid1=id1, qid2=id2)  # type: ignore[arg-type]
    else:
        ids = next((pair for pair in KNOWN_ID_COLUMNS if all(name in found for name in pair)), None)
        if ids is not None and not set(ids) & set(mapping.values()):
            mapping.update(qid1=ids[0], qid2=ids[1])

    used = list(mapping.values())
    if len(set(used)) != len(used):
        raise ValueError(f"{source}: one source column is given two roles: {mapping}")
    return mapping


def _delimiter_hint(found: list[str], kind: str) -> str:
    """A header read as one column usually means the file uses another delimiter than the one read."""
    if kind not in TEXT_FORMATS or len(found) != 1:
        return ""
    read = "\t" if kind in {"tsv", "mrpc", "bimpm"} else ","
    names = {",": "','", "\t": "tab", ";": "';'", "|": "'|'"}
    seen = next((mark for mark in names if mark != read and mark in found[0]), None)
    if seen is None:
        return ""
    fix = {",": "pass format='csv'", "\t": "pass format='tsv'"}.get(
        seen, "only ',' (csv) and tab (tsv) are read: convert it"
    )
    return f". The header was read as one column: the file looks {names[seen]}-separated, not {names[read]}-separated; {fix}"


def check_text_column(raw: datasets.Dataset, name: str, source: str) -> None:
    """Catch a numeric column mapped as a question (e.g. an id column given by a wrong flag)."""
    check_text_type(raw.features[name], name, source)
    check_not_all_numbers(column_arrow(raw, name), name, source)


def check_text_type(feature: Any, name: str, source: str) -> None:
    """A question column's `datasets` feature must be text: numbers, mixed JSON or anything else is a ValueError."""
    dtype = getattr(feature, "dtype", None)
    if dtype in {"string", "large_string"}:
        return
    if dtype is not None and (dtype.startswith(("int", "uint", "float")) or dtype == "bool"):
        raise ValueError(
            f"{source}: column {name!r} holds numbers ({dtype}), not question text; check the column flags"
        )
    if type(feature).__name__ == "Json":
        raise ValueError(
            f"{source}: column {name!r} mixes JSON value types (e.g. numbers and text); questions must be text"
        )
    raise ValueError(f"{source}: column {name!r} must hold text, found {feature}")


def check_arrow_text_type(kind: pa.DataType, name: str, source: str) -> None:
    """`check_text_type` for one streamed batch, from its Arrow type (a batch of nulls passes)."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_null(kind):
        return
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
        raise ValueError(f"{source}: column {name!r} holds numbers ({kind}), not question text; check the column flags")
    if is_json_type(kind):
        raise ValueError(
            f"{source}: column {name!r} mixes JSON value types (e.g. numbers and text); questions must be text"
        )
    raise ValueError(f"{source}: column {name!r} must hold text, found {kind}")


def check_not_all_numbers(column: pa.ChunkedArray | pa.Array, name: str, source: str) -> None:
    """Text columns of numbers only (ids read as text from a csv) are no questions. Read chunk by chunk, up to the
    first text that is not a number: a whole column's trimmed copy would be gigabytes on a file of millions of pairs."""
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    non_empty = 0
    for chunk in chunks:
        trimmed = pc.utf8_trim_whitespace(chunk)
        filled = pc.fill_null(pc.greater(pc.utf8_length(trimmed), 0), False)
        if pc.any(pc.and_(filled, pc.invert(pc.match_substring_regex(trimmed, _NUMBER)))).as_py():
            return  # a question that is not a number
        non_empty += pc.sum(filled).as_py() or 0
    if non_empty:
        raise ValueError(f"{source}: column {name!r} holds numbers only, not question text; check the column flags")
