"""A Ray this package starts sends no usage statistics unless the user chose to; the caller's environment is kept."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["USAGE_STATS_VARIABLE", "ray_usage_stats_off_unless_chosen"]

USAGE_STATS_VARIABLE = "RAY_USAGE_STATS_ENABLED"


@contextlib.contextmanager
def ray_usage_stats_off_unless_chosen() -> Iterator[None]:
    """
    For a local Ray started inside the block: no usage statistics over the network unless the user chose
    (RAY_USAGE_STATS_ENABLED set, honoured as it is). Ray reads only its environment, which the processes it starts
    inherit, and `ray.init` takes no such argument: the variable is set for the start and removed after, so the
    caller's environment is as it was.
    """
    if USAGE_STATS_VARIABLE in os.environ:
        yield
        return
    os.environ[USAGE_STATS_VARIABLE] = "0"
    try:
        yield
    finally:
        os.environ.pop(USAGE_STATS_VARIABLE, None)
