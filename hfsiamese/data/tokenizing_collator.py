"""
Pairs tokenised batch by batch, in the collator, as sentence-transformers does: a training set of millions of pairs
read from memory-mapped shards starts training at once and holds no token list in memory or on disk, where
`tokenize_pairs` would first tokenise every text (tens of microseconds each: minutes per million pairs) and write
the result. The token lists are the ones `tokenize_pairs` writes (the same `TextEncoder`), so a run trains on the
same batches either way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import torch

from hfsiamese.data.collator import PairBatch, SiamesePairCollator
from hfsiamese.data.text_encoding import TextEncoder
from hfsiamese.models.siamese.token_fields import tokenizer_max_length, warn_truncated_batch

__all__ = ["TEXT_SIDES", "TokenizingPairCollator"]

# The text column of each side (`tokenize_pairs`' defaults): explicit negatives hold a text or a list of texts.
TEXT_SIDES = (("a", "question1"), ("b", "question2"), ("n", "negative"))


@dataclass
class TokenizingPairCollator(SiamesePairCollator):
    """
    A `SiamesePairCollator` that also takes untokenised pairs (`question1`, `question2`, optionally `negative`, as
    `tokenize_pairs` reads them) and tokenises each batch itself, truncated at `max_length` (the tokenizer's
    `model_max_length` by default, at most 512), with `prompt` before every text. Batches that are tokenised
    already (an evaluation set) are padded as they are.
    """

    max_length: int | None = None
    prompt: str = ""
    _encoder: TextEncoder | None = field(default=None, init=False, repr=False)
    _warned: bool = field(default=False, init=False, repr=False)

    def __call__(self, features: PairBatch) -> dict[str, torch.Tensor]:
        table = features if isinstance(features, (pa.Table, pa.RecordBatch)) else _rows_as_table(features)
        if "input_ids_a" in table.schema.names:
            return super().__call__(features)
        return super().__call__(self.tokenized(table))

    def tokenized(self, table: pa.Table | pa.RecordBatch) -> pa.Table:
        """`table` with the token columns of each side its text columns hold, in place of those text columns."""
        names = table.schema.names
        missing = [column for _, column in TEXT_SIDES[:2] if column not in names]
        if missing:
            raise ValueError(
                f"pair batch lacks {missing} and is not tokenised (no input_ids_a): columns {sorted(names)}"
            )
        encoder = self._text_encoder()
        columns = {name: table.column(name) for name in names if name not in {c for _, c in TEXT_SIDES}}
        cut = 0
        for side, name in TEXT_SIDES:
            if name not in names:
                continue
            texts, offsets = _texts_of(table.column(name), name)
            encoded, flags = encoder([self.prompt + text for text in texts] if self.prompt else texts)
            cut += sum(flags)
            for token_field, lists in encoded.items():
                values = pa.array(lists, type=pa.list_(pa.int64()))
                columns[f"{token_field}_{side}"] = (
                    values if offsets is None else pa.ListArray.from_arrays(offsets, values)
                )
        if cut and not self._warned:
            self._warned = True
            warn_truncated_batch(cut, "texts", encoder.max_length, table.num_rows)
        return pa.table(columns)

    def _text_encoder(self) -> TextEncoder:
        if self._encoder is None:
            self._encoder = TextEncoder(self.tokenizer, self.max_length or tokenizer_max_length(self.tokenizer))
        return self._encoder


def _rows_as_table(rows: Sequence[dict[str, Any]]) -> pa.Table:
    if not rows:
        raise ValueError("cannot collate an empty batch")
    return pa.Table.from_pylist(list(rows))


def _texts_of(column: pa.ChunkedArray | pa.Array, name: str) -> tuple[list[str], pa.Array | None]:
    """The texts of one side, flat, and for a column of lists of texts (several negatives per row) the offsets."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = None
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        offsets = pc.subtract(array.offsets, array.offsets[0])  # a slice's offsets start where the slice does
        array = pc.list_flatten(array)
    if array.null_count:
        raise ValueError(f"column {name!r} holds {array.null_count} null texts in one batch: drop or fill them first")
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        raise ValueError(f"column {name!r} holds {array.type}, not text")
    return array.to_pylist(), offsets
