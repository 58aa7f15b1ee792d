"""
A cross-encoder's training pairs tokenised batch by batch, in the collator, as the bi-encoder's
`TokenizingPairCollator` does: a run from a prepared folder of millions of pairs starts training at once and keeps no
token lists in memory or on disk, where `tokenize_cross_pairs` would first tokenise every pair (in both orders) and
write the result. Each pair is encoded by `encode_pairs`, the function `tokenize_cross_pairs` calls, so a run trains
on the same token ids either way; the rows of both orders are made as `tokenize_cross_pairs` makes them
(`both_orders_rows`), so the sampler draws the same batches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import datasets
import torch

from hfsiamese.cross_encoder.pair_inputs import LABELS, CrossPairCollator, both_orders_rows, encode_pairs
from hfsiamese.models.siamese.token_fields import tokenizer_max_length, warn_truncated_batch

__all__ = ["TokenizingCrossPairCollator", "cross_text_rows"]

TEXT_COLUMNS = ("question1", "question2")


@dataclass
class TokenizingCrossPairCollator(CrossPairCollator):
    """
    A `CrossPairCollator` that also takes untokenised rows (`question1`, `question2`, and `labels` or `label`) and
    tokenises each batch itself as one sequence per pair, cut at `max_length` tokens in all (the tokenizer's
    `model_max_length` by default, at most 512). Rows tokenised already (the validation pairs) are padded as they are.
    """

    max_length: int | None = None
    _warned: bool = field(default=False, init=False, repr=False)

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if not rows:
            raise ValueError("cannot collate an empty batch")
        if "input_ids" in rows[0]:
            return super().__call__(rows)
        return super().__call__(self.tokenized(rows))

    def tokenized(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """`rows` as `tokenize_cross_pairs` writes them: the pair's token fields and a float `labels`."""
        missing = [column for column in TEXT_COLUMNS if column not in rows[0]]
        if missing:
            raise ValueError(
                f"cross-encoder rows lack {missing} and are not tokenised (no input_ids): {sorted(rows[0])}"
            )
        texts = {column: [_text(row[column], column) for row in rows] for column in TEXT_COLUMNS}
        max_length = self.max_length or tokenizer_max_length(self.tokenizer)
        encoded, cut = encode_pairs(self.tokenizer, texts["question1"], texts["question2"], max_length)
        if cut and not self._warned:
            self._warned = True
            warn_truncated_batch(cut, "pairs", max_length, len(rows))
        label_column = LABELS if LABELS in rows[0] else "label" if "label" in rows[0] else None
        tokenized = []
        for position, row in enumerate(rows):
            values: dict[str, Any] = {name: lists[position] for name, lists in encoded.items()}
            if label_column is not None:
                values[LABELS] = float(row[label_column])
            tokenized.append(values)
        return tokenized


def cross_text_rows(pairs: datasets.Dataset, *, both_orders: bool) -> datasets.Dataset:
    """
    The training pairs as `TokenizingCrossPairCollator` takes them, in the rows `tokenize_cross_pairs` would
    tokenise (`both_orders`: every pair, then every pair swapped): texts, `labels` (from `label`) and `group_id`, the
    other columns dropped. Column operations and a concatenation only: the rows stay memory-mapped.
    """
    for column in TEXT_COLUMNS:
        if column not in pairs.column_names:
            raise ValueError(f"dataset has no column {column!r} (columns: {pairs.column_names})")
    kept = [column for column in (*TEXT_COLUMNS, "label", "group_id") if column in pairs.column_names]
    rows = pairs.select_columns(kept)
    if both_orders:
        rows = both_orders_rows(rows)
    return rows.rename_column("label", LABELS) if "label" in kept else rows


def _text(value: Any, column: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"column {column!r} holds {value!r}, not a text: drop or fill such rows first")
    return value
