"""
Reading labels as int64 0/1 from whatever a pair file holds: ints, floats, booleans, strings
("yes", "duplicate", "non-duplicate", "True", "1.0", ... in any case) or JSON values of mixed
types; anything else is an error that names the value, the row and the column.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from hfsiamese.data.arrow_columns import is_json_type

__all__ = ["NEGATIVE_LABELS", "POSITIVE_LABELS", "invalid_label_error", "labels_to_int"]

POSITIVE_LABELS = ("1", "1.0", "true", "yes", "duplicate")
NEGATIVE_LABELS = ("0", "0.0", "false", "no", "not_duplicate", "not-duplicate", "non_duplicate", "non-duplicate")


def labels_to_int(column: pa.ChunkedArray, source: str, label_source: str) -> tuple[pa.Array, int | None]:
    """Int/float/bool/string/JSON labels as int64 0/1, and the position of the first invalid one (or None)."""
    text = _label_text(column)
    if text is None:
        raise ValueError(f"{source}: label column {label_source!r} has unsupported type {column.type}")
    positive = pc.is_in(text, value_set=pa.array(POSITIVE_LABELS))
    valid = pc.fill_null(pc.or_(positive, pc.is_in(text, value_set=pa.array(NEGATIVE_LABELS))), False)
    first_invalid = None if pc.all(valid).as_py() else pc.index(valid, False).as_py()
    return pc.cast(pc.fill_null(positive, False), pa.int64()), first_invalid


def _label_text(column: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """Labels as lowercased, stripped text (None for a type labels cannot have)."""
    kind = column.type
    if is_json_type(kind):
        # Mixed value types in one JSON column (1, "yes", 0.0) arrive as JSON text: unquote strings.
        storage = pa.chunked_array([chunk.storage for chunk in column.chunks], type=kind.storage_type)
        text = pc.replace_substring_regex(pc.utf8_trim_whitespace(storage), r'^"(.*)"$', r"\1")
    elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
        text = column
    elif pa.types.is_null(kind) or pa.types.is_boolean(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind):
        text = column.cast(pa.string())  # True -> "true", 1.0 -> "1", 1.5 -> "1.5" (rejected below)
    else:
        return None
    return pc.utf8_lower(pc.utf8_trim_whitespace(text))


def invalid_label_error(
    column: pa.ChunkedArray, position: int, where: str, source: str, label_source: str
) -> ValueError:
    """The error for the invalid label at `position` of `column`, found in `where` (e.g. "data row 7")."""
    value = column[position].as_py()
    if is_json_type(column.type):
        value = _label_text(column.slice(position, 1))[0].as_py()
    return ValueError(
        f"{source}: invalid label {value!r} in {where} (column {label_source!r}); "
        f"accepted, in any case: 0/1, true/false, yes/no, duplicate/non-duplicate (or not_duplicate)"
    )
