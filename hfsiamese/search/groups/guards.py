"""The guards against chaining (A≈B, B≈C, but A≉C): the test a question passes to join a group (`clustering` says
which is the default and why)."""

from __future__ import annotations

import numpy as np

# "canonical": its cosine to the group's canonical reaches the threshold; "mean": its mean cosine to the members
# does; "none": any duplicate pair joins (plain connected components); "cross_encoder": "mean", with the links it
# would refuse (and those into a group of `check_size` members) decided by a cross-encoder (`cross_encoder_guard`).
GUARDS = ("canonical", "mean", "none", "cross_encoder")
DEFAULT_GUARD = "mean"


def check_guard(guard: str) -> str:
    if guard not in GUARDS:
        raise ValueError(f"guard must be one of {GUARDS}, got {guard!r}")
    return guard


def uses_cross_encoder(guard: str) -> bool:
    return guard == "cross_encoder"


def passes(guard: str, to_canonical: float, cosines: np.ndarray, threshold: float) -> bool:
    """Whether a question with these cosines to a group's members (`to_canonical` the canonical's) may join it."""
    if guard == "canonical":
        return to_canonical >= threshold
    if guard in ("mean", "cross_encoder"):  # the cross-encoder guard's sure links are the mean guard's
        return float(cosines.mean()) >= threshold
    return True


__all__ = ["DEFAULT_GUARD", "GUARDS", "check_guard", "passes", "uses_cross_encoder"]
