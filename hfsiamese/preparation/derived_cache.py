"""
What a run computes from a prepared folder's rows, kept in that folder for the next run: the rows are fixed by the
folder, so a value derived from them is the same on every run, and on millions of pairs each takes from seconds to
minutes. This is what `datasets` does for a `map`'s result, for values that are not a data set: keyed by the rows'
`datasets` fingerprints and the options, written whole or not at all (`kept_in_prepared_folder`).

The values kept, one subfolder each: the training questions' fingerprint (`cached_pair_question_hashes`) and the
split report (`cached_split_report`), which read every question of the splits (a hash per text); the word vocabulary
of the LSTM and static encoders (`cached_word_tokenizer`), trained on the training texts.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import datasets
import numpy as np
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from hfsiamese.data.question_fingerprints import pair_question_hashes
from hfsiamese.data.question_identity import split_report
from hfsiamese.preparation.prepare import MANIFEST

__all__ = [
    "SPLIT_REPORTS",
    "TRAINING_QUESTIONS",
    "VOCABULARIES",
    "cached_pair_question_hashes",
    "cached_split_report",
    "cached_word_tokenizer",
    "kept_in_prepared_folder",
    "prepared_folder_of",
]

T = TypeVar("T")

# The prepared folder's subfolders, one folder per (rows, options) in each.
TRAINING_QUESTIONS = "training_questions"
SPLIT_REPORTS = "split_reports"
VOCABULARIES = "word_vocabularies"


def prepared_folder_of(pairs: datasets.Dataset) -> Path | None:
    """The prepared folder every Arrow file of `pairs` lies in, or None (rows read from a pair file, or built)."""
    folders = {Path(entry["filename"]).parent for entry in pairs.cache_files}
    if len(folders) != 1:
        return None
    folder = folders.pop()
    return folder if (folder / MANIFEST).is_file() else None


def kept_in_prepared_folder(
    pairs: datasets.Dataset,
    kind: str,
    key: dict[str, Any],
    build: Callable[[], T],
    save: Callable[[T, Path], None],
    load: Callable[[Path], T],
) -> T:
    """
    The value `build` derives from `pairs` (with the options in `key`): read with `load` from the prepared folder
    `pairs` comes from when a run saved it there (subfolder `kind`, one folder per `key` and rows), else built, saved
    there with `save` (into an empty folder) and read back, so that this run and the later ones use the same value.
    Rows that do not come from a prepared folder: `build()`, nothing kept.
    """
    folder = prepared_folder_of(pairs)
    if folder is None:
        return build()
    identity = json.dumps({"rows": pairs._fingerprint, **key}, sort_keys=True, default=str)
    saved = folder / kind / hashlib.blake2b(identity.encode("utf-8"), digest_size=16).hexdigest()
    if not saved.is_dir():
        saved.parent.mkdir(exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=".partial-", dir=saved.parent))
        try:
            save(build(), temporary)
            os.replace(temporary, saved)  # whole or not at all; a run that lost the race keeps the other's
        except OSError:
            if not saved.is_dir():
                raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
    return load(saved)


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


def cached_word_tokenizer(
    train_pairs: datasets.Dataset, options: dict[str, Any], build: Callable[[], PreTrainedTokenizerBase]
) -> PreTrainedTokenizerBase:
    """
    The tokenizer `build` trains on `train_pairs` with `options`: read from the prepared folder `train_pairs` comes
    from when an earlier run saved it there, else built, saved there and read back (so that this run and the later
    ones tokenise with one and the same object, and share `datasets`' cached tokenisation). Rows that do not come
    from a prepared folder: `build()`, nothing kept.
    """
    return kept_in_prepared_folder(
        train_pairs,
        VOCABULARIES,
        {"options": options},
        build,
        save=lambda tokenizer, folder: tokenizer.save_pretrained(str(folder)),
        load=_load_tokenizer,
    )


def _read_report(folder: Path) -> dict[str, dict[str, float]]:
    report: dict[str, dict[str, float]] = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    return report


def _load_tokenizer(folder: Path) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(str(folder))
