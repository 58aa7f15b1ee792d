"""
OpenMP's wait policy, chosen before torch starts its thread pool: two runs sharing a machine must not collapse.

PyTorch's CPU kernels run on GNU OpenMP, whose worker threads spin (busy-wait) for about 300,000
iterations at every barrier before they sleep. A run alone gains from it: a thread is ready the
moment the next kernel starts. Two runs each using every core lose everything: a thread spins on a
core while the partner it waits for is descheduled, so every barrier costs a time slice. Measured
with two default LSTM recipe runs of 60 steps on 2 cores (`benchmarks/training/shared_machine.py`,
benchmarks/README.md "Sharing a machine"): 12.4 s alone, 430 s each together (35×);
`OMP_WAIT_POLICY=PASSIVE` (no spinning) ends the collapse but makes a lone run 50–70% slower. A spin
of 3,000 iterations costs a lone run about 6% and takes 2.6× (300 steps) to 2.9× (the whole default
run: 140 s alone, 400 s each together) instead of 35×; 1,000 shares better (1.45× at 300 steps) but
makes a lone run 34% slower; 10,000 or more collapse again (3.4× at 10,000, 20× at 100,000 for 60 steps).
No single spin gives both a lone run's speed and 2× together: the spin ends the collapse, and core sharing
(`hfsiamese/utils/core_sharing.py`: fewer threads while another process holds the cores) does the rest
(1.18× for two whole default runs).

So, in hfsiamese's commands, before torch is imported, `GOMP_SPINCOUNT` is set to `SPIN_COUNT`, unless the user
set it, or `OMP_WAIT_POLICY` (then theirs wins), or `HFSIAMESE_OMP_DEFAULTS=0`. libgomp reads it once, when it is
loaded: after `import torch` it is too late, and `applied()` says so (the recipes log it). A library import leaves
it alone unless `HFSIAMESE_OMP_DEFAULTS=1` asks for it (`hfsiamese.cpu_policy` decides which process is a command).

Hand-written: the setting must be made before any import that loads torch, so it cannot live in a
library that does; the environment variables are libgomp's own (documented in the GCC manual).
"""

from __future__ import annotations

import os
import sys

__all__ = ["OPT_OUT", "SPIN_COUNT", "applied", "apply_openmp_defaults", "describe", "leave_unchanged"]

# Spin iterations before a waiting OpenMP thread sleeps (libgomp's default: 300,000). Chosen by
# benchmarks/training/shared_machine.py: see the module docstring and benchmarks/README.md.
SPIN_COUNT = 3000
OPT_OUT = "HFSIAMESE_OMP_DEFAULTS"
_USER_SETTINGS = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")

_state: dict[str, str] = {}


def apply_openmp_defaults(environ: dict[str, str] | None = None, *, torch_loaded: bool | None = None) -> str:
    """
    Set `GOMP_SPINCOUNT` where nobody has chosen a wait policy and torch is not loaded yet; returns why
    it was or was not set (one phrase, for the run's log).
    """
    environ = os.environ if environ is None else environ
    torch_loaded = "torch" in sys.modules if torch_loaded is None else torch_loaded
    given = [name for name in _USER_SETTINGS if environ.get(name)]
    if environ.get(OPT_OUT, "").strip().lower() in {"0", "false", "no", "off"}:
        reason = f"OpenMP wait policy left as the runtime ships it ({OPT_OUT}=0)"
    elif given:
        reason = "OpenMP wait policy set by the user: " + ", ".join(f"{name}={environ[name]}" for name in given)
    elif torch_loaded:
        reason = "OpenMP wait policy not set: torch was imported before hfsiamese (set GOMP_SPINCOUNT yourself)"
    else:
        environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)
        if environ is os.environ:
            _state["set"] = "yes"
        reason = f"GOMP_SPINCOUNT={SPIN_COUNT}: OpenMP threads spin briefly, so runs sharing the cores do not collapse"
    if environ is os.environ:
        _state["reason"] = reason
    return reason


def leave_unchanged(reason: str) -> str:
    """Record that this process keeps the runtime's wait policy, and why (for `describe`)."""
    _state["reason"] = reason
    return reason


def set_here() -> bool:
    """Whether `apply_openmp_defaults` set `GOMP_SPINCOUNT` in this process's environment."""
    return "set" in _state


def applied() -> str | None:
    """What `apply_openmp_defaults` decided in this process (None before it ran)."""
    return _state.get("reason")


def describe() -> str:
    """The decision as the recipes log it."""
    return applied() or "OpenMP wait policy not chosen by hfsiamese"
