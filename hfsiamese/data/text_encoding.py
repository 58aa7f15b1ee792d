"""
Texts to token lists, as `tokenizer(texts, truncation=True, max_length=...)` gives them, for the data pipeline.

A fast tokenizer's `__call__` runs the Rust `encode_batch` and then builds a Python dictionary per text (with every
field transformers may return); on millions of training texts that conversion costs more than the tokenisation
itself. For a `PreTrainedTokenizerFast` this module calls the Rust tokenizer directly, on a private copy set to
truncate as the call would (the user's tokenizer is left as it is), and reads only the fields a model takes: the same
lists, about twice as fast. Any other tokenizer goes through its `__call__`.
"""

from __future__ import annotations

from typing import Any

from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from hfsiamese.models.siamese.token_fields import TOKEN_FIELDS, truncated_flags

__all__ = ["TextEncoder"]


class TextEncoder:
    """Encodes batches of texts with `tokenizer`, truncated at `max_length`: per field, one token list per text."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, max_length: int) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        self._backend = _truncating_copy(tokenizer, max_length)
        names = set(getattr(tokenizer, "model_input_names", ()))
        # The fields `__call__` returns by default (transformers: token types and mask when the model takes them).
        self._fields = ["input_ids"] + [field for field in TOKEN_FIELDS[1:] if field in names]

    def __call__(self, texts: list[str]) -> tuple[dict[str, list[list[int]]], list[bool]]:
        """The token lists of `texts` per field, and per text whether it was cut at `max_length`."""
        if self._backend is None:
            encoded = self.tokenizer(texts, truncation=True, max_length=self.max_length)
            return {f: encoded[f] for f in TOKEN_FIELDS if f in encoded}, truncated_flags(encoded, self.max_length)
        encodings = self._backend.encode_batch(texts, add_special_tokens=True)
        out: dict[str, list[list[int]]] = {"input_ids": [encoding.ids for encoding in encodings]}
        if "attention_mask" in self._fields:
            out["attention_mask"] = [encoding.attention_mask for encoding in encodings]
        if "token_type_ids" in self._fields:
            out["token_type_ids"] = [encoding.type_ids for encoding in encodings]
        return out, [bool(encoding.overflowing) for encoding in encodings]


def _truncating_copy(tokenizer: PreTrainedTokenizerBase, max_length: int) -> Any | None:
    """
    A copy of a fast tokenizer's Rust tokenizer that truncates as `tokenizer(..., truncation=True, max_length=...)`
    does (longest first, no stride, the tokenizer's truncation side) and never pads; None for other tokenizers, and
    for fast ones whose special-token splitting differs from the Rust default (their `__call__` changes it).
    """
    if not isinstance(tokenizer, PreTrainedTokenizerFast):
        return None
    backend = tokenizer.backend_tokenizer
    if bool(getattr(tokenizer, "split_special_tokens", False)) != bool(backend.encode_special_tokens):
        return None
    from tokenizers import Tokenizer  # transformers' own dependency

    copy = Tokenizer.from_str(backend.to_str())
    copy.encode_special_tokens = backend.encode_special_tokens
    copy.no_padding()
    copy.enable_truncation(
        max_length=max_length, stride=0, strategy="longest_first", direction=tokenizer.truncation_side
    )
    return copy
