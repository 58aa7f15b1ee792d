#!/usr/bin/env python
"""`hfsiamese distill` from a clone: `python recipes/distill.py ARGS` runs `hfsiamese distill ARGS` (the code is `hfsiamese.cli.distill`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/distill.py ...` too);
`hfsiamese distill --help` lists the options.
"""

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.distill import main
from hfsiamese.cpu_policy import apply_command_defaults

if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
