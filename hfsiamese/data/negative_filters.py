"""
Which of a query's nearest texts may be its hard negatives: a rank window, margins to the positive, a ceiling.

One rule, in one vocabulary, for both miners: the training-time one (`hfsiamese.bi_encoder.mining`, the
`mined_triplets` view, `--mining_max_rank`...) and `hfsiamese mine` (`hfsiamese.mining`, `--max_rank`...). Each keeps
its own defaults (the training view drops candidates within a 0.05 margin of the positive; `hfsiamese mine` filters
only by rank unless told).

False negatives (unlabelled duplicates) hide among the nearest texts, so a candidate is kept only where it ranks
inside the window (`skip_top` < rank <= `max_rank`, ranks counted among the texts that may be negatives at all:
the query's own duplicate group and held-out questions are never counted), and scores at least `margin` below the
positive, at most `(1 - relative_margin)` times the positive's score, and at most `max_score`. The margins are
sentence-transformers' `mine_hard_negatives` ones (`absolute_margin`, `relative_margin`, `max_score`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the filters themselves are plain numbers, checked with the flags
    import torch

__all__ = ["NegativeFilters", "allowed_candidates"]


@dataclass(frozen=True)
class NegativeFilters:
    """
    How many negatives a query gets and which candidates qualify (each filter off where None).

    Args:
        num_negatives: negatives kept per query, best (highest bi-encoder score) first.
        skip_top: the `skip_top` best candidates are never negatives (likely unlabelled duplicates).
        max_rank: candidates ranked beyond it are not looked at (ranks start at 1); also bounds the search.
        margin: a candidate must score at most `s(query, positive) - margin`; below 2 (negative: looser than the
            positive itself).
        relative_margin: a candidate must score at most `s(query, positive) * (1 - relative_margin)`; in [0, 1).
        max_score: a candidate must score at most this (a cosine ceiling, in (-1, 1]).
    """

    num_negatives: int = 1
    skip_top: int = 0
    max_rank: int = 50
    margin: float | None = None
    relative_margin: float | None = None
    max_score: float | None = None

    def __post_init__(self) -> None:
        for name in ("num_negatives", "max_rank"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.skip_top, bool) or not isinstance(self.skip_top, int) or self.skip_top < 0:
            raise ValueError(f"skip_top must be a non-negative integer, got {self.skip_top!r}")
        if self.skip_top + self.num_negatives > self.max_rank:
            raise ValueError(
                f"the rank window holds max_rank - skip_top = {self.max_rank - self.skip_top} candidates, fewer than "
                f"num_negatives={self.num_negatives}: raise max_rank or lower skip_top"
            )
        if self.relative_margin is not None and not 0.0 <= self.relative_margin < 1.0:
            raise ValueError(f"relative_margin must be in [0, 1), got {self.relative_margin}")
        for name in ("margin", "max_score"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value}")
        # Bi-encoder scores are cosines in [-1, 1]: past these bounds a filter keeps no candidate at all (mining
        # would write queries without negatives) or, for max_score, is meant in another unit (a logit, a percent).
        if self.margin is not None and self.margin >= 2.0:
            raise ValueError(
                f"margin must be below 2 (cosines differ by at most 2; it would keep no candidate), got {self.margin}"
            )
        if self.max_score is not None and not -1.0 < self.max_score <= 1.0:
            raise ValueError(f"max_score is a cosine ceiling in (-1, 1], got {self.max_score}")


def allowed_candidates(
    scores: torch.Tensor, eligible: torch.Tensor, positive_scores: torch.Tensor, filters: NegativeFilters
) -> torch.Tensor:
    """
    Which candidates pass `filters`: a boolean `(queries, candidates)` mask.

    `scores` are the candidates' bi-encoder scores, best first per row; `eligible` marks the candidates that may be
    negatives at all (not of the query's group, not held out, a real row), which alone are ranked; `positive_scores`
    is `(queries,)`.
    """
    rank = eligible.cumsum(dim=1)  # 1 for the best eligible candidate
    allowed = eligible & (rank > filters.skip_top) & (rank <= filters.max_rank)
    positive = positive_scores.unsqueeze(1)
    if filters.margin is not None:
        allowed &= scores <= positive - filters.margin
    if filters.relative_margin is not None:
        allowed &= scores <= positive * (1.0 - filters.relative_margin)
    if filters.max_score is not None:
        allowed &= scores <= filters.max_score
    return allowed
