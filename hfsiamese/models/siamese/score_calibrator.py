"""
A stored score calibrator: how a pair's score becomes P(duplicate) on the domain it was fitted on.

`model.calibrate(...)` (`calibration.py`) fits it with scikit-learn, in `hfsiamese.calibration_fitting`, and
stores it in `config.calibration` as plain numbers; this file only reads and applies it. It travels with
every checkpoint as remote code (the modeling file imports it relatively), so it imports only torch, numpy
and the standard library: a checkpoint loaded with `trust_remote_code=True` where hfsiamese is not
installed maps scores to the same probabilities. The fitting lives outside, because it needs
scikit-learn and the library's threshold search (`hfsiamese.metrics.thresholds`), neither of which
travels with a checkpoint.

`config.calibration` holds `method` and what the fit was made on (`data`, `num_pairs`, `target`,
`target_precision`), and for the probability methods the map itself:

- `"platt"`: `coef`, `intercept`; P(duplicate) = sigmoid(coef * score + intercept), the logistic
  regression of the label on the score;
- `"isotonic"`: `scores`, `probabilities`, the fitted breakpoints (increasing); P(duplicate) is their
  linear interpolation, constant beyond the ends (what scikit-learn's
  `IsotonicRegression(out_of_bounds="clip").predict` computes);
- `"threshold"`: no map, only `config.threshold` was moved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

CALIBRATION_METHODS: tuple[str, ...] = ("threshold", "platt", "isotonic")
PROBABILITY_METHODS: tuple[str, ...] = ("platt", "isotonic")

__all__ = [
    "CALIBRATION_METHODS",
    "PROBABILITY_METHODS",
    "ScoreCalibrator",
    "check_calibration",
    "check_probability_threshold",
]


@dataclass(frozen=True)
class ScoreCalibrator:
    """A monotone map from a pair score to P(duplicate): Platt (`coef`, `intercept`) or isotonic (breakpoints)."""

    method: str
    coef: float | None = None
    intercept: float | None = None
    scores: tuple[float, ...] = ()
    probabilities: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.method == "platt":
            if self.coef is None or self.intercept is None or not all(map(math.isfinite, (self.coef, self.intercept))):
                raise ValueError(
                    f"a Platt calibrator needs finite coef and intercept, got {self.coef}, {self.intercept}"
                )
            if self.coef <= 0:
                raise ValueError(
                    f"a Platt calibrator with coef={self.coef} <= 0 would make a higher score a less likely duplicate"
                )
        elif self.method == "isotonic":
            xs, ys = np.asarray(self.scores, dtype=np.float64), np.asarray(self.probabilities, dtype=np.float64)
            if xs.size == 0 or xs.shape != ys.shape:
                raise ValueError(
                    f"an isotonic calibrator needs as many breakpoint scores as probabilities (at least one), "
                    f"got {xs.size} and {ys.size}"
                )
            if not (np.isfinite(xs).all() and np.isfinite(ys).all()):
                raise ValueError("an isotonic calibrator's breakpoints must be finite numbers")
            if (np.diff(xs) < 0).any() or (np.diff(ys) < 0).any():
                raise ValueError("an isotonic calibrator's breakpoint scores and probabilities must be non-decreasing")
            if ys[0] < 0 or ys[-1] > 1:
                raise ValueError(f"an isotonic calibrator's probabilities must lie in [0, 1], got [{ys[0]}, {ys[-1]}]")
        else:
            raise ValueError(f"a score calibrator's method is one of {PROBABILITY_METHODS}, got {self.method!r}")

    @classmethod
    def from_config(cls, config: Any) -> ScoreCalibrator | None:
        """The calibrator stored in `config.calibration`, or None (no calibration, or a threshold-only one)."""
        stored = getattr(config, "calibration", None)
        if not stored or stored.get("method") not in PROBABILITY_METHODS:
            return None
        return cls.from_dict(stored)

    @classmethod
    def from_dict(cls, stored: Mapping[str, Any]) -> ScoreCalibrator:
        method = stored.get("method")
        if method == "platt":
            return cls("platt", coef=float(stored["coef"]), intercept=float(stored["intercept"]))
        if method == "isotonic":
            return cls("isotonic", scores=_floats(stored["scores"]), probabilities=_floats(stored["probabilities"]))
        return cls(str(method))  # raises, naming the method

    def to_dict(self) -> dict[str, Any]:
        """The map as plain numbers, for `config.calibration`."""
        if self.method == "platt":
            return {"method": "platt", "coef": self.coef, "intercept": self.intercept}
        return {"method": "isotonic", "scores": list(self.scores), "probabilities": list(self.probabilities)}

    def probability(self, scores: torch.Tensor | Sequence[float] | np.ndarray) -> torch.Tensor:
        """P(duplicate) of each score, float32, on the scores' device (CPU for non-tensors)."""
        scores = torch.as_tensor(scores)
        values = scores.detach().double()
        if self.method == "platt":
            result = torch.sigmoid(self.coef * values + self.intercept)
        else:  # numpy's interp is the linear interpolation with clipped ends that IsotonicRegression applies
            result = torch.from_numpy(np.interp(values.cpu().numpy(), self.scores, self.probabilities))
        return result.float().to(scores.device)

    def score_threshold(self, probability: float) -> float:
        """
        The lowest score whose P(duplicate) reaches `probability`, so that `score >= it` is the decision
        `P(duplicate) >= probability`: `-inf` when every score reaches it, `inf` when none does.
        """
        probability = check_probability_threshold(probability)
        if self.method == "platt":
            if probability <= 0.0:
                return -math.inf
            if probability >= 1.0:
                return math.inf
            return (math.log(probability / (1.0 - probability)) - self.intercept) / self.coef
        xs, ys = np.asarray(self.scores), np.asarray(self.probabilities)
        if ys[0] >= probability:
            return -math.inf
        if ys[-1] < probability:
            return math.inf
        i = int(np.argmax(ys >= probability))  # first breakpoint reaching it; ys[i - 1] < probability
        if xs[i] == xs[i - 1]:
            return float(xs[i])
        return float(xs[i - 1] + (probability - ys[i - 1]) * (xs[i] - xs[i - 1]) / (ys[i] - ys[i - 1]))


def check_probability_threshold(probability: float) -> float:
    """A probability threshold as a float in [0, 1]."""
    probability = float(probability)
    if not 0.0 <= probability <= 1.0:
        raise ValueError(f"probability_threshold is a P(duplicate) and must lie in [0, 1], got {probability}")
    return probability


def check_calibration(calibration: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """`config.calibration` as a plain dict, refusing an unknown method or a map that cannot be applied."""
    if calibration is None:
        return None
    if not isinstance(calibration, Mapping):
        raise TypeError(f"config.calibration must be a dict, got {type(calibration).__name__}")
    method = calibration.get("method")
    if method not in CALIBRATION_METHODS:
        raise ValueError(f"config.calibration['method'] must be one of {CALIBRATION_METHODS}, got {method!r}")
    if method in PROBABILITY_METHODS:
        try:
            ScoreCalibrator.from_dict(calibration)
        except KeyError as err:
            raise ValueError(f"config.calibration of method {method!r} lacks {err}") from err
    return dict(calibration)


def _floats(values: Sequence[Any]) -> tuple[float, ...]:
    return tuple(float(value) for value in values)
