"""
The `"cross_encoder"` guard: the links the `"mean"` guard would refuse (a question whose mean cosine to a group falls
below the threshold although one of its members is its duplicate: a chain, or a true duplicate the bi-encoder
places badly), and every link into a group of `check_size` members or more, are decided by a cross-encoder reading
the question and the duplicate that links it to the group together (its most similar member among its duplicates:
the pair the link stands on; judging the group's canonical instead cost recall, docs/benchmarks.md); the other links
are the mean guard's. A cross-encoder decides
pairs better than the cosine (it reads both questions at once), but costs a forward per pair, so it is asked only
about those borderline links, in batches, at most `cross_encoder_budget` pairs per 1,000 questions grouped; once the
budget is spent the mean guard decides alone.

The decision of a link is a pure function of the pair's score (`LinkJudge.accepts`), so a rebuild and incremental
assignment, which place questions by the same rule (`placement.place`), agree as long as the rebuild's budget lasts
(an add may spend what remains of it: `assignment.add_budget`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hfsiamese.search.groups.duplicate_groups import GroupSettings
from hfsiamese.search.groups.guards import passes, uses_cross_encoder
from hfsiamese.search.reranking import cross_encoder_scores

# `texts(keys)`: the texts of these questions (row numbers or ids, whichever the placing side uses).
KeyTexts = Callable[[list[Any]], list[str]]
# Pairs scored by one `score_pairs` call.
SCORE_BATCH = 64
# Default pairs per 1,000 questions and the size from which every joining member is checked: see the guide
# (docs/guides/deduplicate-a-corpus.md) for what they were chosen by.
DEFAULT_BUDGET = 200.0
DEFAULT_CHECK_SIZE = 50


def call_budget(calls_per_1000: float, num_questions: int) -> int:
    """The cross-encoder pairs allowed while grouping `num_questions` questions."""
    return math.ceil(calls_per_1000 * num_questions / 1000)


class LinkJudge:
    """
    Scores (question, linked duplicate) pairs with a cross-encoder, batched and within a budget, and remembers each score.
    `deferring=True` makes `accepts` note the pairs it has no score for (and answer None, the mean guard's turn) so
    that a dry pass can collect a whole pass's borderline links for `score_deferred` to score in batches.
    """

    def __init__(
        self, cross_encoder: Any, threshold: float, max_calls: int, texts: KeyTexts, *, batch_size: int = SCORE_BATCH
    ) -> None:
        self.cross_encoder = cross_encoder
        self.threshold = threshold
        self.max_calls = max_calls
        self.batch_size = batch_size
        self.calls = 0
        self.deferring = False
        self._texts = texts
        self._scores: dict[tuple[Any, Any], float] = {}
        self._deferred: dict[tuple[Any, Any], None] = {}

    def accepts(self, member: Any, linked: Any) -> bool | None:
        """Whether the cross-encoder accepts `member` as a duplicate of `linked`; None without a score (the
        budget spent, or deferred)."""
        pair = (member, linked)
        if pair not in self._scores:
            if self.deferring:
                self._deferred[pair] = None
                return None
            self.score([pair])
        score = self._scores.get(pair)
        return None if score is None else score >= self.threshold

    def score_deferred(self) -> int:
        """Score the pairs noted while deferring (in the order noted, within the budget); how many were scored."""
        pairs, self._deferred = list(self._deferred), {}
        return self.score(pairs)

    def score(self, pairs: Sequence[tuple[Any, Any]]) -> int:
        """Score the pairs not yet scored, in batches, as many as the budget leaves; how many were scored."""
        todo = [pair for pair in dict.fromkeys(pairs) if pair not in self._scores]
        todo = todo[: max(self.max_calls - self.calls, 0)]
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            texts = self._texts([key for pair in batch for key in pair])
            scores = cross_encoder_scores(self.cross_encoder, texts[0::2], texts[1::2], batch_size=self.batch_size)
            self._scores.update(zip(batch, scores.tolist()))
        self.calls += len(todo)
        return len(todo)


def is_borderline(settings: GroupSettings, by_mean: bool, group_size: int) -> bool:
    """Whether the cross-encoder guard asks the cross-encoder about a link (`by_mean`: the mean guard's decision)."""
    if not uses_cross_encoder(settings.guard):
        return False
    return not by_mean or (settings.check_size is not None and group_size >= settings.check_size)


def admits(
    settings: GroupSettings,
    judge: LinkJudge | None,
    member: Any,
    linked: Any,
    to_canonical: float,
    cosines: np.ndarray,
) -> bool:
    """Whether `member` (with these cosines to a group's members, `to_canonical` its canonical's; `linked` the
    duplicate that links it to the group) may join it."""
    by_mean = passes(settings.guard, to_canonical, cosines, settings.bar)
    if judge is None or not is_borderline(settings, by_mean, len(cosines)):
        return by_mean
    decision = judge.accepts(member, linked)
    return by_mean if decision is None else decision


__all__ = ["DEFAULT_BUDGET", "DEFAULT_CHECK_SIZE", "LinkJudge", "admits", "call_budget", "is_borderline"]
