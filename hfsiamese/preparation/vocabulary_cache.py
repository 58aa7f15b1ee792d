"""
The word vocabulary (LSTM, static encoders) of a run that trains from a prepared folder, kept in that folder: it is
trained on the training texts, which a prepared folder fixes, so a later run with the same tokenizer options reads it
instead of training it again (millions of texts: a minute and more), as `datasets` keeps a `map`'s result.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
from transformers import AutoTokenizer, PreTrainedTokenizerBase

from hfsiamese.preparation.prepare import MANIFEST

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
    folder = _prepared_folder_of(train_pairs)
    if folder is None:
        return build()
    key = json.dumps({"rows": train_pairs._fingerprint, "options": options}, sort_keys=True, default=str)
    saved = folder / VOCABULARIES / hashlib.blake2b(key.encode("utf-8"), digest_size=16).hexdigest()
    if not saved.is_dir():
        saved.parent.mkdir(exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=".partial-", dir=saved.parent))
        try:
            build().save_pretrained(str(temporary))
            os.replace(temporary, saved)  # whole or not at all; a run that lost the race keeps the other's
        except OSError:
            if not saved.is_dir():
                raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
    return AutoTokenizer.from_pretrained(str(saved))


def _prepared_folder_of(pairs: datasets.Dataset) -> Path | None:
    """The prepared folder every Arrow file of `pairs` lies in, or None."""
    folders = {Path(entry["filename"]).parent for entry in pairs.cache_files}
    if len(folders) != 1:
        return None
    folder = folders.pop()
    return folder if (folder / MANIFEST).is_file() else None
