#!/usr/bin/env python
"""`hfsiamese train` from a clone: `python recipes/train.py ARGS` runs `hfsiamese train ARGS` (the code is `hfsiamese.cli.train`).

Kept so that the commands written for the recipes keep working (`accelerate launch recipes/train.py ...` too);
`hfsiamese train --help` lists the options.
"""

from hfsiamese.cli.train import main
from hfsiamese.runs import run_recipe

if __name__ == "__main__":
    run_recipe(main)
