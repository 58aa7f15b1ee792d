"""Tokenisation of pair datasets, once, with `Dataset.map(batched=True)` (cached by `datasets`)."""

from __future__ import annotations

import datasets
from transformers import PreTrainedTokenizerBase

from .collator import TOKEN_FIELDS


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
) -> datasets.Dataset:
    """
    Add `input_ids_a`, `attention_mask_a` (and `token_type_ids_a` where the tokenizer makes them)
    for the first texts and the `_b` columns for the second (and `_n` for explicit negatives when
    the data set has a `negative_column`, as `hfsiamese.data.triplets` makes), truncated to
    `max_length` (the tokenizer's `model_max_length` by default). Padding is left to the collator. The `label` column
    becomes `labels`, the name the Trainer passes to the loss. Text columns are dropped unless
    `keep_text`.
    """
    for column in (question1_column, question2_column):
        if column not in dataset.column_names:
            raise ValueError(f"dataset has no column {column!r} (columns: {dataset.column_names})")
    if max_length is None:
        max_length = min(tokenizer.model_max_length, 512)

    sides = [("a", question1_column), ("b", question2_column)]
    if negative_column in dataset.column_names:
        sides.append(("n", negative_column))

    def encode(batch: dict[str, list]) -> dict[str, list]:
        out = {}
        for side, column in sides:
            encoded = tokenizer(batch[column], truncation=True, max_length=max_length)
            for field in TOKEN_FIELDS:
                if field in encoded:
                    out[f"{field}_{side}"] = encoded[field]
        return out

    remove = [] if keep_text else [column for _, column in sides]
    tokenized = dataset.map(encode, batched=True, num_proc=num_proc, remove_columns=remove, desc="Tokenizing pairs")
    if "label" in tokenized.column_names and "labels" not in tokenized.column_names:
        tokenized = tokenized.rename_column("label", "labels")
    return tokenized
