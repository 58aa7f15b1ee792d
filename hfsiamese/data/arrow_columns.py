"""What a `datasets.Dataset` column holds: how many distinct values, and which Arrow types a source gave.

Reading a whole column fast (`column_arrow`, `column_numpy`) is the question identity's
(`hfsiamese.data.question_identity`), which reads the question columns more than anything else.
"""

from __future__ import annotations

import datasets
import pyarrow as pa
import pyarrow.compute as pc

from hfsiamese.data.question_identity import column_arrow as _column_arrow
from hfsiamese.utils.deprecation import moved_name_getattr

__all__ = ["distinct_count", "is_json_type"]

__getattr__ = moved_name_getattr(__name__)  # `column_arrow`, `column_numpy` moved to the question identity


def distinct_count(dataset: datasets.Dataset, name: str) -> int:
    """How many distinct values one column holds (Arrow's hash-based count: no Python object per row)."""
    return int(pc.count_distinct(_column_arrow(dataset, name)).as_py())


def is_json_type(kind: pa.DataType) -> bool:
    """Arrow's JSON extension type: what `datasets` gives a JSON column whose values mix types."""
    return getattr(kind, "extension_name", None) == "arrow.json"
