"""
The `hfsiamese` command and its subcommands (`hfsiamese train`, `hfsiamese evaluate`, ...): `hfsiamese.cli.main`
dispatches, one module per subcommand runs it (`main(argv)`; each also runs as `python -m hfsiamese.cli.<name>`,
e.g. under `accelerate launch -m hfsiamese.cli.train`). The scripts in `recipes/` are thin shims over these modules.

A command applies the measured CPU defaults (`hfsiamese.cpu_policy.apply_command_defaults`) at its entry point:
`hfsiamese.cli.main.main`, and the `__main__` block of each module here and of each recipe shim. Importing this
package changes nothing (tests and user code import the commands' `main` functions in-process). OpenMP's wait
policy, which must be set before torch loads, is set by `import hfsiamese` itself when the program is one of these
commands (`hfsiamese.cpu_policy.command_program`).
"""

from __future__ import annotations

from hfsiamese.cpu_policy import apply_command_defaults

__all__ = ["apply_command_defaults"]
