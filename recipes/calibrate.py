#!/usr/bin/env python
"""`hfsiamese calibrate` from a clone: `python recipes/calibrate.py ARGS` runs `hfsiamese calibrate ARGS` (the code is `hfsiamese.cli.calibrate`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/calibrate.py ...` too);
`hfsiamese calibrate --help` lists the options.
"""

from hfsiamese.cli.calibrate import main
from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cpu_policy import apply_command_defaults

if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
