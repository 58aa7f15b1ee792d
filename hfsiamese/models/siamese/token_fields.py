"""
What a tokenised text is to this package: the fields a model reads, the length texts are cut at by
default, and how many texts were cut.

The data pipeline (`tokenize_pairs`), the model's `encode`, the pipeline and the sentence-transformers
export all truncate texts; asking here keeps them cutting at the same length, so that a pair scores the
same whichever way it reaches the model. This file travels with every checkpoint as remote code (the
modeling file imports it relatively), so it may import only torch and the standard library.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

import torch

# The tokenizer outputs a side of a pair is made of; anything else a tokenizer returns is not a model input.
TOKEN_FIELDS = ("input_ids", "attention_mask", "token_type_ids")

# Tokens kept per text when nothing says otherwise. A tokenizer saved without a limit of its own says
# 1e30 (transformers' "no limit"), which would let one 100k-character text pad its whole batch.
DEFAULT_MAX_LENGTH = 512


def tokenizer_max_length(tokenizer: Any) -> int:
    """The tokenizer's `model_max_length`, at most `DEFAULT_MAX_LENGTH` (also when it declares none)."""
    return min(int(getattr(tokenizer, "model_max_length", None) or DEFAULT_MAX_LENGTH), DEFAULT_MAX_LENGTH)


def token_fields(features: Mapping[str, Any], device: torch.device | str | None = None) -> dict[str, Any]:
    """The model inputs among a tokenizer's outputs (`TOKEN_FIELDS`), moved to `device` when one is given."""
    kept = {name: value for name, value in features.items() if name in TOKEN_FIELDS}
    return {name: value.to(device) for name, value in kept.items()} if device is not None else kept


def truncated_flags(encoded: Any, max_length: int | None) -> list[bool]:
    """
    Per text of a tokenised batch (padded tensors or plain lists): was it cut at `max_length`?

    Fast tokenizers keep each text's cut-off tokens, so the answer is exact; Python tokenizers keep
    none, so a text that reached the limit counts as cut (an upper bound).
    """
    encodings = getattr(encoded, "encodings", None)
    if encodings:
        return [bool(encoding.overflowing) for encoding in encodings]
    input_ids = encoded["input_ids"]
    if max_length is None:
        return [False] * len(input_ids)
    mask = encoded.get("attention_mask")
    if isinstance(mask, torch.Tensor):  # padded: the mask says where each text ends
        return (mask.sum(dim=1) >= max_length).tolist()
    return [len(ids) >= max_length for ids in input_ids]


# `warn_truncated`'s message as a pattern (group 1: how many were cut), for whoever counts these warnings
# (`hfsiamese.service.truncation_log`): kept beside the message so that the two cannot drift apart.
TRUNCATED_PATTERN = r"(\d+) of \d+ (?:texts|pairs) were longer than max_length=\d+ tokens and were truncated"


def warn_truncated(count: int, total: int, max_length: int, *, stacklevel: int = 2, what: str = "texts") -> None:
    """The one warning for texts (or pairs: `what`) cut at `max_length`: a count, never silence (`stacklevel` as `warnings.warn`'s)."""
    if count:
        warnings.warn(
            f"{count} of {total} {what} were longer than max_length={max_length} tokens and were truncated",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def warn_truncated_batch(cut: int, what: str, max_length: int, rows: int) -> None:
    """
    The warning of a training collator that tokenises batch by batch (both families'), given once by the collator:
    `cut` `what` ("texts", "pairs") of one batch of `rows` pairs were truncated, the set not counted up front. It
    points at the collator's caller.
    """
    warnings.warn(
        f"training {what} longer than max_length={max_length} tokens are truncated ({cut} in one batch of {rows} "
        "pairs; tokenised batch by batch, so not counted up front)",
        UserWarning,
        stacklevel=4,
    )


__all__ = [
    "DEFAULT_MAX_LENGTH",
    "TOKEN_FIELDS",
    "TRUNCATED_PATTERN",
    "token_fields",
    "tokenizer_max_length",
    "truncated_flags",
    "warn_truncated",
    "warn_truncated_batch",
]
