"""
How a `QdrantStore` keeps its index's duplicate groups (`DatabaseStore.replace_group_rows` and the rest): a
collection `<collection>__groups` beside the rows' one, kept apart from `qdrant_store` so that each file says one
thing.

Layout (what earlier releases wrote, read back unchanged): a collection without vectors, one point per question, its
point id the question's own (`qdrant_store.point_id`), payload {"id", "group", "score", "is_canonical"}; the settings
in the collection metadata under `GROUP_SETTINGS_KEY`.

Durability: written like the rows: every upsert and delete waits (`wait=True`), so each is acknowledged (in local
mode: committed to the folder's sqlite) before it returns. `replace_group_rows` drops the collection and writes it
again, so a crash in the middle leaves some of the groups (or none): `find_groups` again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from hfsiamese.search.stores.base import GROUP_SETTINGS_KEY

# `store` below is a QdrantStore (typed Any: this module is the store's part, and imports nothing of it).
Store = Any

_COLUMNS = ("id", "group", "score", "is_canonical")
# Points per upsert request, and points per scroll page.
_BATCH = 1000
_PAGE = 10_000


def replace_group_rows(store: Store, rows: pa.Table, settings: dict[str, Any]) -> None:
    """The groups collection dropped, created again with `settings` and every row upserted."""
    client, name = store._client, store.groups_collection
    if client.collection_exists(name):
        client.delete_collection(name)
    client.create_collection(name, vectors_config={}, metadata={GROUP_SETTINGS_KEY: settings})
    _upsert(store, rows)


def merge_group_rows(store: Store, rows: pa.Table, removed: Sequence[int | str]) -> None:
    """The changed rows upserted (by point id), then the removed questions' points deleted."""
    _upsert(store, rows)
    if removed:
        selector = store._models.PointIdsList(points=[store.point_id(i) for i in removed])
        store._client.delete(store.groups_collection, points_selector=selector, wait=True)


def read_group_rows(store: Store) -> tuple[dict[str, Any], pa.Table] | None:
    """The settings and points of the groups collection, None where there is no such collection or it holds no
    point (as earlier releases read it)."""
    client, name = store._client, store.groups_collection
    if not client.collection_exists(name):
        return None
    settings = (client.get_collection(name).config.metadata or {})[GROUP_SETTINGS_KEY]
    columns: dict[str, list[Any]] = {column: [] for column in _COLUMNS}
    offset = None
    while True:
        records, offset = client.scroll(name, limit=_PAGE, offset=offset, with_payload=True, with_vectors=False)
        for record in records:
            for column, values in columns.items():
                values.append(record.payload[column])
        if offset is None:
            break
    return (settings, pa.table(columns)) if columns["id"] else None


def _upsert(store: Store, rows: pa.Table) -> None:
    """Group rows as points without vectors, `_BATCH` a request, each acknowledged before the next."""
    columns = [rows.column(column).to_pylist() for column in _COLUMNS]
    for start in range(0, rows.num_rows, _BATCH):
        points = [
            store._models.PointStruct(
                id=store.point_id(member),
                vector={},
                payload={"id": member, "group": group, "score": score, "is_canonical": canonical},
            )
            for member, group, score, canonical in zip(*(values[start : start + _BATCH] for values in columns))
        ]
        store._client.upsert(store.groups_collection, points=points, wait=True)


__all__ = ["merge_group_rows", "read_group_rows", "replace_group_rows"]
