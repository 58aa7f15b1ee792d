"""Put on PYTHONPATH by the README and docs tests: a command that makes hfsiamese warn of a deprecation says so on stderr.

A page that shows a deprecated option (`--method platt`) still runs, with a FutureWarning the test used to pass over;
the test fails instead when it finds `MARKER` in a command's stderr. A warning counts when the code calling
`warnings.warn` is hfsiamese's own (not where the warning is attributed: a renamed option's points into transformers'
argument parser), so third-party deprecations stay out. `python_block_deprecations` does the same in the test's process.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import Any

MARKER = "hfsiamese-deprecation-warning:"
_warn = warnings.warn


def is_hfsiamese_deprecation(message: Any, category: type[Warning] | None, caller_module: str) -> bool:
    kind = category or (type(message) if isinstance(message, Warning) else UserWarning)
    return issubclass(kind, (FutureWarning, DeprecationWarning)) and caller_module.split(".")[0] == "hfsiamese"


def _reporting_warn(found: list[str] | None) -> Any:
    def warn(
        message: Any, category: type[Warning] | None = None, stacklevel: int = 1, *args: Any, **kwargs: Any
    ) -> None:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if is_hfsiamese_deprecation(message, category, caller):
            if found is None:
                sys.stderr.write(f"{MARKER} {message}\n")
            else:
                found.append(str(message))
        _warn(message, category, stacklevel + 1, *args, **kwargs)

    return warn


@contextlib.contextmanager
def python_block_deprecations() -> Iterator[list[str]]:
    """The hfsiamese deprecation warnings of the code run inside, whatever the warning filters say."""
    found: list[str] = []
    warnings.warn = _reporting_warn(found)
    try:
        yield found
    finally:
        warnings.warn = _warn


if __name__ == "sitecustomize":
    warnings.warn = _reporting_warn(None)
