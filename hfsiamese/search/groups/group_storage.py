"""
Where an index keeps its `DuplicateGroups`, beside its rows and as durably:

* an in-process index (`exact`, `faiss`): `groups.parquet` in the index folder, written by `save` (moved into place
  whole), its settings in the file's schema metadata; read by `load`.
* LanceDB: a table `<collection>__groups` in the same database (columns `id_key`, `id_int`, `id_str`, `group`,
  `score`, `is_canonical`; the settings in the `group` field's metadata). `find_groups` writes it whole (one
  commit); each `add(..., assign_groups=True)` or `delete` then merges the rows it changed (one commit: a crash
  leaves all or none of them) and deletes those of removed questions.
* Qdrant: a collection `<collection>__groups` without vectors, one point per question (the question's own point
  id; payload `id`, `group`, `score`, `is_canonical`), the settings in its collection metadata; written like the
  rows (each upsert acknowledged, in local mode committed to its sqlite, before it returns).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hfsiamese.search.groups.duplicate_groups import DuplicateGroups, GroupSettings
from hfsiamese.search.index_views import IndexViews

GROUPS_NAME = "groups.parquet"
GROUPS_SUFFIX = "__groups"
SETTINGS_KEY = "hfsiamese_groups"
_BATCH = 1000


# --- an index folder ---------------------------------------------------------------------------------


def save_groups_file(groups: DuplicateGroups | None, directory: str | os.PathLike) -> None:
    """Write `groups.parquet` into a saved index folder (a stale one removed when the index has no groups)."""
    target = Path(directory) / GROUPS_NAME
    if groups is None:
        target.unlink(missing_ok=True)  # an older index's groups are not this one's
        return
    table = groups.to_arrow().replace_schema_metadata({SETTINGS_KEY: json.dumps(groups.settings.to_dict())})
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
        settings = GroupSettings.from_dict(json.loads(table.schema.metadata[SETTINGS_KEY.encode()]))
    except (OSError, KeyError, ValueError, TypeError, pa.ArrowException) as err:
        raise ValueError(f"{path} is damaged ({err}): delete it and find_groups again") from err
    return _from_table(settings, table)


def _from_table(settings: GroupSettings, table: pa.Table) -> DuplicateGroups:
    columns = table.to_pydict()
    return DuplicateGroups.from_columns(
        settings, columns["id"], columns["group"], columns["score"], columns["is_canonical"]
    )


# --- a database ---------------------------------------------------------------------------------------


def groups_collection(index: IndexViews) -> str:
    return f"{index.collection}{GROUPS_SUFFIX}"


def write_groups(index: IndexViews, groups: DuplicateGroups) -> None:
    """Replace a database index's stored groups with `groups` (nothing to do in memory: `save` writes them)."""
    if index.backend == "lancedb":
        db = index._store._db
        db.create_table(groups_collection(index), data=_lancedb_table(groups, None), mode="overwrite")
    elif index.backend == "qdrant":
        client, name = index._store._client, groups_collection(index)
        if client.collection_exists(name):
            client.delete_collection(name)
        client.create_collection(name, vectors_config={}, metadata={SETTINGS_KEY: groups.settings.to_dict()})
        _qdrant_upsert(index, groups, list(groups.table_rows()["id"]))
    groups.changed.clear()
    groups.removed.clear()


def sync_groups(index: IndexViews, groups: DuplicateGroups) -> None:
    """Write a database index the rows of its groups that changed since it last took them."""
    if index.backend not in ("lancedb", "qdrant") or not (groups.changed or groups.removed):
        return
    changed, removed = sorted(groups.changed, key=str), sorted(groups.removed, key=str)
    if index.backend == "lancedb":
        from hfsiamese.search.stores.lancedb_columns import KEY, id_key
        from hfsiamese.search.stores.lancedb_filters import in_list

        table = index._store._db.open_table(groups_collection(index))
        if changed:
            merge = table.merge_insert(KEY).when_matched_update_all().when_not_matched_insert_all()
            merge.execute(_lancedb_table(groups, changed))
        if removed:
            table.delete(in_list(KEY, [id_key(i) for i in removed]))
    else:
        from hfsiamese.search.stores.qdrant_store import point_id

        _qdrant_upsert(index, groups, changed)
        if removed:
            selector = index._store._models.PointIdsList(points=[point_id(i) for i in removed])
            index._store._client.delete(groups_collection(index), points_selector=selector, wait=True)
    groups.changed.clear()
    groups.removed.clear()


def read_groups(index: IndexViews) -> DuplicateGroups | None:
    """A database index's stored groups, None where it has none (or is no database)."""
    if index.backend not in ("lancedb", "qdrant"):
        return None
    name = groups_collection(index)
    if index.backend == "lancedb":
        try:
            table = index._store._db.open_table(name).to_arrow()
        except ValueError as err:  # how lancedb says there is no such table
            if "not found" not in str(err) and "does not exist" not in str(err):
                raise
            return None
        metadata = table.schema.field("group").metadata or {}
        settings = GroupSettings.from_dict(json.loads(metadata[SETTINGS_KEY.encode()]))
        ints, strs = table.column("id_int").to_pylist(), table.column("id_str").to_pylist()
        ids = [number if number is not None else name for number, name in zip(ints, strs)]
        plain = pa.table({"id": ids, **{c: table.column(c) for c in ("group", "score", "is_canonical")}})
        return _from_table(settings, plain)
    if index.backend == "qdrant":
        client = index._store._client
        if not client.collection_exists(name):
            return None
        settings = GroupSettings.from_dict((client.get_collection(name).config.metadata or {})[SETTINGS_KEY])
        columns: dict[str, list[Any]] = {"id": [], "group": [], "score": [], "is_canonical": []}
        offset = None
        while True:
            records, offset = client.scroll(name, limit=10_000, offset=offset, with_payload=True, with_vectors=False)
            for record in records:
                for column, values in columns.items():
                    values.append(record.payload[column])
            if offset is None:
                break
        return _from_table(settings, pa.table(columns)) if columns["id"] else None
    return None


def _lancedb_table(groups: DuplicateGroups, ids: list[Any] | None) -> pa.Table:
    from hfsiamese.search.stores.lancedb_columns import id_key

    rows = groups.table_rows(ids)
    settings = {SETTINGS_KEY: json.dumps(groups.settings.to_dict())}
    schema = pa.schema(
        [
            pa.field("id_key", pa.string(), nullable=False),
            pa.field("id_int", pa.int64()),
            pa.field("id_str", pa.string()),
            pa.field("group", pa.int64(), metadata=settings),
            pa.field("score", pa.float64()),
            pa.field("is_canonical", pa.bool_()),
        ]
    )
    return pa.table(
        {
            "id_key": [id_key(i) for i in rows["id"]],
            "id_int": [i if isinstance(i, int) else None for i in rows["id"]],
            "id_str": [i if isinstance(i, str) else None for i in rows["id"]],
            "group": rows["group"],
            "score": rows["score"],
            "is_canonical": rows["is_canonical"],
        },
        schema=schema,
    )


def _qdrant_upsert(index: IndexViews, groups: DuplicateGroups, ids: list[Any]) -> None:
    from hfsiamese.search.stores.qdrant_store import point_id

    store = index._store
    rows = groups.table_rows(ids)
    for start in range(0, len(rows["id"]), _BATCH):
        points = [
            store._models.PointStruct(
                id=point_id(member),
                vector={},
                payload={"id": member, "group": group, "score": score, "is_canonical": canonical},
            )
            for member, group, score, canonical in zip(
                *(rows[column][start : start + _BATCH] for column in ("id", "group", "score", "is_canonical"))
            )
        ]
        store._client.upsert(groups_collection(index), points=points, wait=True)


__all__ = [
    "GROUPS_NAME",
    "groups_collection",
    "load_groups_file",
    "read_groups",
    "save_groups_file",
    "sync_groups",
    "write_groups",
]
