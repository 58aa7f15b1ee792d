"""
The `hfsiamese` command and its subcommands (`hfsiamese train`, `hfsiamese evaluate`, ...): `hfsiamese.cli.main`
dispatches, one module per subcommand runs it (`main(argv)`; each also runs as `python -m hfsiamese.cli.<name>`,
e.g. under `accelerate launch -m hfsiamese.cli.train`). The scripts in `recipes/` are thin shims over these modules.

Importing this package applies the commands' machine defaults (`apply_command_defaults`): every command enters
through it (`hfsiamese <sub>`, `python -m hfsiamese.cli.<name>`, `recipes/<x>.py`), before torch is loaded.
"""

from __future__ import annotations

__all__ = ["apply_command_defaults"]


def apply_command_defaults() -> None:
    """
    The machine policy a command applies and a library user does not get unasked: today the OpenMP wait policy
    (`hfsiamese.openmp_defaults`, which must run before torch loads), exactly as `import hfsiamese` applies it.
    THE single place the commands apply their defaults: a policy that belongs to the commands is added here.
    """
    from ..openmp_defaults import applied, apply_openmp_defaults

    if applied() is None:  # once per process: a second call would take the first one's setting for the user's
        apply_openmp_defaults()


# The one call site: every command imports this package before its own modules (and before torch, as far as
# `hfsiamese/__init__.py` leaves torch unloaded).
apply_command_defaults()
