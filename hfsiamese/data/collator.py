"""Batch collation for pairs: both sides padded dynamically, to the longest text of each side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import PreTrainedTokenizerBase

SIDES = ("a", "b")
OPTIONAL_SIDES = ("n",)  # explicit negatives
TOKEN_FIELDS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass
class SiamesePairCollator:
    """
    Collate tokenised pairs (`input_ids_a`, `attention_mask_a`, `input_ids_b`, ..., and the `_n`
    side of explicit negatives when present) into tensors.

    Each side is padded with the tokenizer's own `pad` (its pad id and padding side) to the longest
    text of that side in the batch, not of the pair: short questions are not padded to long ones.
    `labels` and `group_ids` (from a `group_id` column) pass through as tensors; other columns are
    ignored, so datasets may keep their text columns.
    """

    tokenizer: PreTrainedTokenizerBase
    pad_to_multiple_of: int | None = None

    def __call__(self, features: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        if not features:
            raise ValueError("cannot collate an empty batch")
        missing = [f"input_ids_{side}" for side in SIDES if f"input_ids_{side}" not in features[0]]
        if missing:
            raise ValueError(
                f"pair features lack {missing}; tokenise pairs with hfsiamese.data.tokenize_pairs first "
                f"(found keys: {sorted(features[0])})"
            )
        batch: dict[str, torch.Tensor] = {}
        for side in SIDES + tuple(side for side in OPTIONAL_SIDES if f"input_ids_{side}" in features[0]):
            side_features = [
                {field: f[f"{field}_{side}"] for field in TOKEN_FIELDS if f"{field}_{side}" in f} for f in features
            ]
            padded = self.tokenizer.pad(side_features, pad_to_multiple_of=self.pad_to_multiple_of, return_tensors="pt")
            for field, tensor in padded.items():
                batch[f"{field}_{side}"] = tensor
        if "labels" in features[0] or "label" in features[0]:
            key = "labels" if "labels" in features[0] else "label"
            batch["labels"] = torch.tensor([f[key] for f in features], dtype=torch.long)
        if "group_id" in features[0]:
            batch["group_ids"] = torch.tensor([f["group_id"] for f in features], dtype=torch.long)
        return batch
