#!/usr/bin/env python
"""`hfsiamese app` from a clone: `python recipes/app.py ARGS` runs `hfsiamese app ARGS` (the code is `hfsiamese.cli.app`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/app.py ...` too);
`hfsiamese app --help` lists the options.
"""

from hfsiamese.cli.app import main
from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cpu_policy import apply_command_defaults

if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
