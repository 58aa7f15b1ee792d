"""
Questions that mined training data must never hold: a recipe's validation (or test) questions, or any list.

A held-out question that became someone's negative (or anchor) would put it into training, and the validation
score would then measure memory. A question is held out where its folded text (`question_ids.fold_text`: stripped,
lowercased, whitespace collapsed) is a held-out text, or where the pairs carry ids and its id is a held-out id.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import datasets
import numpy as np
import pyarrow as pa

from hfsiamese.data.question_identity import ID_COLUMNS, column_arrow, fold_text

__all__ = ["HeldOutQuestions", "held_out_mask"]

TEXT_LIST_SUFFIXES = (".txt",)


@dataclass(frozen=True)
class HeldOutQuestions:
    """Held-out questions as folded texts and ids (strings); build it with the `from_*` methods, join with `|`."""

    texts: frozenset[str] = field(default_factory=frozenset)
    ids: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> HeldOutQuestions:
        """Held-out question texts (compared folded)."""
        texts = [text for text in texts if text and text.strip()]
        return cls(texts=frozenset(fold_text(pa.array(texts, type=pa.string())).to_pylist()))

    @classmethod
    def from_ids(cls, ids: Iterable[str | int]) -> HeldOutQuestions:
        """Held-out question ids (compared as strings with the pairs' `qid1`/`qid2`)."""
        return cls(ids=frozenset(str(value).strip() for value in ids))

    @classmethod
    def from_pairs(cls, pairs: datasets.Dataset) -> HeldOutQuestions:
        """Every question of a pair data set (e.g. a split's validation pairs): its texts, and its ids if it has any."""
        texts = [text for name in ("question1", "question2") for text in column_arrow(pairs, name).to_pylist()]
        held = cls.from_texts(text for text in texts if text is not None)
        if set(ID_COLUMNS) <= set(pairs.column_names):
            held |= cls.from_ids(value for name in ID_COLUMNS for value in column_arrow(pairs, name).to_pylist())
        return held

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> HeldOutQuestions:
        """
        A `.txt` file (one question per line: its text, or its id; both are held out), or a pair file any format
        `hfsiamese.data.load_pairs` reads (e.g. `hfsiamese split`'s validation pairs): all its questions.
        """
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"held-out questions file not found: {path}")
        if path.suffix in TEXT_LIST_SUFFIXES:
            from hfsiamese.data.formats import check_text_file

            check_text_file(path, "one question (or id) per line")
            lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            return cls.from_texts(lines) | cls.from_ids(lines)
        from hfsiamese.data.pair_loading import load_pairs

        return cls.from_pairs(load_pairs(str(path), deduplicate=False))

    def __or__(self, other: HeldOutQuestions) -> HeldOutQuestions:
        return HeldOutQuestions(self.texts | other.texts, self.ids | other.ids)

    def __len__(self) -> int:
        return len(self.texts) + len(self.ids)


def held_out_mask(held_out: HeldOutQuestions | None, texts: list[str], ids: list[str] | None) -> np.ndarray:
    """Per question (its text, and its id where the pairs have ids), whether it is held out."""
    if held_out is None or not len(held_out):
        return np.zeros(len(texts), dtype=bool)
    folded = fold_text(pa.array(texts, type=pa.string())).to_pylist()
    mask = np.fromiter((text in held_out.texts for text in folded), dtype=bool, count=len(texts))
    if ids is not None and held_out.ids:
        mask |= np.fromiter((value in held_out.ids for value in ids), dtype=bool, count=len(ids))
    return mask
