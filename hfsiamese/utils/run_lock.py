"""One run per output folder: a lock file naming its owner, so that a second run stops at once.

Two trainings writing into one folder interleave their checkpoints and final saves, and the folder
ends up with a mix of both, or nothing complete. `RunLock` creates `<output_dir>/.hfsiamese-run.lock`
(owner pid, host and start time, as JSON) with O_CREAT | O_EXCL, which the operating system grants
to one process only; a second run meets the file and stops, naming the owner. A lock left by a run
that died (its pid no longer exists on this host) is taken over with a warning; a lock from another
host is never guessed stale, since its pid cannot be checked from here. The file goes when the run ends.

Hand-written: filelock (already installed through datasets) locks a file while a process holds it
open, but records no owner to name in the error, and a stale lock must not be mistaken for a live run.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from transformers.utils import logging

logger = logging.get_logger(__name__)

LOCK_NAME = ".hfsiamese-run.lock"


class OutputDirInUseError(RuntimeError):
    """Another live run holds the output folder's lock."""


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (a zombie — dead, not yet reaped — does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by another user
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    # A killed run's processes stay zombies where nothing reaps them (in a container whose first process
    # does not), and signal 0 still reaches a zombie. Linux names the state in /proc; elsewhere assume alive.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] == "Z"


class RunLock:
    """
    The lock of one run on `output_dir`, as a context manager: `acquire` on entry, `release` on exit.

    `enabled=False` (the launch's other processes) makes it a no-op, so only the process that
    writes the folder takes the lock. A folder the lock created is removed again on release when the run
    left nothing in it (it stopped before writing anything): a failed start leaves no empty folder behind.
    """

    def __init__(self, output_dir: str | os.PathLike, *, enabled: bool = True) -> None:
        self.path = Path(output_dir) / LOCK_NAME
        self.enabled = enabled
        self.held = False
        self.created_folder = False

    def owner(self) -> dict[str, object] | None:
        """The lock file's record, or None when there is none (an unreadable file reads as an unknown owner)."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            record = json.loads(text)
        except json.JSONDecodeError:
            record = None
        return record if isinstance(record, dict) else {}

    def acquire(self) -> None:
        """Take the lock, or raise `OutputDirInUseError` naming the live run that holds it."""
        if not self.enabled or self.held:
            return
        self.created_folder = not self.path.parent.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record = json.dumps(
            {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        )
        for _ in range(2):  # a second try after removing a stale lock
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                self._take_over_if_stale()
                continue
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(record + "\n")
            self.held = True
            return
        raise OutputDirInUseError(f"cannot lock {self.path.parent}: {self.path} keeps reappearing")

    def _take_over_if_stale(self) -> None:
        owner = self.owner()
        if owner is None:
            return  # released meanwhile: try again
        pid, host = owner.get("pid"), owner.get("host")
        here = socket.gethostname()
        if isinstance(pid, int) and host == here and not pid_alive(pid):
            logger.warning(f"taking over {self.path}: the run that held it (pid {pid} on {host}) is no longer running")
            self.path.unlink(missing_ok=True)
            return
        who = f"pid {pid} on {host}" if pid is not None else "an unknown run"
        raise OutputDirInUseError(
            f"output_dir {self.path.parent} is in use by another run ({who}, started {owner.get('started', '?')}): "
            f"wait for it, choose another --output_dir, or delete {self.path} if that run is gone"
        )

    def release(self) -> None:
        """Remove the lock file if this run holds it."""
        if not self.held:
            return
        self.held = False
        owner = self.owner()
        if owner is not None and owner.get("pid") == os.getpid():
            self.path.unlink(missing_ok=True)
        if self.created_folder and self.path.parent.is_dir() and not any(self.path.parent.iterdir()):
            self.path.parent.rmdir()  # only ever an empty folder this run made

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.release()


__all__ = ["LOCK_NAME", "OutputDirInUseError", "RunLock", "pid_alive"]
