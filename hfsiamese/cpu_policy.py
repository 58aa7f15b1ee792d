"""
What hfsiamese may change in its process: nothing for a library user; the measured CPU defaults in its commands.

Three process-wide settings pay on a shared or AMX/AVX512-BF16 CPU, measured by this project's commands
(`benchmarks/README.md`, "Sharing a machine", "encode's precision"):
  * OpenMP's wait policy: `GOMP_SPINCOUNT=3000` (`openmp_defaults`), which libgomp reads once, when torch loads;
  * core sharing: fewer torch threads while other processes keep the cores busy (`utils/core_sharing.py`);
  * `encode`'s precision "auto": bf16 autocast where a timing probe of the model finds it faster
    (`utils/encode_precision.py`).
`encode` gets both through the hook `import hfsiamese` sets on the model classes (`library_hooks`).
They change global state (the environment, torch's thread count, a result's last bits), which no transformers or
sentence-transformers API does, so a library call never applies them: `import hfsiamese` sets nothing, `encode`
runs in float32 with torch's threads as they are, and a `SiameseTrainer` built in user code keeps its threads.

The commands apply them (`apply_command_defaults`); a library user opts in with `set_cpu_policy(share_cores=True,
encode_dtype="auto")`, and for the wait policy, which must precede torch, with `HFSIAMESE_OMP_DEFAULTS=1` in the
environment before `import hfsiamese` (or `GOMP_SPINCOUNT` themselves). `HFSIAMESE_OMP_DEFAULTS=0` keeps the
runtime's spin even in a command.

A command is the process whose main program is one of hfsiamese's: a script in the `recipes/` folder beside this
package (or in a folder of `benchmarks/`, which measure the commands), `python -m hfsiamese.cli...` (or
`-m hfsiamese`), or the `hfsiamese` console script. `import hfsiamese` recognises it from `sys.argv` and
`sys.orig_argv` (`command_program`) and sets the spin there, because `import hfsiamese` loads torch (it registers the
Auto classes, which needs it) and so is the only code that runs before torch loads; everything else is done by the
explicit `apply_command_defaults()` the command makes.

Hand-written: the wait policy must be chosen before any import that loads torch, so this module imports only the
standard library at import time (torch-bound modules are imported inside the functions that need them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from hfsiamese.utils import openmp_defaults

__all__ = ["ENCODE_DTYPES", "apply_command_defaults", "command_program", "current_policy", "set_cpu_policy"]

# What `set_cpu_policy(encode_dtype=...)` takes, besides a torch.dtype: "auto" (measured) or "float32".
ENCODE_DTYPES = ("auto", "float32")
# `python -m <module>` runs a command when the module is one of these or below them.
COMMAND_MODULES = ("hfsiamese", "hfsiamese.cli")
# The console script's name (`[project.scripts]`).
COMMAND_SCRIPT = "hfsiamese"
# Folders of scripts beside the package (in a clone) that run as commands.
COMMAND_FOLDERS = ("recipes", "benchmarks")
_PACKAGE_ROOT = Path(__file__).resolve().parent.parent

_policy: dict[str, Any] = {
    "share_cores": False,
    "encode_dtype": None,
    "remember_speedups": False,
    "reason": "library default: the process is left as it is",
}


def command_program(argv: list[str] | None = None, orig_argv: list[str] | None = None) -> str | None:
    """
    The hfsiamese command this process runs (`recipes/train.py`, `-m hfsiamese.cli.train`, `hfsiamese`), or None
    for any other program (a user's script, `python -c`, a notebook, pytest).
    """
    argv = sys.argv if argv is None else argv
    orig_argv = list(getattr(sys, "orig_argv", []) if orig_argv is None else orig_argv)
    module = _module_run(orig_argv)
    if module is not None:
        is_command = module in COMMAND_MODULES or module.startswith("hfsiamese.cli.")
        return f"-m {module}" if is_command else None
    program = argv[0] if argv else ""
    if not program or program in ("-c", "-"):
        return None
    path = Path(program)
    if path.name in (COMMAND_SCRIPT, f"{COMMAND_SCRIPT}.exe"):
        return COMMAND_SCRIPT
    try:
        resolved = path.resolve()
    except OSError:
        return None
    for folder in COMMAND_FOLDERS:
        # benchmarks/ keeps its scripts one folder down, by subject (benchmarks/training/shared_machine.py)
        parents = (resolved.parent, resolved.parent.parent) if folder == "benchmarks" else (resolved.parent,)
        if resolved.suffix == ".py" and _PACKAGE_ROOT / folder in parents:
            return resolved.relative_to(_PACKAGE_ROOT).as_posix()
    return None


def _module_run(orig_argv: list[str]) -> str | None:
    """The module of `python [options] -m module ...`, or None where the interpreter runs a script or `-c`."""
    position = 1
    while position < len(orig_argv):
        token = orig_argv[position]
        if token in ("-X", "-W"):  # the interpreter's options that take a value
            position += 2
            continue
        if not token.startswith("-") or token in ("-", "--") or token.startswith("--"):
            return None  # the script (its own arguments may say -m)
        if token.endswith("m") and set(token[1:-1]) <= set("bBdEiIOPqsSuvx"):  # -m, or -um
            return orig_argv[position + 1] if position + 1 < len(orig_argv) else ""
        if "c" in token[1:]:
            return None
        position += 1
    return None


def apply_openmp_defaults_at_import() -> str:
    """
    Called by `import hfsiamese` before it loads torch: the wait policy in a command, or where the user asked for it
    (`HFSIAMESE_OMP_DEFAULTS=1`); nothing in any other program. Returns the reason (also `openmp_defaults.describe()`).
    """
    asked = os.environ.get(openmp_defaults.OPT_OUT, "").strip().lower() in {"1", "true", "yes", "on"}
    program = command_program()
    if program is None and not asked:
        return openmp_defaults.leave_unchanged(
            "OpenMP wait policy left as the runtime ships it (a library import; "
            f"{openmp_defaults.OPT_OUT}=1 before importing hfsiamese opts in)"
        )
    return openmp_defaults.apply_openmp_defaults()


def set_cpu_policy(
    share_cores: bool | None = None, encode_dtype: Any = "unchanged", *, reason: str | None = None
) -> dict[str, Any]:
    """
    Opt this process into (or out of) the CPU policies the commands use; returns the policy now in force.

    Args:
        share_cores: True: `encode` on a CPU, and every `SiameseTrainer` whose `share_cores` is unset, use fewer
            threads while other processes keep the cores busy (`HFSIAMESE_SHARE_CORES=0` or a thread count you
            chose, `OMP_NUM_THREADS`, still turn it off); False: never; None: unchanged.
        encode_dtype: what `model.encode(...)` uses when its `dtype` is not given: "auto" (bf16 autocast where a
            probe of the model measures it faster and agreeing, once per model and device), "float32" or None
            (float32, the library default), or a torch dtype; left out: unchanged.
        reason: one phrase for the logs (default: "set_cpu_policy(...)").
    """
    if share_cores is not None and not isinstance(share_cores, bool):
        raise TypeError(f"share_cores must be True, False or None, got {share_cores!r}")
    changed = []
    if share_cores is not None:
        changed.append(f"share_cores={share_cores}")
    if encode_dtype != "unchanged":
        encode_dtype = _check_encode_dtype(encode_dtype)
        changed.append(f"encode_dtype={encode_dtype!r}")
    why = reason or f"set_cpu_policy({', '.join(changed)})"
    if share_cores is not None:
        from hfsiamese.utils import core_sharing
        from hfsiamese.utils.cpu_threads import threads_set_by_user

        _policy["share_cores"] = share_cores
        # A thread count the user chose stays theirs (OMP_NUM_THREADS; accelerate's own default does not count).
        core_sharing.configure(share_cores and not threads_set_by_user(), why)
    if encode_dtype != "unchanged":
        from hfsiamese.utils import encode_precision

        _policy["encode_dtype"] = encode_dtype
        encode_precision.set_default_dtype(encode_dtype)
    _policy["reason"] = why
    return current_policy()


def apply_command_defaults() -> dict[str, Any]:
    """
    The commands' CPU defaults, as measured for them: OpenMP's short spin (made at `import hfsiamese` in a command,
    before torch loads; here too if torch is not loaded yet), core sharing on, `encode`'s precision "auto", and
    measured bf16 speed-ups kept per machine (`measurement_memory`), so `dtype="auto"` and `--bf16 auto` decide
    the same in every run. Every hfsiamese command calls it before it parses its options (their flags,
    `--share_cores false`, `--bf16`, still decide per run). Returns the policy in force.
    """
    if not openmp_defaults.set_here():  # a command `import hfsiamese` did not recognise: set now, or say it is too late
        openmp_defaults.apply_openmp_defaults()
    from hfsiamese.utils import encode_precision
    from hfsiamese.utils.measurement_memory import remember_speedup

    # A measured bf16 speed-up is kept per machine (~/.cache/hfsiamese/bf16_speedups.json): every run decides alike.
    encode_precision.set_speedup_memory(remember_speedup)
    _policy["remember_speedups"] = True
    return set_cpu_policy(share_cores=True, encode_dtype="auto", reason="the commands' default")


def current_policy() -> dict[str, Any]:
    """This process's policy: `share_cores`, `encode_dtype` (None: float32), the OpenMP decision and why it was set."""
    return {**_policy, "openmp": openmp_defaults.describe()}


def _check_encode_dtype(value: Any) -> Any:
    import torch  # loaded already: `import hfsiamese` loads it

    if value is None or value in ("float32", torch.float32):
        return None
    if value == "auto" or isinstance(value, torch.dtype):
        return value
    raise ValueError(f"encode_dtype must be one of {ENCODE_DTYPES}, None or a torch.dtype, got {value!r}")
