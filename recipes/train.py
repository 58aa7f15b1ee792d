#!/usr/bin/env python
"""`hfsiamese train` from a clone: `python recipes/train.py ARGS` runs `hfsiamese train ARGS` (the code is `hfsiamese.cli.train`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/train.py ...` too);
`hfsiamese train --help` lists the options.
"""

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.train import main
from hfsiamese.cpu_policy import apply_command_defaults

if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
