"""
The user's own texts that static int8 is calibrated on, and the held-out ones its accuracy is checked on.

Static quantisation fixes each activation's int8 range from a sample of real inputs, so the sample must be what the
model will meet: a pair file of the user's (any format `load_pairs` reads), shuffled with a seed and cut into a
calibration part and a disjoint held-out part. The calibration inputs are the token batches the model's own `encode`
or `score_pairs` feeds its graph (recorded by `RecordingSession`), so padding, truncation and order match serving.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np

# Pairs the calibration and the held-out check take by default: NNCF's and onnxruntime's ranges settle within a few
# hundred inputs; the check needs enough texts that a bad layer shows in the mean cosine.
DEFAULT_CALIBRATION_SIZE = 300
DEFAULT_CHECK_SIZE = 200


@dataclass(frozen=True)
class CalibrationSample:
    """Question pairs to calibrate on and disjoint pairs to check the int8 graph on."""

    calibration_pairs: list[tuple[str, str]]
    check_pairs: list[tuple[str, str]]

    @staticmethod
    def texts(pairs: list[tuple[str, str]]) -> list[str]:
        """Both questions of each pair, each distinct text once, in order of appearance."""
        return list(dict.fromkeys(text for pair in pairs for text in pair))

    def calibration_texts(self) -> list[str]:
        return self.texts(self.calibration_pairs)

    def check_texts(self) -> list[str]:
        return self.texts(self.check_pairs)


def check_sample_sizes(calibration_size: int, check_size: int) -> None:
    """Both sizes of a calibration sample at least 1: static int8 needs pairs to calibrate on and pairs to check."""
    if calibration_size < 1 or check_size < 1:
        raise ValueError(f"calibration_size and check_size must be at least 1, got {calibration_size} and {check_size}")


def split_calibration_sample(
    pairs: list[tuple[str, str]],
    *,
    calibration_size: int = DEFAULT_CALIBRATION_SIZE,
    check_size: int = DEFAULT_CHECK_SIZE,
    seed: int = 0,
    source: str = "the calibration pairs",
) -> CalibrationSample:
    """`pairs` shuffled with `seed`, the first `calibration_size` to calibrate on, the next `check_size` held out."""
    check_sample_sizes(calibration_size, check_size)
    if len(pairs) < 2:
        raise ValueError(
            f"{source}: {len(pairs)} pair(s); static int8 needs at least 2 (one to calibrate, one to check)"
        )
    shuffled = list(pairs)
    random.Random(seed).shuffle(shuffled)
    calibration = min(calibration_size, len(shuffled) - 1)  # at least one pair is always held out
    return CalibrationSample(shuffled[:calibration], shuffled[calibration : calibration + check_size])


def read_calibration_sample(
    path: str,
    *,
    calibration_size: int = DEFAULT_CALIBRATION_SIZE,
    check_size: int = DEFAULT_CHECK_SIZE,
    seed: int = 0,
) -> CalibrationSample:
    """The calibration sample of a pair file (any format `hfsiamese.data.load_pairs` reads; labels are not used)."""
    from hfsiamese.data.pair_loading import load_pairs

    rows = load_pairs(path)
    pairs = list(zip(rows["question1"], rows["question2"], strict=True))
    return split_calibration_sample(
        pairs, calibration_size=calibration_size, check_size=check_size, seed=seed, source=path
    )


def check_calibration_request(quantize: str | None, calibration: CalibrationSample | None) -> None:
    """A calibration sample is for int8 only: refused, before any work, with an fp32 export."""
    if calibration is not None and quantize != "int8":
        raise ValueError("a calibration sample (--calibration_file) is for static int8: pass --quantize int8 with it")


class RecordingSession:
    """An inference session that keeps a copy of every batch fed to it: the calibration inputs, exactly as served."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.feeds: list[dict[str, np.ndarray]] = []

    def get_inputs(self) -> Any:
        return self.session.get_inputs()

    def run(self, output_names: Any, feeds: dict[str, np.ndarray]) -> Any:
        self.feeds.append({name: np.array(value, copy=True) for name, value in feeds.items()})
        return self.session.run(output_names, feeds)


__all__ = [
    "DEFAULT_CALIBRATION_SIZE",
    "DEFAULT_CHECK_SIZE",
    "CalibrationSample",
    "RecordingSession",
    "check_calibration_request",
    "check_sample_sizes",
    "read_calibration_sample",
    "split_calibration_sample",
]
