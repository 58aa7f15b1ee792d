"""
The service's log of texts cut at the model's token limit: the first cut is logged, every cut is counted in
`/metrics` (`hfsiamese_truncated_texts_total`), none after the first is logged again. Encoding warns once per call
(`N of M texts were longer than max_length=L tokens and were truncated`), which under load is a line for nearly
every batch holding a long question: the service's log would be those lines.

Installed by `hfsiamese serve` for its own process (`install`), never by the app itself: a library app leaves the
warnings of the process it runs in as they are.
"""

from __future__ import annotations

import re
import threading
import warnings
from collections.abc import Callable
from typing import Any

from hfsiamese.models.siamese.token_fields import TRUNCATED_PATTERN

TRUNCATION = re.compile(TRUNCATED_PATTERN)


class TruncationLog:
    """A `warnings.showwarning` that counts truncation warnings into `count` and shows only the first of them."""

    def __init__(self, count: Callable[[int], None], show: Callable[..., None]) -> None:
        self._count, self._show = count, show
        self._lock = threading.Lock()  # warnings come from the encoding thread and the event loop's
        self.shown = False

    def __call__(self, message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        found = TRUNCATION.search(str(message))
        if found is None:
            self._show(message, category, *args, **kwargs)
            return
        self._count(int(found.group(1)))
        with self._lock:
            first, self.shown = not self.shown, True
        if first:
            note = f"{message} (later cuts are counted in /metrics as hfsiamese_truncated_texts_total, not logged)"
            self._show(category(note), category, *args, **kwargs)


def install(count: Callable[[int], None]) -> TruncationLog:
    """Route this process's truncation warnings through a `TruncationLog` (each one seen: `"always"` for them)."""
    log = TruncationLog(count, warnings.showwarning)
    warnings.filterwarnings("always", message=TRUNCATION.pattern, category=UserWarning)
    warnings.showwarning = log
    return log


__all__ = ["TRUNCATION", "TruncationLog", "install"]
