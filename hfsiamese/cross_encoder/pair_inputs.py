"""
What a cross-encoder reads: both questions of a pair as ONE sequence (`[CLS] q1 [SEP] q2 [SEP]`), so that
attention runs between them; tokenised in one order or in both, and padded per batch.

A pair's score should not depend on which question came first. A cross-encoder sees `(a, b)` and
`(b, a)` as different inputs (segment ids, positions), so hfsiamese makes it symmetric by construction
where it matters: training rows take each pair in both orders (`both_orders=True`), and scoring averages
the two orders' logits (`CrossEncoder.pair_order == "both"`); evaluation rows carry both orders for that
(the `*_swapped` columns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import datasets
import torch
from transformers import PreTrainedTokenizerBase

from hfsiamese.models.siamese.token_fields import TOKEN_FIELDS, tokenizer_max_length, truncated_flags, warn_truncated

SWAPPED = "_swapped"
#: The label column of tokenised rows: what the Trainer hands the loss (a float: silver pairs carry soft labels).
LABELS = "labels"


def encode_pairs(
    tokenizer: PreTrainedTokenizerBase, texts_a: Sequence[str], texts_b: Sequence[str], max_length: int
) -> tuple[dict[str, list], int]:
    """Token fields of the pairs `(texts_a[i], texts_b[i])` as one sequence each, unpadded, and how many were cut."""
    encoded = tokenizer(list(texts_a), list(texts_b), truncation="longest_first", max_length=max_length)
    fields = {name: encoded[name] for name in TOKEN_FIELDS if name in encoded}
    return fields, sum(truncated_flags(encoded, max_length))


def tokenize_cross_pairs(
    dataset: datasets.Dataset,
    tokenizer: PreTrainedTokenizerBase,
    *,
    max_length: int | None = None,
    both_orders: bool = False,
    swapped_columns: bool = False,
    num_proc: int | None = None,
) -> datasets.Dataset:
    """
    Tokenise the pairs of `dataset` (`question1`, `question2`, and `label` where there is one) for a
    cross-encoder: `input_ids`, `attention_mask` (and `token_type_ids`) of each pair read as one sequence,
    cut to `max_length` tokens in all (the longer question first), with one warning counting the cut pairs.

    `both_orders=True` (training) gives every pair twice, as `(q1, q2)` and as `(q2, q1)`;
    `swapped_columns=True` (evaluation) keeps one row per pair and adds the other order as `*_swapped`
    columns, which a model scoring both orders averages. `label` becomes a float `labels` column.
    """
    for column in ("question1", "question2"):
        if column not in dataset.column_names:
            raise ValueError(f"dataset has no column {column!r} (columns: {dataset.column_names})")
    if max_length is None:
        max_length = tokenizer_max_length(tokenizer)
    if both_orders:
        dataset = both_orders_rows(dataset)
    truncated = [0]

    def encode(batch: dict[str, list]) -> dict[str, list]:
        _check_texts(batch)
        out, cut = encode_pairs(tokenizer, batch["question1"], batch["question2"], max_length)
        truncated[0] += cut
        if swapped_columns:
            reverse, _ = encode_pairs(tokenizer, batch["question2"], batch["question1"], max_length)
            out.update({name + SWAPPED: values for name, values in reverse.items()})
        if "label" in batch:
            out[LABELS] = [float(label) for label in batch["label"]]
        return out

    kept = [c for c in dataset.column_names if c in ("group_id",)]
    tokenized = dataset.map(
        encode,
        batched=True,
        num_proc=num_proc,
        remove_columns=[c for c in dataset.column_names if c not in kept],
        desc="Tokenising pairs for the cross-encoder",
    )
    if num_proc in (None, 1):  # counted in this process only; worker processes count for themselves
        warn_truncated(truncated[0], len(dataset), max_length, stacklevel=2, what="pairs")
    return tokenized


def both_orders_rows(dataset: datasets.Dataset) -> datasets.Dataset:
    """Every row of `dataset`, then every row with its questions swapped: the training rows of a cross-encoder that
    scores both orders (`tokenize_cross_pairs(both_orders=True)`, and the collator that tokenises them)."""
    swapped = dataset.rename_columns({"question1": "question2", "question2": "question1"})
    return datasets.concatenate_datasets([dataset, swapped.cast(dataset.features)])


def _check_texts(batch: dict[str, list]) -> None:
    for column in ("question1", "question2"):
        for text in batch[column]:
            if not isinstance(text, str):
                raise ValueError(f"column {column!r} holds {text!r}, not a text: drop or fill such rows first")


@dataclass
class CrossPairCollator:
    """
    Pad tokenised cross-encoder rows into a batch: the pair fields (and their `*_swapped` order, when
    present) each padded as the tokenizer pads, to the batch's longest sequence; `labels` as float32.
    Other columns are dropped.
    """

    tokenizer: PreTrainedTokenizerBase
    pad_to_multiple_of: int | None = None

    def __call__(self, rows: Sequence[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if not rows:
            raise ValueError("cannot collate an empty batch")
        if "input_ids" not in rows[0]:
            raise ValueError(
                f"cross-encoder rows lack input_ids (have {sorted(rows[0])}); tokenise them with "
                "hfsiamese.cross_encoder.pair_inputs.tokenize_cross_pairs first"
            )
        batch: dict[str, torch.Tensor] = {}
        for suffix in ("", SWAPPED):
            names = [name for name in TOKEN_FIELDS if name + suffix in rows[0]]
            if not names:
                continue
            padded = self.tokenizer.pad(
                [{name: row[name + suffix] for name in names} for row in rows],
                padding=True,
                pad_to_multiple_of=self.pad_to_multiple_of,
                return_tensors="pt",
            )
            batch.update({name + suffix: padded[name] for name in names})
        if LABELS in rows[0]:
            batch[LABELS] = torch.tensor([float(row[LABELS]) for row in rows], dtype=torch.float32)
        return batch


def swapped_inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor] | None:
    """The `*_swapped` fields of a batch as plain model inputs, or None when the batch has none."""
    found = {name: batch[name + SWAPPED] for name in TOKEN_FIELDS if name + SWAPPED in batch}
    return found or None


def model_inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The fields of a batch a sequence-classification model takes (the pair in its given order)."""
    return {name: batch[name] for name in TOKEN_FIELDS if name in batch}


__all__ = [
    "LABELS",
    "CrossPairCollator",
    "both_orders_rows",
    "encode_pairs",
    "model_inputs",
    "swapped_inputs",
    "tokenize_cross_pairs",
]
