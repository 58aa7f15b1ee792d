"""`first_appearance_codes` gives pandas.factorize's codes exactly, however many parts share the work."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hfsiamese.data.first_appearance import first_appearance_codes


@pytest.mark.parametrize("parts", [None, 1, 2, 8, 64])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint64, np.uint16])
def test_the_codes_are_factorize_codes(parts, dtype):
    rng = np.random.default_rng(0)
    for trial in range(12):
        n = int(rng.integers(0, 3000))
        high = int(rng.choice([3, 50, 10**6, np.iinfo(dtype).max // 2]))
        low = 0 if np.dtype(dtype).kind == "u" else -high
        values = rng.integers(low, high, n, endpoint=True).astype(dtype)
        codes, count = first_appearance_codes(values, parts=parts)
        want, uniques = pd.factorize(values)
        assert np.array_equal(codes, want) and count == len(uniques), (trial, n, high)
        assert codes.dtype == np.int32


def test_hashes_of_tens_of_thousands_in_many_parts():
    """Uniform 64-bit values (question hashes), repeated and shuffled, through the default part size made small."""
    rng = np.random.default_rng(1)
    distinct = rng.integers(0, 2**63, 20_000, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    values = distinct[rng.integers(0, len(distinct), 60_000)]
    codes, count = first_appearance_codes(values, parts=32)
    want, uniques = pd.factorize(values)
    assert np.array_equal(codes, want) and count == len(uniques)


def test_refusals():
    with pytest.raises(ValueError, match="numbers integers"):
        first_appearance_codes(np.array([0.5, 1.5]))
    with pytest.raises(ValueError, match="power of two"):
        first_appearance_codes(np.arange(5), parts=3)
