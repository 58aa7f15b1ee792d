"""Where a `LanceDBStore`'s table lives: a folder (LanceDB embedded), object storage, or LanceDB Cloud / Enterprise."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from hfsiamese.search.stores.base import import_engine, local_folder

__all__ = ["connect", "import_lancedb", "is_uri"]


def import_lancedb() -> Any:
    """The `lancedb` module, or an ImportError saying which extra installs it."""
    return import_engine("lancedb", "lancedb", "lancedb")


def is_uri(location: str) -> bool:
    return "://" in location


def connect(location: str | os.PathLike, *, api_key: str | None, create: bool) -> tuple[Any, str, bool]:
    """
    `(db, where, remote)`: the LanceDB connection of `location` (a folder, created if missing with `create`; an
    object-storage URI, credentials from the environment; or a `db://` URI with `api_key`), where it is for messages,
    and whether it is LanceDB Cloud / Enterprise. An `api_key` for anything but a `db://` URI is refused in one line.
    """
    lancedb = import_lancedb()
    location = os.fspath(location)
    if location.startswith("db://"):
        return lancedb.connect(location, api_key=api_key), location, True
    if is_uri(location):
        if api_key is not None:
            raise ValueError(
                "api_key is for LanceDB Cloud or Enterprise (a db:// URI), not object storage: drop it, and "
                "give the storage credentials in the environment"
            )
        return lancedb.connect(location, read_consistency_interval=timedelta(0)), location, False
    if api_key is not None:
        raise ValueError("api_key is for a LanceDB Cloud URI (db://...), not a local folder: drop it, or pass the URI")
    path = local_folder(location, create, "LanceDB")
    # Every read looks for the latest version first, so this store sees what other processes commit.
    return lancedb.connect(str(path), read_consistency_interval=timedelta(0)), str(path), False
