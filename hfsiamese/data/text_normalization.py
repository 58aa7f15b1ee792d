"""
The optional rewriting of question texts at load (`load_pairs(normalization=...)`): Unicode NFKC
and/or lowercasing, in Arrow (`pyarrow.compute.utf8_normalize` / `utf8_lower`), for encoders whose
tokenizer does not normalise by itself. (Not the folding that decides which questions are the
same: that is `question_ids.fold_text`, and it never changes the texts.)
"""

from __future__ import annotations

import functools
import unicodedata

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NORMALIZATIONS", "check_normalization", "normalize_texts"]

NORMALIZATIONS: tuple[str | None, ...] = (None, "lower", "nfkc", "nfkc_lower")


def normalize_texts(texts: pa.Array | pa.ChunkedArray, normalization: str | None) -> pa.Array | pa.ChunkedArray:
    """Apply one of `NORMALIZATIONS` to an Arrow string array: None (as is), "lower", "nfkc", "nfkc_lower"."""
    check_normalization(normalization)
    if normalization in {"nfkc", "nfkc_lower"}:
        texts = nfkc(texts)
    if normalization in {"lower", "nfkc_lower"}:
        texts = pc.utf8_lower(texts)
    return texts


def nfkc(texts: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """NFKC in Arrow where its kernel composes; by the standard library's `unicodedata` where it only decomposes."""
    if arrow_nfkc_composes():
        return pc.utf8_normalize(texts, form="NFKC")
    # Written by hand: pyarrow before 26 returns NFKD for form="NFKC" (apache/arrow#51225), and no library
    # normalises an Arrow array otherwise; pandas works around it the same way (pandas-dev/pandas#66221).
    if isinstance(texts, pa.ChunkedArray):
        return pa.chunked_array([nfkc(chunk) for chunk in texts.chunks], type=texts.type)
    normalized = [None if text is None else unicodedata.normalize("NFKC", text) for text in texts.to_pylist()]
    return pa.array(normalized, type=texts.type)


@functools.cache
def arrow_nfkc_composes() -> bool:
    """Whether this pyarrow's `utf8_normalize(form="NFKC")` composes ("A" + ring above -> "Å"), as NFKC must."""
    return pc.utf8_normalize(pa.array(["A\u030a"]), form="NFKC").to_pylist() == ["\u00c5"]


def check_normalization(normalization: str | None) -> None:
    """A ValueError naming the choices, for a `normalization` that is not one of `NORMALIZATIONS`."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
