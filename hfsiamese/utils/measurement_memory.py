"""
Measured bf16 speed-ups kept per machine, so that `dtype="auto"` and `--bf16 auto` decide the same in every process.

A timing probe is not a stable decision: on a 2-core AMX Xeon the same probe measured bf16 faster in one process
and slower in the next, so a sharded encoding restarted in a new process chose another precision than the shards
it resumed, and one command's embeddings differed from its rerun's by ~1e-3. hfsiamese's commands therefore
remember each speed-up the first time it is measured, in one JSON file:

    $XDG_CACHE_HOME/hfsiamese/bf16_speedups.json      (default ~/.cache/hfsiamese/bf16_speedups.json)

keyed by what the ratio depends on: the CPU (model name and a hash of its flags, from /proc/cpuinfo or `platform`),
torch's version, torch's thread count, and the probe (the model's architecture: class and parameter shapes, and
the device; or the training-step probe). Delete the file to measure again (after a BIOS or kernel change, say);
`HFSIAMESE_BF16_SPEEDUP=<ratio>` still pins the ratio instead. Two processes measuring at once keep the first
writer's figure (a lock on the file), so they agree too. A file that cannot be read or written (a read-only home)
only means measuring in every process, as before.

Library code does not use it unless the process opts in (`hfsiamese.cpu_policy.apply_command_defaults`).
`keep_first` and `read_kept` keep other measured decisions the same way in files of their own beside it (the
backend `load_model(..., backend="auto")` chose: `hfsiamese.backend_choice`).

Hand-written: a few lines of JSON under a file lock; platformdirs would only name the folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import platform
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["FILE_NAME", "keep_first", "machine_key", "memory_file", "read_kept", "remember_speedup"]

FILE_NAME = "bf16_speedups.json"


def memory_file() -> Path:
    """Where the speed-ups are kept: `$XDG_CACHE_HOME/hfsiamese/bf16_speedups.json`, by default under ~/.cache."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "hfsiamese" / FILE_NAME


def _cpu_description() -> tuple[str, str]:
    """(CPU model name, sha256 of its flags) from /proc/cpuinfo; `platform`'s processor name elsewhere."""
    name, flags = "", ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and not name:
                    name = value.strip()
                elif key in ("flags", "Features") and not flags:
                    flags = " ".join(sorted(value.split()))
                if name and flags:
                    break
    except OSError:
        pass
    name = name or platform.processor() or platform.machine()
    return name, hashlib.sha256(flags.encode()).hexdigest()[:12]


def machine_key() -> str:
    """The CPU, torch's version and thread count: what a measured ratio holds for."""
    import torch

    name, flags = _cpu_description()
    return f"{name} (flags {flags}) | torch {torch.__version__} | {torch.get_num_threads()} threads"


def remember_speedup(key: str, measure: Callable[[], float], *, path: Path | None = None) -> float:
    """The speed-up kept for `key` on this machine, else `measure()`'s, kept for the next process (first writer wins)."""
    path = memory_file() if path is None else path
    entry = f"{machine_key()} | {key}"
    known = read_kept(path).get(entry)
    if known is not None and isinstance(known.get("speedup"), (int, float)):
        logger.info(
            "bf16 speed-up %.2f× for %s, measured %s (kept in %s)", known["speedup"], key, known["measured"], path
        )
        return float(known["speedup"])
    speedup = measure()
    kept = keep_first(path, entry, {"speedup": round(speedup, 4), "measured": _now()})
    return float(kept["speedup"]) if kept is not None else speedup


def keep_first(path: Path, entry: str, value: dict[str, Any]) -> dict[str, Any] | None:
    """
    Keep `value` under `entry` in the JSON file `path` unless another process kept one first (under a file lock);
    returns what is kept there now, or None where the file cannot be written (the caller uses its own value).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with _locked(path):
            saved = read_kept(path)
            if entry in saved:  # another process measured it meanwhile: agree with it
                return saved[entry]
            saved[entry] = value
            partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
            partial.write_text(json.dumps(saved, indent=1, sort_keys=True) + "\n", encoding="utf-8")
            os.replace(partial, path)
            return value
    except OSError as err:
        logger.debug("could not keep a measurement in %s: %s", path, err)
        return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def read_kept(path: Path) -> dict[str, Any]:
    """The entries kept in `path` (JSON objects); empty where the file is missing or unreadable (measured again)."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(saved, dict):
        return {}
    return {key: value for key, value in saved.items() if isinstance(value, dict)}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `<path>.lock` (POSIX); elsewhere none (the last writer wins)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(path.with_name(path.name + ".lock"), "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
