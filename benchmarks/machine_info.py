"""The machine a benchmark row was measured on, as the README tables print it."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    """`<cores> cores, <CPU model>` (the model from /proc/cpuinfo where there is one)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}"
