"""Batches of stage 1: the usual padded pairs, plus the teacher's vector of each side."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from hfsiamese.data.collator import SiamesePairCollator

TEACHER_ROW_COLUMNS = ("teacher_row_a", "teacher_row_b")
TEACHER_KEYS = ("teacher_a", "teacher_b")

__all__ = ["TEACHER_KEYS", "TEACHER_ROW_COLUMNS", "DistillationCollator"]


@dataclass
class DistillationCollator:
    """
    `SiamesePairCollator`'s batch, plus `teacher_a`/`teacher_b` (`(batch, teacher dim)`) looked up
    from `teacher_vectors` by the rows' `teacher_row_a`/`teacher_row_b`. The vectors stay in one table
    (a question's vector is stored once, however many pairs it is in); rows without teacher columns
    (the validation pairs) get the plain pair batch.

    The rows come as dicts: the trainer's Arrow fast path reads only the pair columns.
    """

    pair_collator: SiamesePairCollator
    teacher_vectors: torch.Tensor

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        batch = self.pair_collator(rows)
        if rows and all(column in rows[0] for column in TEACHER_ROW_COLUMNS):
            for key, column in zip(TEACHER_KEYS, TEACHER_ROW_COLUMNS, strict=True):
                batch[key] = self.teacher_vectors[torch.tensor([row[column] for row in rows], dtype=torch.long)]
        return batch
