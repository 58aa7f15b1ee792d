"""
CPU threads per process: all the cores a process owns, also under `accelerate launch`.

`accelerate launch` exports `OMP_NUM_THREADS=1` to the script whenever the user has not set it
(its multi-process CPU path alone computes cores ÷ processes), so a single-process launch on a
2-core machine trains on one core. Here the variable counts as the user's only when the launcher
itself was started with it: the launcher's own environment at start (`/proc/<ppid>/environ` on
Linux) tells the two apart. Elsewhere, or when that cannot be read, a set variable is respected.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

logger = logging.getLogger(__name__)

THREAD_VARIABLE = "OMP_NUM_THREADS"
# Set by every `accelerate launch` in the environment of the script it starts.
_LAUNCHER_MARKER = "ACCELERATE_DYNAMO_BACKEND"


@dataclass(frozen=True)
class ThreadChoice:
    """How many threads this process uses, and why (logged by the recipes)."""

    num_threads: int
    reason: str


def available_cores() -> int:
    """Physical cores this process may run on (logical CPUs where the count of physical ones is unknown)."""
    logical = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        import psutil  # a dependency of accelerate

        physical = psutil.cpu_count(logical=False) or logical
    except ImportError:
        physical = logical
    return max(1, min(logical, physical))


def local_process_count() -> int:
    """Processes of this job on this machine, from the variables launchers export (1 when launched alone)."""
    for name in ("LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE"):
        value = os.environ.get(name)
        if value and value.isdigit() and int(value) > 0:
            return int(value)
    return 1


def _launcher_environment() -> dict[str, str] | None:
    """The parent process's environment as it was when it started, or None where it cannot be read."""
    try:
        with open(f"/proc/{os.getppid()}/environ", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    pairs = (entry.split(b"=", 1) for entry in raw.split(b"\0") if b"=" in entry)
    return {key.decode(errors="replace"): value.decode(errors="replace") for key, value in pairs}


def threads_set_by_user() -> bool:
    """Whether `OMP_NUM_THREADS` is the user's own choice rather than a default `accelerate launch` put there."""
    if THREAD_VARIABLE not in os.environ:
        return False
    if _LAUNCHER_MARKER not in os.environ:
        return True  # not under accelerate launch: whoever set it meant it
    parent = _launcher_environment()
    if parent is None:
        return True
    if _LAUNCHER_MARKER in parent:
        # The parent is a process started by accelerate itself (torchrun's agent under --multi_gpu runs in
        # the launcher's process, so this is rare): look one level further up is not possible; respect it.
        return True
    return THREAD_VARIABLE in parent


def choose_cpu_threads(num_threads: int | None = None) -> ThreadChoice:
    """
    The thread count for this process: `num_threads` if given, else the user's `OMP_NUM_THREADS`,
    else the cores this process owns divided by the local processes of the job.
    """
    if num_threads is not None:
        if num_threads < 1:
            raise ValueError(f"num_threads must be at least 1, got {num_threads}")
        return ThreadChoice(num_threads, "--num_threads")
    if threads_set_by_user():
        value = os.environ[THREAD_VARIABLE]
        if value.isdigit() and int(value) > 0:
            return ThreadChoice(int(value), f"{THREAD_VARIABLE}={value} set by the user")
    cores, processes = available_cores(), local_process_count()
    return ThreadChoice(max(1, cores // processes), f"{cores} cores / {processes} local process(es)")


def apply_cpu_threads(num_threads: int | None = None) -> ThreadChoice:
    """Choose (see `choose_cpu_threads`) and set torch's intra-op thread count; returns the choice."""
    import torch

    choice = choose_cpu_threads(num_threads)
    if torch.get_num_threads() != choice.num_threads:
        torch.set_num_threads(choice.num_threads)
    return choice


__all__ = [
    "ThreadChoice",
    "apply_cpu_threads",
    "available_cores",
    "choose_cpu_threads",
    "local_process_count",
    "threads_set_by_user",
]
