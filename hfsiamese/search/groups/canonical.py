"""Which member of a duplicate group is its canonical question, the one the others link to."""

from __future__ import annotations

import numpy as np

# "earliest": the first asked (first in the index); "most_central": the highest mean cosine to the other members.
CANONICAL_RULES = ("earliest", "most_central")


def check_canonical_rule(rule: str) -> str:
    if rule not in CANONICAL_RULES:
        raise ValueError(f"canonical must be one of {CANONICAL_RULES}, got {rule!r}")
    return rule


def choose_canonical(order: np.ndarray, vectors: np.ndarray, rule: str) -> int:
    """The position of the canonical member among `vectors` (L2-normalised, one per member); `order` ranks the
    members by when they came (row numbers, or insertion positions): the earliest wins a tie."""
    if rule == "earliest" or len(order) <= 2:  # of two, each is as central as the other
        return int(np.argmin(order))
    centrality = vectors @ vectors.sum(axis=0)
    best = centrality.max()
    tied = np.flatnonzero(centrality >= best - 1e-6)
    return int(tied[np.argmin(order[tied])])


__all__ = ["CANONICAL_RULES", "check_canonical_rule", "choose_canonical"]
