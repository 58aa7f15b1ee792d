#!/usr/bin/env python
"""`hfsiamese export` from a clone: `python recipes/export.py ARGS` runs `hfsiamese export ARGS` (the code is `hfsiamese.cli.export`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/export.py ...` too);
`hfsiamese export --help` lists the options.
"""

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.export import main
from hfsiamese.cpu_policy import apply_command_defaults

if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
