"""`hfsiamese.utils.json_files`: a command's JSON result is strict JSON, whatever a metric was."""

import json
import math

from hfsiamese.utils.json_files import strict_json


def refuse_constants(name: str) -> None:
    raise AssertionError(f"{name} is not JSON")


def test_a_float_that_is_not_finite_is_written_as_null_at_any_depth():
    value = {"ap": math.nan, "nested": {"auc": math.inf, "scores": [1.5, -math.inf, (math.nan, 2)]}, "n": 3, "ok": 0.5}
    text = strict_json(value, sort_keys=True)
    assert json.loads(text, parse_constant=refuse_constants) == {
        "ap": None, "n": 3, "nested": {"auc": None, "scores": [1.5, None, [None, 2]]}, "ok": 0.5,
    }  # fmt: skip
    assert math.isnan(value["ap"])  # the caller's object is left as it was
