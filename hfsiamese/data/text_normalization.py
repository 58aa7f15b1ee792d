"""
The optional rewriting of question texts at load (`load_pairs(normalization=...)`): Unicode NFKC
and/or lowercasing, in Arrow (`pyarrow.compute.utf8_normalize` / `utf8_lower`), for encoders whose
tokenizer does not normalise by itself. (Not the folding that decides which questions are the
same: that is `question_ids.fold_text`, and it never changes the texts.)
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["NORMALIZATIONS", "check_normalization", "normalize_texts"]

NORMALIZATIONS: tuple[str | None, ...] = (None, "lower", "nfkc", "nfkc_lower")


def normalize_texts(texts: pa.Array | pa.ChunkedArray, normalization: str | None) -> pa.Array | pa.ChunkedArray:
    """Apply one of `NORMALIZATIONS` to an Arrow string array: None (as is), "lower", "nfkc", "nfkc_lower"."""
    check_normalization(normalization)
    if normalization in {"nfkc", "nfkc_lower"}:
        texts = pc.utf8_normalize(texts, form="NFKC")
    if normalization in {"lower", "nfkc_lower"}:
        texts = pc.utf8_lower(texts)
    return texts


def check_normalization(normalization: str | None) -> None:
    """A ValueError naming the choices, for a `normalization` that is not one of `NORMALIZATIONS`."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {NORMALIZATIONS}, got {normalization!r}")
