"""Tokenisation of pair datasets, once, with `Dataset.map(batched=True)` (cached by `datasets`)."""

from __future__ import annotations

from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from transformers import PreTrainedTokenizerBase

from hfsiamese.data.question_identity import KEY_COLUMNS, column_arrow
from hfsiamese.data.text_encoding import TextEncoder
from hfsiamese.models.siamese.token_fields import TOKEN_FIELDS, tokenizer_max_length, warn_truncated

# Per-row count of truncated texts, written by the map (so that it survives caching and
# `num_proc` workers) and dropped once summed.
_TRUNCATED_COLUMN = "__hfsiamese_truncated"


def tokenize_pairs(
    dataset: datasets.Dataset,
    tokenizer: PreTrainedTokenizerBase,
    *,
    max_length: int | None = None,
    question1_column: str = "question1",
    question2_column: str = "question2",
    negative_column: str = "negative",
    num_proc: int | None = None,
    keep_text: bool = False,
    prompt: str = "",
) -> datasets.Dataset:
    """
    Add `input_ids_a`, `attention_mask_a` (and `token_type_ids_a` where the tokenizer makes them)
    for the first texts and the `_b` columns for the second (and `_n` for explicit negatives when
    the data set has a `negative_column`, as `hfsiamese.data.triplets` makes; a column holding a list
    of texts per row, several negatives, gives a list of token lists per row), truncated to
    `max_length` (the tokenizer's `model_max_length` by default, at most 512), with a warning
    giving the count of texts that were cut. Padding is left to the collator. The `label` column
    becomes `labels`, the name the Trainer passes to the loss. Text columns (and the stored
    question identity) are dropped unless `keep_text`. A null or non-text value is a ValueError
    naming its column and row. `prompt` is put before every text (the model's default prompt,
    `model.config.prompt_text()`: training must see the texts as `encode` will).
    """
    for column in (question1_column, question2_column):
        if column not in dataset.column_names:
            raise ValueError(f"dataset has no column {column!r} (columns: {dataset.column_names})")
    if max_length is None:
        max_length = tokenizer_max_length(tokenizer)
    if _TRUNCATED_COLUMN in dataset.column_names:
        raise ValueError(f"dataset has a column named {_TRUNCATED_COLUMN!r}, which tokenize_pairs uses itself")

    sides = [("a", question1_column), ("b", question2_column)]
    if negative_column in dataset.column_names:
        sides.append(("n", negative_column))

    encoder = TextEncoder(tokenizer, max_length)

    def encode(batch: dict[str, list], indices: list[int]) -> dict[str, list]:
        out: dict[str, list] = {}
        truncated = [0] * len(indices)
        for side, column in sides:
            texts, counts = _side_texts(batch[column], column, indices)
            encoded, flags = encoder([prompt + text for text in texts] if prompt else texts)
            owners = range(len(indices)) if counts is None else np.repeat(np.arange(len(indices)), counts)
            for owner, cut in zip(owners, flags, strict=True):
                truncated[owner] += cut
            for field in TOKEN_FIELDS:
                if field in encoded:
                    out[f"{field}_{side}"] = encoded[field] if counts is None else _regrouped(encoded[field], counts)
        out[_TRUNCATED_COLUMN] = truncated
        return out

    # The stored question identity (see question_ids) is text too, and no use to the trainer.
    remove = (
        [] if keep_text else [column for _, column in sides] + [c for c in KEY_COLUMNS if c in dataset.column_names]
    )
    tokenized = dataset.map(
        encode, batched=True, with_indices=True, num_proc=num_proc, remove_columns=remove, desc="Tokenizing pairs"
    )
    cut = pc.sum(column_arrow(tokenized, _TRUNCATED_COLUMN)).as_py() or 0
    tokenized = tokenized.remove_columns(_TRUNCATED_COLUMN)
    warn_truncated(cut, _text_count(tokenized, len(sides)), max_length)
    if "label" in tokenized.column_names and "labels" not in tokenized.column_names:
        tokenized = tokenized.rename_column("label", "labels")
    return tokenized


def untokenized_pairs(dataset: datasets.Dataset) -> datasets.Dataset:
    """
    `dataset` as `tokenize_pairs` would leave it but for the token columns, for a collator that tokenises each batch
    (`hfsiamese.data.tokenizing_collator`): `label` renamed `labels`, the stored question identity dropped, the texts
    kept. Column operations only: the rows stay where they are (memory-mapped shards).
    """
    for column in ("question1", "question2"):
        if column not in dataset.column_names:
            raise ValueError(f"dataset has no column {column!r} (columns: {dataset.column_names})")
    dataset = dataset.remove_columns([c for c in KEY_COLUMNS if c in dataset.column_names])
    if "label" in dataset.column_names and "labels" not in dataset.column_names:
        dataset = dataset.rename_column("label", "labels")
    return dataset


def _text_count(tokenized: datasets.Dataset, sides: int) -> int:
    """How many texts were tokenised: one per row and side, or for lists of negatives each of them."""
    column = column_arrow(tokenized, "input_ids_n") if "input_ids_n" in tokenized.column_names else None
    if column is None or not pa.types.is_list(column.type.value_type):
        return len(tokenized) * sides
    return len(tokenized) * (sides - 1) + (pc.sum(pc.list_value_length(column)).as_py() or 0)


def _side_texts(values: list[Any], column: str, indices: list[int]) -> tuple[list[Any], list[int] | None]:
    """
    The texts of one side of a batch, flat, and how many each row holds: None for one text per row; a
    column of lists of texts (several negatives per row) gives its texts row after row, and each row's count.
    """
    if not any(isinstance(value, (list, tuple)) for value in values):
        _check_texts(values, column, indices)
        return values, None
    counts = []
    for position, value in enumerate(values):
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"column {column!r} holds lists of texts but row {indices[position]} holds {value!r}")
        _check_texts(list(value), column, [indices[position]] * len(value))
        counts.append(len(value))
    return [text for value in values for text in value], counts


def _regrouped(sequences: list[Any], counts: list[int]) -> list[list[Any]]:
    """Flat per-text sequences back into one list per row (`counts[i]` texts for row i)."""
    ends = np.cumsum(counts)
    return [sequences[end - count : end] for end, count in zip(ends, counts, strict=True)]


def _check_texts(texts: list[Any], column: str, indices: list[int]) -> None:
    """The tokenizer's own error for a null or a number names neither the column nor the row."""
    for position, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(
                f"column {column!r} holds {'a null' if text is None else f'a non-text value {text!r} ({type(text).__name__})'} in row "
                f"{indices[position]}, not text; drop or fill such rows first (hfsiamese.data.load_pairs drops empty ones)"
            )
