"""
Where an index keeps its `DuplicateGroups`, beside its rows and as durably:

* an in-process index (`exact`, `faiss`): `groups.parquet` in the index folder, written by `save` (moved into place
  whole), its settings in the file's schema metadata; read by `load`.
* a database (LanceDB, Qdrant): in the store, as a table of rows `id`, `group`, `score`, `is_canonical` and a settings
  dict (`DatabaseStore.replace_group_rows`, `merge_group_rows`, `read_group_rows`; the layouts and when they are
  durable: `stores.lancedb_groups`, `stores.qdrant_groups`). `find_groups` replaces them whole; each
  `add(..., assign_groups=True)` or `delete` then writes only the rows it changed and removes those of removed
  questions.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from hfsiamese.search.groups.duplicate_groups import DuplicateGroups, GroupSettings
from hfsiamese.search.stores.base import GROUP_SETTINGS_KEY

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex

GROUPS_NAME = "groups.parquet"


# --- an index folder ---------------------------------------------------------------------------------


def save_groups_file(groups: DuplicateGroups | None, directory: str | os.PathLike) -> None:
    """Write `groups.parquet` into a saved index folder (a stale one removed when the index has no groups)."""
    target = Path(directory) / GROUPS_NAME
    if groups is None:
        target.unlink(missing_ok=True)  # an older index's groups are not this one's
        return
    table = groups.to_arrow().replace_schema_metadata({GROUP_SETTINGS_KEY: json.dumps(groups.settings.to_dict())})
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=".groups-", suffix=".parquet", delete=False) as part:
        staging = Path(part.name)
    try:
        pq.write_table(table, staging)
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)


def load_groups_file(directory: str | os.PathLike) -> DuplicateGroups | None:
    """The groups saved in an index folder, None where it has none."""
    path = Path(directory) / GROUPS_NAME
    if not path.is_file():
        return None
    try:
        table = pq.read_table(path)
        settings = GroupSettings.from_dict(json.loads(table.schema.metadata[GROUP_SETTINGS_KEY.encode()]))
    except (OSError, KeyError, ValueError, TypeError, pa.ArrowException) as err:
        raise ValueError(f"{path} is damaged ({err}): delete it and find_groups again") from err
    return _from_table(settings, table)


def _from_table(settings: GroupSettings, table: pa.Table) -> DuplicateGroups:
    columns = table.to_pydict()
    return DuplicateGroups.from_columns(
        settings, columns["id"], columns["group"], columns["score"], columns["is_canonical"]
    )


# --- a database ---------------------------------------------------------------------------------------


def write_groups(index: SearchIndex, groups: DuplicateGroups) -> None:
    """Replace a database index's stored groups with `groups` (nothing to do in memory: `save` writes them)."""
    store = index.database_store
    if store is not None:
        store.replace_group_rows(groups.to_arrow(), groups.settings.to_dict())
    groups.changed.clear()
    groups.removed.clear()


def sync_groups(index: SearchIndex, groups: DuplicateGroups) -> None:
    """Write a database index the rows of its groups that changed since it last took them."""
    store = index.database_store
    if store is None or not (groups.changed or groups.removed):
        return
    changed, removed = sorted(groups.changed, key=str), sorted(groups.removed, key=str)
    store.merge_group_rows(pa.table(groups.table_rows(changed)), removed)
    groups.changed.clear()
    groups.removed.clear()


def read_groups(index: SearchIndex) -> DuplicateGroups | None:
    """A database index's stored groups, None where it has none (or is no database)."""
    store = index.database_store
    if store is None:
        return None
    try:
        stored = store.read_group_rows()
        if stored is None:
            return None
        settings = GroupSettings.from_dict(stored[0])
    except (KeyError, ValueError, TypeError, pa.ArrowException) as err:
        raise ValueError(
            f"the duplicate groups stored in {store.where} ({store.groups_collection}) are damaged ({err}): "
            "call index.find_groups() to replace them"
        ) from err
    return _from_table(settings, stored[1])


__all__ = ["GROUPS_NAME", "load_groups_file", "read_groups", "save_groups_file", "sync_groups", "write_groups"]
