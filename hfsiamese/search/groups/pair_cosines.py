"""
The cosine of a pair as the group rule compares it: a function of the two embeddings alone.

A float32 matrix product's rounding depends on its shape on some CPUs: on an AVX-512 Xeon, the cosine of one pair
came out 0.98387331 through a chunk's search among earlier rows, 0.98387337 when the same rows were compared within
the chunk or searched one query at a time. Where a row has several identical earlier questions (reposts), which one
takes its `k`-th place then depends on how the rows were batched, and a rebuild and an add could link differently.
So the rule decides on cosines computed again in float64 from the float32 rows (every product exact, the sum's
rounding far below float32's) and rounded to float32 (`exact_cosines`); the searches only propose the candidates,
with room for their own rounding (`search_margin`).
"""

from __future__ import annotations

import numpy as np

# float32's unit roundoff: a dot product of unit rows of dimension d, summed in any order, is within about d of it
# of the exact value (Higham, "Accuracy and Stability of Numerical Algorithms", 3.1).
_FLOAT32_ROUNDOFF = 2.0**-24


def exact_cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row i of `a` with row i of `b` (L2-normalised float32 rows; one row of either is paired with every row of
    the other), in float64, rounded to float32."""
    return np.sum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64), axis=-1).astype(np.float32)


def exact_cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """Every pair of `vectors`' rows (a chunk's rows among themselves) as `exact_cosines` scores them: one float64
    product, whose summation order moves a cosine by float64's rounding, far below the float32 step it is rounded
    to."""
    wide = np.asarray(vectors, dtype=np.float64)
    return (wide @ wide.T).astype(np.float32)


def search_margin(dim: int) -> float:
    """How far a float32 search's cosine of unit rows of dimension `dim` can be from `exact_cosines`' (a bound for
    any summation order, and one float32 step for the rounding of the exact one)."""
    return (max(dim, 1) + 2) * _FLOAT32_ROUNDOFF


__all__ = ["exact_cosine_matrix", "exact_cosines", "search_margin"]
