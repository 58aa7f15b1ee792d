"""
Fewer CPU threads while other processes keep the cores busy, all of them again once the cores are free.

Two runs that each start one thread per core on the same cores are twice oversubscribed: every OpenMP
barrier waits for a partner thread the other run's threads have descheduled. A short spin
(`hfsiamese.utils.openmp_defaults`) ends the worst of it (35× slower each → 2.9×), but a run still pays for
threads it cannot have. `CoreSharing` measures, between steps or batches, how much of this process's
cores *other* processes used over the last second (the cores' busy time from `/proc/stat` minus this
process's own CPU time) and sets torch's thread count to the cores that are left (at least one, at most
the count it started with). It drops at once when the cores are taken, and rises only after the cores
stayed free for a few windows, so two runs settle on one core each instead of taking turns.

Measured (`benchmarks/training/shared_machine.py`, benchmarks/README.md "Sharing a machine"): two whole default LSTM
recipe runs started together each take 1.18× their time alone (2.37× with the short spin only); a run alone
is not slower (the reading costs ~20 µs a second).

Linux only (elsewhere it stays off). Results: a CPU float reduction depends on the thread count, so a run
whose threads changed is not bitwise equal to a run whose threads did not (the differences are rounding).
Off unless the process opted in: hfsiamese's commands do (`hfsiamese.cpu_policy.apply_command_defaults`), a
library user with `hfsiamese.set_cpu_policy(share_cores=True)`; both end up in `configure(True)`. Off, even then,
when the user chose a thread count (`OMP_NUM_THREADS`, `--num_threads`), under `full_determinism`, with
`HFSIAMESE_SHARE_CORES=0`, or `configure(False)` (the recipes' `--share_cores false`). `encode` gets a `CoreSharing`
from the machine policy hfsiamese installs into the model (`hfsiamese.utils.encode_policy`); a checkpoint loaded as
remote code without hfsiamese keeps torch's threads.

Hand-written: no library adapts an OpenMP pool to the load of a shared machine; torch's thread count
can only be changed from the thread that runs the kernels, hence a call between steps, not a monitor thread.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import torch

__all__ = ["CPU_TIMES", "CoreSharing", "available", "configure", "enabled"]

CPU_TIMES = "/proc/stat"
OPT_OUT = "HFSIAMESE_SHARE_CORES"
# A decision needs this many seconds of readings (shorter windows see scheduler noise).
WINDOW_SECONDS = 1.0
# Windows in a row with cores to spare before the thread count rises (it falls after one).
RISE_AFTER = 3
# When a rise is undone within this many windows, the next rise waits twice as long (up to MAX_RISE_AFTER).
MAX_RISE_AFTER = 48

_choice: dict[str, object] = {}


def configure(on: bool, reason: str = "") -> None:
    """Turn core sharing on or off for this process (`hfsiamese.set_cpu_policy`, and a training run for its duration)."""
    _choice.update(on=on, reason=reason)


def configured() -> dict[str, object]:
    """The last `configure` call's choice (`on`, `reason`), empty before any: to put it back after a run."""
    return dict(_choice)


def restore_configuration(choice: dict[str, object]) -> None:
    """Put back a choice read with `configured()`."""
    _choice.clear()
    _choice.update(choice)


def available() -> bool:
    """Whether core sharing can run here at all: not opted out (`HFSIAMESE_SHARE_CORES=0`) and `/proc/stat` readable."""
    opted_out = os.environ.get(OPT_OUT, "").strip().lower() in {"0", "false", "no", "off"}
    return not opted_out and os.path.exists(CPU_TIMES)


def enabled() -> bool:
    """
    Whether `encode` may change threads here: only after `configure(True)` (off by default: a library call leaves
    torch's threads alone; the caller of `configure` has checked that the user chose no thread count), and not
    with `HFSIAMESE_SHARE_CORES=0`.
    """
    return available() and bool(_choice.get("on", False))


def _allowed_cpus() -> set[int]:
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))


def read_cpu_seconds(cpus: set[int], path: str = CPU_TIMES) -> tuple[float, float]:
    """(busy, idle) seconds of `cpus` since boot, from the per-CPU lines of `/proc/stat` (steal counts as busy)."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    busy = idle = 0
    with open(path) as handle:
        for line in handle:
            if not line.startswith("cpu") or line.startswith("cpu "):
                continue
            name, *fields = line.split()
            if not name[3:].isdigit() or int(name[3:]) not in cpus:
                continue
            values = [int(value) for value in fields[:8]]
            # user nice system idle iowait irq softirq steal
            idle += values[3] + values[4]
            busy += values[0] + values[1] + values[2] + values[5] + values[6] + values[7]
    return busy / ticks, idle / ticks


class CoreSharing:
    """
    Adapts torch's intra-op thread count to what other processes leave of the cores; call `update()` between
    steps (cheap: it reads the counters once a second at most) and `restore()` at the end.

    Args:
        max_threads: the thread count the run chose (default: torch's current one); never exceeded.
        cores: the CPUs the threads compete for (default: those in this process's affinity mask); the threads
            wanted are the cores others leave free, rounded.
        read_cpu: `() -> (busy, idle)` seconds of those cores (default: `/proc/stat`); `own_cpu`: this
            process's CPU seconds (default: `time.process_time`); `clock`: wall seconds. Injected in tests.
    """

    def __init__(
        self,
        max_threads: int | None = None,
        *,
        cores: int | None = None,
        read_cpu: Callable[[], tuple[float, float]] | None = None,
        own_cpu: Callable[[], float] = time.process_time,
        clock: Callable[[], float] = time.monotonic,
        set_threads: Callable[[int], None] = torch.set_num_threads,
        get_threads: Callable[[], int] = torch.get_num_threads,
    ) -> None:
        self.start_threads = get_threads()
        self.max_threads = max(1, max_threads if max_threads is not None else self.start_threads)
        cpus = _allowed_cpus()
        self.cores = cores if cores is not None else len(cpus)
        self._read_cpu = read_cpu if read_cpu is not None else (lambda: read_cpu_seconds(cpus))
        self._own_cpu, self._clock = own_cpu, clock
        self._set_threads, self._get_threads = set_threads, get_threads
        self.threads = min(self.start_threads, self.max_threads)
        self.changes: list[tuple[float, int, float]] = []  # (seconds since start, threads, others' cores)
        self._rise_after, self._spare_windows, self._last_rise = RISE_AFTER, 0, None
        self._windows = 0
        self.active = self.max_threads > 1 and self.cores > 1
        self._started = self._clock()
        self._last = self._reading() if self.active else None

    def _reading(self) -> tuple[float, float, float, float]:
        busy, idle = self._read_cpu()
        return self._clock(), busy, idle, self._own_cpu()

    def others(self) -> float | None:
        """Cores other processes used since the last reading, or None while the window is shorter than a second."""
        if not self.active:
            return None
        now = self._clock()
        if now - self._last[0] < WINDOW_SECONDS:
            return None
        reading = self._reading()
        wall, busy, _, own = (new - old for new, old in zip(reading, self._last))
        self._last = reading
        return max(0.0, (busy - own) / wall) if wall > 0 else None

    def update(self) -> int:
        """Read the cores' use if a window has passed and set the thread count; returns the count in force."""
        used_by_others = self.others()
        if used_by_others is None:
            return self.threads
        self._windows += 1
        wanted = max(1, min(self.max_threads, int(self.cores - used_by_others + 0.5)))
        if wanted < self.threads:
            if self._last_rise is not None and self._windows - self._last_rise <= self._rise_after:
                # The last rise took cores back from someone: wait longer before the next one.
                self._rise_after = min(MAX_RISE_AFTER, self._rise_after * 2)
            self._spare_windows = 0
            self._apply(wanted, used_by_others)
        elif wanted > self.threads:
            self._spare_windows += 1
            if self._spare_windows >= self._rise_after:
                self._spare_windows, self._last_rise = 0, self._windows
                self._apply(wanted, used_by_others)
        else:
            self._spare_windows = 0
        return self.threads

    def _apply(self, threads: int, used_by_others: float) -> None:
        self.threads = threads
        self._set_threads(threads)
        self.changes.append((round(self._clock() - self._started, 1), threads, round(used_by_others, 2)))

    def restore(self) -> None:
        """Put the thread count back to what it was when this object was made."""
        if self.active and self._get_threads() != self.start_threads:
            self._set_threads(self.start_threads)
        self.threads = self.start_threads

    def describe(self) -> str:
        """The changes made, for a run's log: 'threads 2→1 at 3.0 s (others 1.02 cores), ...'."""
        if not self.changes:
            return f"threads unchanged ({self.threads})"
        return ", ".join(f"→{threads} at {at} s (others used {load} cores)" for at, threads, load in self.changes)
