"""
The accuracy check every static int8 export runs: the held-out texts (or pairs) scored in both precisions, and the
export refused, or warned about by option, when the int8 graph falls past the stated bar.

A bi-encoder's measure is the mean cosine of the int8 embeddings to PyTorch's fp32 ones (the bar: `int8_min_cosine`);
a cross-encoder's is the mean absolute difference of P(duplicate) between the two (`int8_max_score_diff`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

ON_FAILURE = ("refuse", "warn")
# all-MiniLM-L6-v2's dynamic int8 export kept a mean cosine of 0.994 to fp32 (hfsiamese.base.onnx_export_steps); a
# static export that keeps less has lost more than quantisation needs to.
DEFAULT_MIN_COSINE = 0.99
# A cross-encoder's scores are probabilities: 0.02 on average moves few pairs across a threshold.
DEFAULT_MAX_SCORE_DIFF = 0.02


class Int8AccuracyError(ValueError):
    """The int8 graph fell past the bar on the held-out sample; nothing was written."""


@dataclass(frozen=True)
class Int8AccuracyCheck:
    """The bars a static int8 export must meet on its held-out sample, and what happens when it does not."""

    min_cosine: float = DEFAULT_MIN_COSINE
    max_score_diff: float = DEFAULT_MAX_SCORE_DIFF
    on_failure: str = "refuse"

    def __post_init__(self) -> None:
        if self.on_failure not in ON_FAILURE:
            raise ValueError(f"int8_on_failure must be one of {ON_FAILURE}, got {self.on_failure!r}")
        if not -1.0 <= self.min_cosine <= 1.0:
            raise ValueError(f"int8_min_cosine is a cosine in [-1, 1], got {self.min_cosine}")
        if not 0.0 <= self.max_score_diff <= 1.0:
            raise ValueError(f"int8_max_score_diff is a score difference in [0, 1], got {self.max_score_diff}")

    def judge_cosine(self, mean_cosine: float, count: int) -> None:
        """Refuse (or warn) when the mean cosine of int8 to fp32 embeddings of `count` held-out texts is below the bar."""
        if mean_cosine < self.min_cosine:
            self._fail(
                f"the static int8 graph's embeddings of {count} held-out texts have a mean cosine of {mean_cosine:.6f} "
                f"to PyTorch's fp32 ones, below int8_min_cosine={self.min_cosine}"
            )

    def judge_score_diff(self, mean_diff: float, count: int) -> None:
        """Refuse (or warn) when the mean |P(duplicate) difference| of `count` held-out pairs is above the bar."""
        if mean_diff > self.max_score_diff:
            self._fail(
                f"the static int8 graph's scores of {count} held-out pairs differ from PyTorch's fp32 ones by "
                f"{mean_diff:.6f} on average, above int8_max_score_diff={self.max_score_diff}"
            )

    def _fail(self, finding: str) -> None:
        if self.on_failure == "refuse":
            raise Int8AccuracyError(
                f"{finding}; not writing it (calibrate on more or more typical pairs, export fp32 or dynamic int8, "
                "or pass --int8_on_failure warn to keep it)"
            )
        warnings.warn(f"{finding}; writing it as asked (--int8_on_failure warn)", UserWarning, stacklevel=3)


__all__ = [
    "DEFAULT_MAX_SCORE_DIFF",
    "DEFAULT_MIN_COSINE",
    "ON_FAILURE",
    "Int8AccuracyCheck",
    "Int8AccuracyError",
]
