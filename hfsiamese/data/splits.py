"""
Leak-free train/validation(/test) splits of pair data sets (`split_report`, which checks them, counts shared
questions by their identity: `hfsiamese.data.question_identity`).

The units of a split are the connected components over *all* pairs (duplicates and
non-duplicates), so that no question is seen on two sides: a question in both would leak its
labels, and its embedding, from training into validation.
"""

from __future__ import annotations

import datasets
import numpy as np

from hfsiamese.data.question_identity import QuestionCodes, pair_components, question_codes, with_question_keys
from hfsiamese.utils.deprecation import moved_name_getattr

__all__ = ["check_split_fractions", "deal_components", "split_by_group", "split_codes"]

__getattr__ = moved_name_getattr(__name__)  # `split_report` moved to the question identity


def split_by_group(
    dataset: datasets.Dataset,
    *,
    validation_fraction: float = 0.1,
    test_fraction: float = 0.0,
    seed: int = 42,
) -> datasets.DatasetDict:
    """
    Split into train/validation (and test, when `test_fraction > 0`) so that no question appears
    on two sides.

    The units are the connected components over all pairs (duplicates and non-duplicates). They
    are shuffled with `seed` and dealt to validation, then test, until each holds about its
    fraction of the pairs (a unit larger than that whole share stays in train unless nothing else
    fits). Row order inside each side is kept. Questions are identified as in
    `hfsiamese.data.question_identity` (ids, else normalised text, which merges at least as much as raw
    text, so the split is leak-free for either identity); every side carries that identity along.
    """
    check_split_fractions(validation_fraction, test_fraction)
    dataset = with_question_keys(dataset)
    component = pair_components(question_codes(dataset))
    pair_split = deal_components(
        component, validation_fraction=validation_fraction, test_fraction=test_fraction, seed=seed
    )
    names = ["train", "validation"] + (["test"] if test_fraction > 0 else [])
    indices = {name: np.flatnonzero(pair_split == code) for code, name in enumerate(names)}
    return datasets.DatasetDict({name: dataset.select(idx) for name, idx in indices.items()})


def check_split_fractions(validation_fraction: float, test_fraction: float) -> None:
    """A ValueError naming them, for fractions that leave no validation side or no room for training."""
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be strictly between 0 and 1, got {validation_fraction}")
    if not 0.0 <= test_fraction < 1.0 or validation_fraction + test_fraction >= 1.0:
        raise ValueError(
            f"test_fraction must be in [0, 1) and leave room for training (validation_fraction + test_fraction < 1), "
            f"got validation_fraction={validation_fraction}, test_fraction={test_fraction}"
        )


def split_codes(
    codes: QuestionCodes, *, validation_fraction: float = 0.1, test_fraction: float = 0.0, seed: int = 42
) -> np.ndarray:
    """
    The side of every pair (int8: 0 train, 1 validation, 2 test) from its question codes alone, as `split_by_group`
    deals them: what the out-of-core preparation (`hfsiamese.preparation`) calls on its compact arrays, so that both
    paths make one split. A side left empty is a ValueError.
    """
    return deal_components(
        pair_components(codes), validation_fraction=validation_fraction, test_fraction=test_fraction, seed=seed
    )


def deal_components(
    component: np.ndarray, *, validation_fraction: float = 0.1, test_fraction: float = 0.0, seed: int = 42
) -> np.ndarray:
    """The side of every pair (int8: 0 train, 1 validation, 2 test) from its connected component (`pair_components`):
    the components shuffled with `seed` and dealt to validation, then test. A side left empty is a ValueError."""
    fractions = {"validation": validation_fraction, "test": test_fraction}
    n = len(component)
    units, pair_unit = np.unique(component, return_inverse=True)
    unit_sizes = np.bincount(pair_unit, minlength=len(units))

    order = np.random.default_rng(seed).permutation(len(units))
    # Units bigger than a whole held-out share (a "giant" component) go last, so that they only
    # land there when nothing else can (tiny data sets); otherwise one of them would decide the
    # split size alone.
    largest_target = max(f * n for f in fractions.values() if f > 0)
    order = order[np.argsort(unit_sizes[order] > largest_target, kind="stable")]
    unit_split = np.zeros(len(units), dtype=np.int8)  # 0 = train
    for code, name in enumerate(("validation", "test"), start=1):
        if fractions[name] == 0:
            continue
        remaining = order[unit_split[order] == 0]
        k = _prefix_closest_to(np.cumsum(unit_sizes[remaining]), fractions[name] * n)
        unit_split[remaining[:k]] = code
    pair_split = unit_split[pair_unit]
    names = ["train", "validation"] + (["test"] if test_fraction > 0 else [])
    empty = [name for code, name in enumerate(names) if not (pair_split == code).any()]
    if empty:
        raise ValueError(
            f"cannot split {n} pairs ({len(units)} connected question components, the largest "
            f"{int(unit_sizes.max())} pairs) with validation_fraction={validation_fraction}, "
            f"test_fraction={test_fraction}: {', '.join(empty)} would be empty"
        )
    return pair_split


def _prefix_closest_to(filled: np.ndarray, target: float) -> int:
    """Length of the prefix of units whose cumulative size is closest to `target` (at least 1)."""
    if len(filled) == 0:
        return 0
    k = int(np.searchsorted(filled, target)) + 1
    if k > 1 and abs(filled[k - 2] - target) <= abs(filled[min(k, len(filled)) - 1] - target):
        k -= 1
    return min(k, len(filled))
