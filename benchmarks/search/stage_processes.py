"""A benchmark stage in a process of its own, so that its peak RSS is that stage's alone.

The search benchmarks run each stage (build, search, mine, ...) as `python SCRIPT --stage NAME ...`: the child
prints one JSON line (`emit`), the driver reads it back (`run_stage`).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from benchmarks.common.harness import REPO, emit as emit_row


def peak_rss_mib() -> float:
    """This process's peak resident memory so far, MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def emit(key: str, name: str, /, **values) -> None:
    """The stage's one result line (`{key: name, **values, "peak_rss_mib": ...}`) on stdout."""
    emit_row({key: name, **values, "peak_rss_mib": round(peak_rss_mib(), 1)})


def run_stage(script: str, stage: str, workdir: Path, flags: list[str], *extra: str, **env: str) -> dict:
    """
    `python SCRIPT --stage STAGE --workdir WORKDIR FLAGS EXTRA` offline (plus `env`), from the repository root; its
    one JSON line, echoed. A failed stage ends the benchmark with the end of its stderr.
    """
    environment = dict(
        os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1", **env
    )
    command = [sys.executable, script, "--stage", stage, "--workdir", str(workdir), *flags, *extra]
    result = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=REPO, check=False)
    if result.returncode != 0:
        sys.exit(f"stage {stage} {' '.join(extra)} failed:\n{result.stderr[-4000:]}")
    (row,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    emit_row(row)
    return row
