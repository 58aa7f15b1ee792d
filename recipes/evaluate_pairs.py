#!/usr/bin/env python
"""`hfsiamese evaluate` from a clone: `python recipes/evaluate_pairs.py ARGS` runs `hfsiamese evaluate ARGS` (the code is `hfsiamese.cli.evaluate`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/evaluate_pairs.py ...` too);
`hfsiamese evaluate --help` lists the options.
"""

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.evaluate import main
from hfsiamese.cpu_policy import apply_command_defaults

if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
