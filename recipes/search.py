#!/usr/bin/env python
"""`hfsiamese search` from a clone: `python recipes/search.py ARGS` runs `hfsiamese search ARGS` (the code is `hfsiamese.cli.search`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/search.py ...` too);
`hfsiamese search --help` lists the options.
"""

from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.search import main
from hfsiamese.cpu_policy import apply_command_defaults

if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
