"""A group threshold calibrated on labelled pairs (`hfsiamese.search.groups.threshold_fitting`): the bar that decides
them best by "same group", on the constructed chain of `group_vectors`."""

from __future__ import annotations

import pytest

from hfsiamese.search import DuplicateIndex
from hfsiamese.search.groups.threshold_fitting import fit_group_threshold
from tests.search.group_vectors import THRESHOLD, corpus, model
from tests.search.test_groups import texts_of

ROW = {text: row for row, text in enumerate(corpus())}


def labelled(*pairs: tuple[str, str, int]) -> tuple[list[int], list[int], list[int]]:
    return [ROW[a] for a, _, _ in pairs], [ROW[b] for _, b, _ in pairs], [label for _, _, label in pairs]


def test_the_bar_that_decides_the_labelled_pairs_best_is_chosen():
    index = DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD)
    # chain c is labelled a duplicate of chain a (its mean cosine to {a, b} is 0.58), chain d of neither
    pairs = labelled(("chain a", "chain c", 1), ("python 1", "python 3", 1), ("chain a", "chain d", 0),
                     ("sky 1", "loner", 0))  # fmt: skip
    fit = fit_group_threshold(index, *pairs, candidates=[0.5, 0.55, 0.8])
    assert fit.group_threshold == 0.55  # 0.5 decides as well, 0.8 cuts chain c: the tie goes to the nearer bar
    assert [row["accuracy"] for row in fit.candidates] == [1.0, 1.0, 0.75]
    groups = index.find_groups(group_threshold=fit.group_threshold)
    assert ["chain a", "chain b", "chain c"] in texts_of(index, groups) and ["chain d"] in texts_of(index, groups)
    assert groups.settings.group_threshold == 0.55 and groups.settings.threshold == THRESHOLD


def test_a_largest_group_cap_passes_over_the_bars_that_exceed_it():
    index = DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD)
    pairs = labelled(("chain a", "chain d", 1), ("sky 1", "loner", 0))  # at 0.2 the whole chain of 4 is one group
    assert fit_group_threshold(index, *pairs, candidates=[0.2, 0.8]).group_threshold == 0.2
    assert fit_group_threshold(index, *pairs, candidates=[0.2, 0.8], max_group_size=3).group_threshold == 0.8
    with pytest.raises(ValueError, match="every candidate bar made a group larger than max_group_size=2"):
        fit_group_threshold(index, *pairs, candidates=[0.8], max_group_size=2)  # the three python questions


def test_bad_labelled_pairs_are_refused_by_name():
    index = DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD)
    with pytest.raises(ValueError, match="with some of each"):
        fit_group_threshold(index, [0], [1], [1])
    with pytest.raises(ValueError, match="got 2 first ids, 1 second ids and 1 labels"):
        fit_group_threshold(index, [0, 1], [1], [1])
    with pytest.raises(ValueError, match=r"not in the index, e.g. 99"):
        fit_group_threshold(index, [0, 99], [1, 2], [1, 0])
