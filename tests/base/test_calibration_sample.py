"""The calibration sample: seeded, disjoint calibration and held-out pairs, read from a pair file."""

from __future__ import annotations

import pytest

from hfsiamese.base.calibration_sample import read_calibration_sample, split_calibration_sample
from tests.conftest import QQP_FILE

PAIRS = [(f"question {i} ?", f"other question {i} ?") for i in range(10)]


def test_split_is_seeded_and_disjoint():
    sample = split_calibration_sample(PAIRS, calibration_size=6, check_size=3, seed=1)
    assert len(sample.calibration_pairs) == 6 and len(sample.check_pairs) == 3
    assert not set(sample.calibration_pairs) & set(sample.check_pairs)
    assert sample == split_calibration_sample(PAIRS, calibration_size=6, check_size=3, seed=1)
    assert sample != split_calibration_sample(PAIRS, calibration_size=6, check_size=3, seed=2)
    assert len(sample.calibration_texts()) == 12  # both questions of each pair


def test_a_pair_is_always_held_out_and_too_few_pairs_are_refused():
    sample = split_calibration_sample(PAIRS[:3], calibration_size=300, check_size=200)
    assert len(sample.calibration_pairs) == 2 and len(sample.check_pairs) == 1
    with pytest.raises(ValueError, match="1 pair\\(s\\); static int8 needs at least 2"):
        split_calibration_sample(PAIRS[:1])


def test_reads_a_pair_file():
    sample = read_calibration_sample(str(QQP_FILE), calibration_size=20, check_size=10)
    assert len(sample.calibration_pairs) == 20 and len(sample.check_pairs) == 10
    assert all(isinstance(text, str) and text for text in sample.check_texts())
