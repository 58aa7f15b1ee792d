"""Reading a small JSON record that a folder keeps about itself (a manifest, a config), with the errors a user can act on;
writing a command's JSON result as strict JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def read_json_record(
    file: Path, required_keys: Sequence[str], *, kind: str, remedy: str, remedy_if_incomplete: bool = True
) -> dict[str, Any]:
    """
    The JSON object in `file`, checked to hold `required_keys`: a one-line `ValueError` naming the file for
    text that is not JSON ("corrupted", then `remedy`) and for an object without those keys ("is not `kind`",
    the keys missing, then `remedy` unless `remedy_if_incomplete` is False).
    """
    try:
        record = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{file} is corrupted (not valid JSON: {err}); {remedy}") from err
    missing = [key for key in required_keys if not isinstance(record, dict) or key not in record]
    if missing:
        raise ValueError(f"{file} is not {kind}: missing {missing}" + (f"; {remedy}" if remedy_if_incomplete else ""))
    return record


def strict_json(value: Any, **dumps_options: Any) -> str:
    """`value` as strict JSON text: a float that is not finite (a metric undefined on these pairs: NaN) is `null`.
    Python's `json.dumps` writes `NaN`, which `jq`, JavaScript's `JSON.parse` and most other readers refuse."""
    return json.dumps(_finite_or_null(value), allow_nan=False, **dumps_options)


def _finite_or_null(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_null(item) for item in value]
    return value
