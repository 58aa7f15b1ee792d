"""Reading a child process's output with a deadline: `readline()` on a pipe waits forever for a child that hangs."""

from __future__ import annotations

import os
import selectors
import subprocess
import time


def lines_until(process: subprocess.Popen, marker: str, timeout: float) -> list[str]:
    """
    The lines `process` writes to its stdout pipe, up to and including the first that starts with `marker`.
    Fails (AssertionError) at `timeout` seconds, or when the process closes its stdout first, saying what it
    wrote; it never blocks past the deadline, as it only reads what `select` says is there.
    """
    deadline = time.monotonic() + timeout
    fd = process.stdout.fileno()
    lines: list[str] = []
    pending = b""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            while b"\n" in pending:
                line, _, pending = pending.partition(b"\n")
                lines.append(line.decode())
                if lines[-1].startswith(marker):
                    return lines
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"no line starting with {marker!r} within {timeout:g} s; the process wrote {lines}"
                )
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, 65536)  # the raw descriptor: what select saw, never Python's buffer
            if not chunk:
                raise AssertionError(
                    f"the process closed its output (exit status {process.poll()}) before a line starting with "
                    f"{marker!r}; it wrote {lines + ([pending.decode()] if pending else [])}"
                )
            pending += chunk
