"""
Renamed options, kept one release under their old name with a FutureWarning that names the new one.

An argument dataclass keeps the old field (default None, its help saying "deprecated: use --new") and
calls `renamed_option` from `__post_init__`; the old attribute then reads the same value as the new one,
so code that still reads it keeps working until it is removed.
"""

from __future__ import annotations

import warnings
from typing import Any

__all__ = ["renamed_option", "warn_renamed"]


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """The FutureWarning for a renamed option (`--method` -> `--calibration_method`)."""
    warnings.warn(
        f"{old} is renamed {new}; {old} will be removed in the next release", FutureWarning, stacklevel=stacklevel
    )


def renamed_option(args: Any, old: str, new: str) -> None:
    """
    Move a value given under the old field name `old` to `new` (with a FutureWarning), and let `old`
    read the value of `new`. Given under both names, with different values, is an error.
    """
    value, current = getattr(args, old), getattr(args, new)
    if value is not None and value != current:
        default = type(args).__dataclass_fields__[new].default
        if current != default:
            raise ValueError(f"--{old} (deprecated) and --{new} give different values: pass --{new} only")
        warn_renamed(f"--{old}", f"--{new}", stacklevel=5)  # the code that made `args`
        setattr(args, new, value)
    setattr(args, old, getattr(args, new))
