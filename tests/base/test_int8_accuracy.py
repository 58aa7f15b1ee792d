"""The static int8 accuracy bar: refused past it by default, a warning when asked, bad bars refused."""

from __future__ import annotations

import pytest

from hfsiamese.base.int8_accuracy import Int8AccuracyCheck, Int8AccuracyError


def test_refuses_below_the_cosine_bar_and_passes_at_it():
    check = Int8AccuracyCheck(min_cosine=0.995)
    check.judge_cosine(0.995, 10)
    with pytest.raises(Int8AccuracyError, match=r"10 held-out texts have a mean cosine of 0\.994000 .* not writing it"):
        check.judge_cosine(0.994, 10)


def test_refuses_above_the_score_bar():
    check = Int8AccuracyCheck(max_score_diff=0.01)
    check.judge_score_diff(0.01, 5)
    with pytest.raises(Int8AccuracyError, match=r"5 held-out pairs differ .* by 0\.020000 on average"):
        check.judge_score_diff(0.02, 5)


def test_warns_instead_when_asked():
    check = Int8AccuracyCheck(min_cosine=0.999, on_failure="warn")
    with pytest.warns(UserWarning, match="below int8_min_cosine=0.999; writing it as asked"):
        check.judge_cosine(0.9, 3)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on_failure": "ignore"}, "int8_on_failure must be one of"),
        ({"min_cosine": 1.5}, "int8_min_cosine is a cosine"),
        ({"max_score_diff": -0.1}, "int8_max_score_diff is a score difference"),
    ],
)
def test_bad_bars_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        Int8AccuracyCheck(**options)
