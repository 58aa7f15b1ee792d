"""`distinct_count` counts as a Python set does, through its marks (small integer ranges) and through Arrow."""

from __future__ import annotations

import datasets
import numpy as np
import pytest

from hfsiamese.data.arrow_columns import distinct_count


@pytest.mark.parametrize(
    "values",
    [
        [0, 0, 3, 5, 3],  # a small range: marks
        list(np.random.default_rng(0).integers(0, 1000, 5000)),
        [-1, 2, 2],  # negative: Arrow
        [10**12, 5],  # a range far wider than the rows: Arrow
        [1.5, 2.5, 1.5],
        ["a", "b", "a"],
    ],
)
def test_the_count_is_a_sets(values):
    pairs = datasets.Dataset.from_dict({"group_id": values})
    assert distinct_count(pairs, "group_id") == len(set(values))
    rows = [len(values) - 1, 0, 1]  # through an indices mapping (a selection)
    assert distinct_count(pairs.select(rows), "group_id") == len({values[i] for i in rows})
