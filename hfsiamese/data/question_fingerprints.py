"""
Which questions trained a model, kept as hashes beside its weights, so that an evaluation can say when
its test pairs share questions with the training data.

A model scored on questions it was trained on looks far better than it is (the default LSTM recipe:
AP 0.975 on its own training file, 0.779 on held-out pairs), and nothing in the figures shows it. Every
training run saves the fingerprint of its training questions (`training_questions.safetensors`: the
sorted, distinct 64-bit BLAKE2b hashes of each question's folded text, as `question_ids.fold_text`
folds it; hashes, not texts); `evaluate_pairs` reads it and reports how many test pairs and questions
were seen in training.

Text, not ids: a test file from another source numbers its questions differently, while "How do I
learn Python?" folds to the same key whichever file it comes from.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa
from safetensors.numpy import load_file

from hfsiamese.data.question_identity import column_arrow, fold_text

__all__ = [
    "FINGERPRINT_FILE",
    "TrainingOverlap",
    "fingerprint_tensors",
    "pair_question_hashes",
    "question_hashes",
    "read_fingerprint",
    "training_overlap",
]

FINGERPRINT_FILE = "training_questions.safetensors"
_TENSOR = "question_hashes"


def question_hashes(texts: Iterable[str] | pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The sorted, distinct hashes (uint64) of `texts`' folded forms."""
    array = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(list(texts), type=pa.string())
    hashes = _row_hashes(array)
    hashes.sort()  # in place: np.unique would sort a copy (tens of millions of hashes: a third of the peak)
    distinct = np.ones(len(hashes), dtype=bool)
    np.not_equal(hashes[1:], hashes[:-1], out=distinct[1:])
    return hashes[distinct]


def pair_question_hashes(pairs: datasets.Dataset) -> np.ndarray:
    """The hashes of every question of a pair data set (both columns)."""
    both = pa.chunked_array(
        column_arrow(pairs, "question1").chunks + column_arrow(pairs, "question2").chunks, type=pa.string()
    )
    return question_hashes(both)


def fingerprint_tensors(hashes: np.ndarray) -> dict[str, np.ndarray]:
    """What `FINGERPRINT_FILE` holds (`safetensors.numpy.save_file` writes it; the trainer does, at every save)."""
    hashes = np.asarray(hashes, dtype=np.uint64)
    if not bool(np.all(hashes[1:] > hashes[:-1])):  # already sorted and distinct (as `question_hashes` gives): kept
        hashes = np.unique(hashes)
    return {_TENSOR: np.ascontiguousarray(hashes)}


def read_fingerprint(folder: str | os.PathLike) -> np.ndarray | None:
    """The training-question hashes saved in a model folder, or None when it holds none (older or foreign models)."""
    path = Path(folder) / FINGERPRINT_FILE
    if not path.is_file():
        return None
    return load_file(str(path))[_TENSOR]


@dataclass(frozen=True)
class TrainingOverlap:
    """How much of an evaluation set the model saw in training."""

    pairs: int
    pairs_with_a_seen_question: int
    pairs_with_both_seen: int
    questions: int
    seen_questions: int

    @property
    def any(self) -> bool:
        return self.pairs_with_a_seen_question > 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    def message(self, what: str = "test pairs") -> str:
        """One plain sentence: what was seen, and what it means for the figures."""
        if not self.any:
            return f"none of the {self.pairs:,} {what} shares a question with the pairs that trained this model"
        share = self.pairs_with_a_seen_question / self.pairs
        return (
            f"{self.pairs_with_a_seen_question:,} of {self.pairs:,} {what} ({share:.0%}) share a question with the "
            f"pairs that trained this model ({self.seen_questions:,} of {self.questions:,} distinct questions were "
            f"seen in training; both questions of {self.pairs_with_both_seen:,} pairs): these figures overstate how "
            "it does on new questions; evaluate on held-out pairs"
        )


def training_overlap(pairs: datasets.Dataset, fingerprint: np.ndarray) -> TrainingOverlap:
    """How many pairs of `pairs` (and distinct questions) appear among the training questions `fingerprint`."""
    hashes = [_row_hashes(column_arrow(pairs, name)) for name in ("question1", "question2")]  # each text hashed once
    seen = [np.isin(side, fingerprint) for side in hashes]
    either, both = seen[0] | seen[1], seen[0] & seen[1]
    questions = np.unique(np.concatenate(hashes))
    return TrainingOverlap(
        pairs=len(pairs),
        pairs_with_a_seen_question=int(either.sum()),
        pairs_with_both_seen=int(both.sum()),
        questions=len(questions),
        seen_questions=int(np.isin(questions, fingerprint).sum()),
    )


_HASHED_PER_SLICE = 100_000  # texts made Python strings at a time: memory bounded on millions of questions


def _row_hashes(texts: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """One hash per row, in row order: 8 bytes of BLAKE2b of the folded text (stable across runs and machines)."""
    texts = texts.cast(pa.string())
    hashes = np.empty(len(texts), dtype=np.uint64)
    for start in range(0, len(texts), _HASHED_PER_SLICE):
        folded = fold_text(texts.slice(start, _HASHED_PER_SLICE)).to_pylist()
        hashes[start : start + len(folded)] = np.fromiter(
            (
                int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
                for text in folded
            ),
            dtype=np.uint64,
            count=len(folded),
        )
    return hashes
