"""The QQP pairs every benchmark trains and validates on: the recipes' own split, reproduced.

`recipes/train.py` with its defaults splits `recipes/data/qqp_dev.tsv` by connected question
components (validation fraction 0.1, seed 42); the benchmarks take the very same two sides so that
their validation figures compare with the recipe runs, and the validation pairs are never trained on.
"""

from __future__ import annotations

from pathlib import Path

import datasets

from hfsiamese.data import assign_duplicate_groups, load_pairs, split_by_group

QQP_FILE = Path(__file__).resolve().parents[1] / "recipes" / "data" / "qqp_dev.tsv"


def qqp_train_and_validation(
    path: str | Path = QQP_FILE, validation_fraction: float = 0.1, seed: int = 42
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """Training pairs (with `group_id`) and labelled validation pairs, as the default recipe splits them."""
    splits = split_by_group(load_pairs(str(path)), validation_fraction=validation_fraction, seed=seed)
    return assign_duplicate_groups(splits["train"]), splits["validation"]
