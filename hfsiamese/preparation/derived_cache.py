"""
What a run computes from a prepared folder's rows, kept in that folder for the next run: the rows are fixed by the
folder, so a value derived from them (a word vocabulary, the training questions' fingerprint, the split report) is
the same on every run, and on millions of pairs each takes from seconds to minutes. This is what `datasets` does for
a `map`'s result, for values that are not a data set: keyed by the rows' `datasets` fingerprints and the options,
written whole or not at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import datasets

from hfsiamese.preparation.prepare import MANIFEST

__all__ = ["kept_in_prepared_folder", "prepared_folder_of"]

T = TypeVar("T")


def prepared_folder_of(pairs: datasets.Dataset) -> Path | None:
    """The prepared folder every Arrow file of `pairs` lies in, or None (rows read from a pair file, or built)."""
    folders = {Path(entry["filename"]).parent for entry in pairs.cache_files}
    if len(folders) != 1:
        return None
    folder = folders.pop()
    return folder if (folder / MANIFEST).is_file() else None


def kept_in_prepared_folder(
    pairs: datasets.Dataset,
    kind: str,
    key: dict[str, Any],
    build: Callable[[], T],
    save: Callable[[T, Path], None],
    load: Callable[[Path], T],
) -> T:
    """
    The value `build` derives from `pairs` (with the options in `key`): read with `load` from the prepared folder
    `pairs` comes from when a run saved it there (subfolder `kind`, one folder per `key` and rows), else built, saved
    there with `save` (into an empty folder) and read back, so that this run and the later ones use the same value.
    Rows that do not come from a prepared folder: `build()`, nothing kept.
    """
    folder = prepared_folder_of(pairs)
    if folder is None:
        return build()
    identity = json.dumps({"rows": pairs._fingerprint, **key}, sort_keys=True, default=str)
    saved = folder / kind / hashlib.blake2b(identity.encode("utf-8"), digest_size=16).hexdigest()
    if not saved.is_dir():
        saved.parent.mkdir(exist_ok=True)
        temporary = Path(tempfile.mkdtemp(prefix=".partial-", dir=saved.parent))
        try:
            save(build(), temporary)
            os.replace(temporary, saved)  # whole or not at all; a run that lost the race keeps the other's
        except OSError:
            if not saved.is_dir():
                raise
        finally:
            shutil.rmtree(temporary, ignore_errors=True)
    return load(saved)
