"""Recipes as commands: an error is one line `error: <message>` on stderr and an exit status, not a traceback.

Every recipe ends with `run_recipe(main)`. A user who mistypes a flag or points at a bad file reads one
line naming the problem (exit status 2 for a command-line mistake, 1 for anything else); `--debug` on
the command line or `HFSIAMESE_DEBUG=1` shows the full traceback instead.

Under `accelerate launch` a recipe still runs as a child of the launcher, which adds its own report
whenever the child exits non-zero: `accelerate launch -q` silences it for one process (accelerate's
simple launcher then exits with status 1 without a traceback); with several processes torch's elastic
agent always prints a `ChildFailedError` summary. Only the first process prints the error line, so a
failure every process meets is reported once.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO

DEBUG_FLAG = "--debug"
DEBUG_ENV = "HFSIAMESE_DEBUG"
EXIT_ERROR = 1
EXIT_USAGE = 2  # argparse's status for a command-line mistake
EXIT_INTERRUPTED = 130  # the shell's status for Ctrl-C


class UsageError(ValueError):
    """A mistake on the command line or in a recipe config (unknown flag or key, bad value): exit status 2."""


def debug_requested(argv: Sequence[str] | None = None) -> bool:
    """`--debug` among the arguments, or HFSIAMESE_DEBUG set to a true value."""
    argv = sys.argv[1:] if argv is None else argv
    return DEBUG_FLAG in argv or os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def error_line(err: BaseException) -> str:
    """The error as one line: its message, whitespace collapsed; an OSError as `path: reason`."""
    if isinstance(err, OSError) and err.strerror and err.filename is not None:
        message = f"{err.filename}: {err.strerror}"
    else:
        message = str(err) or type(err).__name__
        if isinstance(err, KeyError) and len(err.args) == 1 and isinstance(err.args[0], str):
            message = err.args[0]  # str(KeyError) quotes its message
    return "error: " + " ".join(message.split())


def one_line_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, line: str | None = None
) -> str:
    """A warning as `warning: <message>`: the source line Python adds would be the recipe's, not the user's."""
    return f"warning: {' '.join(str(message).split())}\n"


def is_first_process() -> bool:
    """Whether this is the launch's first process (RANK as torchrun/accelerate set it; a lone process is)."""
    return os.environ.get("RANK", "0") in ("", "0")


def run_recipe(main: Callable[[], Any], *, stderr: TextIO | None = None) -> NoReturn:
    """
    Run a recipe's `main()` as a command and exit: 0 when it returns, 1 with `error: <message>` on
    stderr when it raises, 2 for a `UsageError`, 130 on Ctrl-C. `--debug` (removed from `sys.argv`
    before `main` parses it) or HFSIAMESE_DEBUG=1 lets the exception through with its traceback.
    """
    debug = debug_requested()
    if DEBUG_FLAG in sys.argv[1:]:
        sys.argv = [arg for arg in sys.argv if arg != DEBUG_FLAG]
    if not debug:
        warnings.formatwarning = one_line_warning
    try:
        main()
    except SystemExit:
        raise  # argparse's --help, or an exit the recipe chose itself
    except BaseException as err:
        if debug:
            raise
        if isinstance(err, KeyboardInterrupt):
            status, line = EXIT_INTERRUPTED, "error: interrupted"
        else:
            status, line = ((EXIT_USAGE if isinstance(err, UsageError) else EXIT_ERROR), error_line(err))
        if is_first_process():
            stream = stderr if stderr is not None else sys.stderr
            print(line, file=stream, flush=True)
        sys.exit(status)
    sys.exit(0)


__all__ = [
    "DEBUG_ENV",
    "DEBUG_FLAG",
    "UsageError",
    "debug_requested",
    "error_line",
    "is_first_process",
    "one_line_warning",
    "run_recipe",
]
