"""The recipe's data split, for benchmarks: computed by `recipes/train.py`'s own `load_data`.

The benchmarks train and validate on exactly the pairs a recipe does (by default
`recipes/configs/lstm_qqp.yaml`: the embedded QQP pairs split by connected question components,
validation fraction 0.1, seed 42), so their validation figures compare with the recipe runs and
the validation pairs are never trained on.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import datasets

REPO = Path(__file__).resolve().parents[1]
TRAIN_RECIPE = REPO / "recipes" / "train.py"
DEFAULT_CONFIG = REPO / "recipes" / "configs" / "lstm_qqp.yaml"


def load_train_recipe() -> ModuleType:
    """recipes/train.py as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location("hfsiamese_train_recipe", TRAIN_RECIPE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def recipe_splits(config: str | Path = DEFAULT_CONFIG) -> datasets.DatasetDict:
    """The splits `recipes/train.py` makes from the data keys of `config`."""
    from hfsiamese.cli_args import read_config_file

    recipe = load_train_recipe()
    data_keys = {f.name for f in dataclasses.fields(recipe.DataArguments)}
    data_args = recipe.DataArguments(**{k: v for k, v in read_config_file(str(config)).items() if k in data_keys})
    return recipe.load_data(data_args)


def qqp_train_and_validation(config: str | Path = DEFAULT_CONFIG) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Training pairs (with `group_id`) and labelled validation pairs, as the recipe splits them."""
    splits = recipe_splits(config)
    return splits["train"], splits["validation"]
