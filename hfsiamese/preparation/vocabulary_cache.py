"""
The word vocabulary (LSTM, static encoders) of a run that trains from a prepared folder, kept in that folder: it is
trained on the training texts, which a prepared folder fixes, so a later run with the same tokenizer options reads it
instead of training it again (millions of texts: a minute and more).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from hfsiamese.preparation.derived_cache import kept_in_prepared_folder

__all__ = ["VOCABULARIES", "cached_word_tokenizer"]

VOCABULARIES = "word_vocabularies"  # the prepared folder's subfolder, one folder per (training rows, options)


def cached_word_tokenizer(
    train_pairs: datasets.Dataset, options: dict[str, Any], build: Callable[[], PreTrainedTokenizerBase]
) -> PreTrainedTokenizerBase:
    """
    The tokenizer `build` trains on `train_pairs` with `options`: read from the prepared folder `train_pairs` comes
    from when an earlier run saved it there, else built, saved there and read back (so that this run and the later
    ones tokenise with one and the same object, and share `datasets`' cached tokenisation). Rows that do not come
    from a prepared folder: `build()`, nothing kept.
    """
    return kept_in_prepared_folder(
        train_pairs,
        VOCABULARIES,
        {"options": options},
        build,
        save=lambda tokenizer, folder: tokenizer.save_pretrained(str(folder)),
        load=_load_tokenizer,
    )


def _load_tokenizer(folder: Path) -> PreTrainedTokenizerBase:
    return AutoTokenizer.from_pretrained(str(folder))
