#!/usr/bin/env python
"""`hfsiamese silver-pairs` from a clone: `python recipes/silver_pairs.py ARGS` runs `hfsiamese silver-pairs ARGS` (the code is `hfsiamese.cli.silver_pairs`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/silver_pairs.py ...` too);
`hfsiamese silver-pairs --help` lists the options.
"""

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.silver_pairs import main
from hfsiamese.cpu_policy import apply_command_defaults

if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
