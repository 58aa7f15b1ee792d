"""What a preparation depends on besides the file: the data options that change its rows, and their fingerprint."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_VERSION", "PreparationOptions", "source_fingerprint"]

# Bumped whenever the shards' columns or the manifest's meaning change: an older folder is then prepared again.
SCHEMA_VERSION = 1
_EDGE_BYTES = 1 << 20  # bytes hashed at each end of the source file


@dataclass(frozen=True)
class PreparationOptions:
    """
    The options of a preparation, named as `DataArguments` names them (`hfsiamese train` refuses a prepared folder
    whose options differ from its own): how the file is read (`data_format` and the column names) and how it is
    split (`validation_fraction`, `test_fraction`, `split_seed`).
    """

    data_format: str | None = None
    question1_column: str | None = None
    question2_column: str | None = None
    label_column: str | None = None
    id1_column: str | None = None
    id2_column: str | None = None
    validation_fraction: float = 0.1
    test_fraction: float = 0.0
    split_seed: int = 42

    @classmethod
    def from_data_args(cls, data_args: Any) -> PreparationOptions:
        """The options of a run's `DataArguments` (or anything with the same attribute names)."""
        return cls(**{name: getattr(data_args, name) for name in cls.__dataclass_fields__})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def reading_options(self) -> dict[str, Any]:
        """The `load_pairs` keywords of how the file is read (its format, its columns): a run reading a pair file and a
        preparation read it alike."""
        columns = ("question1_column", "question2_column", "label_column", "id1_column", "id2_column")
        return {"format": self.data_format, **{name: getattr(self, name) for name in columns}}


def source_fingerprint(path: str | os.PathLike) -> dict[str, Any]:
    """
    What identifies the source file without reading it all: its size, modification time and a BLAKE2b hash of its
    first and last MiB (a whole-file hash of a 5 GB file would take longer than reusing the preparation saves).
    """
    path = Path(path)
    stat = path.stat()
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as handle:
        digest.update(handle.read(_EDGE_BYTES))
        if stat.st_size > _EDGE_BYTES:
            handle.seek(max(stat.st_size - _EDGE_BYTES, _EDGE_BYTES))
            digest.update(handle.read(_EDGE_BYTES))
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "edges_blake2b": digest.hexdigest()}


def preparation_key(source: dict[str, Any], options: PreparationOptions) -> str:
    """One hex name for (source fingerprint, options, schema version): the cache folder of that preparation."""
    text = json.dumps({"source": source, "options": options.to_dict(), "schema": SCHEMA_VERSION}, sort_keys=True)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()
