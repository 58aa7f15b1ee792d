"""Batch collation for pairs: each side padded to its own longest text, by whole-batch array operations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch
from transformers import PreTrainedTokenizerBase

from hfsiamese.losses.teacher_scores import TEACHER_SCORES_COLUMN
from hfsiamese.models.siamese.padding import (
    pad_ragged,
    padded_width,
    ragged_from_arrow,
    ragged_from_rows,
    token_positions,
)
from hfsiamese.models.siamese.token_fields import TOKEN_FIELDS

SIDES = ("a", "b")
OPTIONAL_SIDES = ("n",)  # explicit negatives
LABEL_COLUMNS = ("labels", "label")  # `labels` wins when a data set has both
GROUP_COLUMN = "group_id"
#: Every column the collator reads; the others (texts, lengths) are never gathered into a batch.
PAIR_BATCH_COLUMNS = (
    *(f"{field}_{side}" for side in SIDES + OPTIONAL_SIDES for field in TOKEN_FIELDS),
    *LABEL_COLUMNS,
    GROUP_COLUMN,
    TEACHER_SCORES_COLUMN,
)

# The same batch, whichever way it came: rows as dicts, or one Arrow table (`arrow_batches.py`).
PairBatch: TypeAlias = Sequence[dict[str, Any]] | pa.Table | pa.RecordBatch


@dataclass
class SiamesePairCollator:
    """
    Collate tokenised pairs (`input_ids_a`, `attention_mask_a`, `input_ids_b`, ..., and the `_n`
    side of explicit negatives when present) into tensors.

    Each side is padded as the tokenizer's own `pad` would (its pad id, pad token type id and
    padding side, `pad_to_multiple_of`) to the longest text of that side in the batch, not of the
    pair: short questions are not padded to long ones. `labels` and `group_ids` (from a `group_id`
    column) pass through as tensors; other columns are ignored, so datasets may keep their text
    columns.

    The batch is a list of row dicts (what a `datasets.Dataset` gives a DataLoader) or one Arrow
    table of rows (what `arrow_batch_dataset` gives it, with no Python object per token). Either
    way the padding is whole-batch array operations, never a Python loop over tokens.
    """

    tokenizer: PreTrainedTokenizerBase
    pad_to_multiple_of: int | None = None

    def __call__(self, features: PairBatch) -> dict[str, torch.Tensor]:
        columns = _ArrowColumns(features) if isinstance(features, (pa.Table, pa.RecordBatch)) else _RowColumns(features)
        names = columns.names
        if not columns.num_rows:
            raise ValueError("cannot collate an empty batch")
        missing = [f"input_ids_{side}" for side in SIDES if f"input_ids_{side}" not in names]
        if missing:
            raise ValueError(
                f"pair features lack {missing}; tokenise pairs with hfsiamese.data.tokenize_pairs first "
                f"(found keys: {sorted(names)})"
            )
        pad_values = {
            "input_ids": self._pad_token_id(),
            "attention_mask": 0,
            "token_type_ids": getattr(self.tokenizer, "pad_token_type_id", 0),
        }
        with_mask = "attention_mask" in getattr(self.tokenizer, "model_input_names", ())
        batch: dict[str, torch.Tensor] = {}
        for side in SIDES + tuple(side for side in OPTIONAL_SIDES if f"input_ids_{side}" in names):
            if side in OPTIONAL_SIDES:
                self._check_negatives_per_row(columns, f"input_ids_{side}")
            ids, lengths = columns.ragged(f"input_ids_{side}")
            positions = token_positions(
                lengths, padded_width(lengths, self.pad_to_multiple_of), self.tokenizer.padding_side
            )
            for field in TOKEN_FIELDS:
                name = f"{field}_{side}"
                if name not in names:
                    continue
                values, field_lengths = (ids, lengths) if field == "input_ids" else columns.ragged(name)
                if not np.array_equal(field_lengths, lengths):
                    raise ValueError(
                        f"{name} and input_ids_{side} differ in length on some rows: tokenise them together"
                    )
                batch[name] = pad_ragged(values, positions, pad_values[field])
            if with_mask and f"attention_mask_{side}" not in names:  # tokenizer.pad makes one too
                batch[f"attention_mask_{side}"] = torch.from_numpy(positions.astype(np.int64))
        label = next((name for name in LABEL_COLUMNS if name in names), None)
        if label is not None:
            batch["labels"] = columns.scalars(label)
        if GROUP_COLUMN in names:
            batch["group_ids"] = columns.scalars(GROUP_COLUMN)
        if TEACHER_SCORES_COLUMN in names:
            batch[TEACHER_SCORES_COLUMN] = teacher_scores_tensor(columns)
        return batch

    @staticmethod
    def _check_negatives_per_row(columns: _RowColumns | _ArrowColumns, name: str) -> None:
        """Rows holding lists of negatives: as many in every row of the batch (they are flattened row after row)."""
        counts = columns.group_sizes(name)
        if counts is not None and len(np.unique(counts)) > 1:
            raise ValueError(
                f"the rows of one batch hold different numbers of negatives ({', '.join(map(str, np.unique(counts)))}): "
                "give every row the same number"
            )

    def _pad_token_id(self) -> int:
        """The pad id, refused where `tokenizer.pad` refuses it (even for a batch needing no padding)."""
        pad_id = self.tokenizer.pad_token_id
        if self.tokenizer.pad_token is None or pad_id is None or pad_id < 0:
            raise ValueError(
                "Asking to pad but the tokenizer does not have a padding token. "
                "Please select a token to use as `pad_token` `(tokenizer.pad_token = tokenizer.eos_token e.g.)` "
                "or add a new pad token via `tokenizer.add_special_tokens({'pad_token': '[PAD]'})`."
            )
        return int(pad_id)


def teacher_scores_tensor(columns: _RowColumns | _ArrowColumns) -> torch.Tensor:
    """The `teacher_scores` column as `(batch, scores per row)` float32; rows of different lengths are refused."""
    values, lengths = columns.floats(TEACHER_SCORES_COLUMN)
    if len(np.unique(lengths)) > 1:
        raise ValueError(
            f"{TEACHER_SCORES_COLUMN} rows hold different numbers of scores in one batch "
            f"({', '.join(map(str, np.unique(lengths)))}): give every row the same number of negatives"
        )
    return torch.from_numpy(values.astype(np.float32).reshape(len(lengths), -1))


class _RowColumns:
    """A list of row dicts seen column by column (its first row names the columns, as before)."""

    def __init__(self, rows: Sequence[dict[str, Any]]) -> None:
        self.rows = rows
        self.num_rows = len(rows)
        self.names = list(rows[0]) if rows else []

    def ragged(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Flat values and per-sequence lengths; rows holding lists of sequences give theirs row after row."""
        values = [row[name] for row in self.rows]
        if self.group_sizes(name) is not None:
            values = [sequence for row in values for sequence in row]
        return ragged_from_rows(values)

    def group_sizes(self, name: str) -> np.ndarray | None:
        """How many sequences each row holds, for a column of lists of sequences; None for one sequence per row."""
        first = next((row[name] for row in self.rows if len(row[name])), None)
        if first is None or np.ndim(first[0]) == 0:
            return None
        return np.fromiter((len(row[name]) for row in self.rows), dtype=np.int64, count=self.num_rows)

    def floats(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Flat float64 values and per-row lengths of a column of lists of numbers."""
        rows = [np.asarray(row[name], dtype=np.float64).reshape(-1) for row in self.rows]
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        return (np.concatenate(rows) if rows else np.empty(0)), lengths

    def scalars(self, name: str) -> torch.Tensor:
        return torch.tensor([row[name] for row in self.rows], dtype=torch.long)


class _ArrowColumns:
    """An Arrow table (or record batch) of rows, read column by column without Python objects per row."""

    def __init__(self, table: pa.Table | pa.RecordBatch) -> None:
        self.table = table
        self.num_rows = table.num_rows
        self.names = table.schema.names

    def ragged(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Flat values and per-sequence lengths; rows holding lists of sequences give theirs row after row."""
        column = self.table.column(name)
        if self.group_sizes(name) is not None:
            column = pc.list_flatten(column)
        return ragged_from_arrow(column, name)

    def group_sizes(self, name: str) -> np.ndarray | None:
        """How many sequences each row holds, for a column of lists of sequences; None for one sequence per row."""
        column = self.table.column(name)
        if not _is_list(column.type) or not _is_list(column.type.value_type):
            return None
        if column.null_count:
            raise ValueError(f"column {name!r} holds {column.null_count} null rows: tokenise every text first")
        return pc.list_value_length(column).to_numpy().astype(np.int64)

    def floats(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Flat float64 values and per-row lengths of a list column of numbers."""
        column = self.table.column(name)
        if column.null_count:
            raise ValueError(f"column {name!r} holds {column.null_count} null rows")
        values = pc.list_flatten(column).to_numpy(zero_copy_only=False).astype(np.float64)
        return values, pc.list_value_length(column).to_numpy().astype(np.int64)

    def scalars(self, name: str) -> torch.Tensor:
        """One int64 value per row (labels, group ids)."""
        column = self.table.column(name)
        if column.null_count:
            raise ValueError(f"column {name!r} holds {column.null_count} null rows")
        return torch.from_numpy(np.array(column.to_numpy(), dtype=np.int64))  # a copy: Arrow buffers are read-only


def _is_list(arrow_type: pa.DataType) -> bool:
    return pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type)
