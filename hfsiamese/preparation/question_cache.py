"""
The training questions' fingerprint (`hfsiamese.data.question_fingerprints`) and the split report of a run from a
prepared folder, kept in the folder: both read every question of the splits (tens of seconds per million pairs, a
hash per text), and a prepared folder fixes them.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import numpy as np

from hfsiamese.data.question_fingerprints import pair_question_hashes
from hfsiamese.data.question_identity import split_report
from hfsiamese.preparation.derived_cache import kept_in_prepared_folder

__all__ = ["TRAINING_QUESTIONS", "SPLIT_REPORTS", "cached_pair_question_hashes", "cached_split_report"]

TRAINING_QUESTIONS = "training_questions"  # subfolders of the prepared folder, one folder per rows
SPLIT_REPORTS = "split_reports"


def cached_pair_question_hashes(train_pairs: datasets.Dataset) -> np.ndarray:
    """`pair_question_hashes(train_pairs)`, kept in the prepared folder the rows come from (computed when not), read
    back memory-mapped (read-only)."""
    return kept_in_prepared_folder(
        train_pairs,
        TRAINING_QUESTIONS,
        {},
        lambda: pair_question_hashes(train_pairs),
        save=lambda hashes, folder: np.save(folder / "hashes.npy", hashes),
        # Memory-mapped: a run holds them to its last save (31M hashes, 250 MB, at 40M pairs) as file pages, not its own.
        load=lambda folder: np.load(folder / "hashes.npy", mmap_mode="r"),
    )


def cached_split_report(splits: datasets.DatasetDict) -> dict[str, dict[str, float]]:
    """`split_report(splits)`, kept in the prepared folder the training rows come from (computed when not)."""
    return kept_in_prepared_folder(
        splits["train"],
        SPLIT_REPORTS,
        {"splits": {name: split._fingerprint for name, split in splits.items()}},
        lambda: split_report(splits),
        save=lambda report, folder: (folder / "report.json").write_text(json.dumps(report), encoding="utf-8"),
        load=_read_report,
    )


def _read_report(folder: Path) -> dict[str, dict[str, float]]:
    report: dict[str, dict[str, float]] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return report
