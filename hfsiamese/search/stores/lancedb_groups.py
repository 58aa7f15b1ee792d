"""
How a `LanceDBStore` keeps its index's duplicate groups (`DatabaseStore.replace_group_rows` and the rest): a table
`<collection>__groups` in the same database, kept apart from `lancedb_store` so that each file says one thing.

Layout (what earlier releases wrote, read back unchanged):

    one row per question
        id_key        "int:<id>" or "str:<id>", never null (as in the rows' table: the key merges match on)
        id_int        the question's id when it is an int (int64), else null
        id_str        the question's id when it is a str, else null
        group         int64; its field metadata holds the settings as JSON under `GROUP_SETTINGS_KEY`
        score         float64
        is_canonical  bool

Durability: `replace_group_rows` writes the table whole in one commit (`mode="overwrite"`); `merge_group_rows` one
`merge_insert` commit for the changed rows (a crash leaves all or none of them) and one delete commit for the rows of
removed questions. Like the rows, committed but not fsynced (see `lancedb_store`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from hfsiamese.search.stores.base import GROUP_SETTINGS_KEY
from hfsiamese.search.stores.lancedb_columns import ID_INT, ID_STR, KEY, id_key
from hfsiamese.search.stores.lancedb_filters import in_list

# `store` below is a LanceDBStore (typed Any: this module is the store's part, and imports nothing of it).
Store = Any

_VALUES = ("group", "score", "is_canonical")


def replace_group_rows(store: Store, rows: pa.Table, settings: dict[str, Any]) -> None:
    """The groups table written anew, whole, in one commit."""
    metadata = {GROUP_SETTINGS_KEY: json.dumps(settings)}
    store._db.create_table(store.groups_collection, data=_stored(rows, _schema(metadata)), mode="overwrite")


def merge_group_rows(store: Store, rows: pa.Table, removed: Sequence[int | str]) -> None:
    """The changed rows merged in by `id_key` (one commit), then the removed questions' rows deleted (one more)."""
    table = store._db.open_table(store.groups_collection)
    if rows.num_rows:
        merge = table.merge_insert(KEY).when_matched_update_all().when_not_matched_insert_all()
        merge.execute(_stored(rows, _schema(table.schema.field("group").metadata)))
    if removed:
        table.delete(in_list(KEY, [id_key(i) for i in removed]))


def read_group_rows(store: Store) -> tuple[dict[str, Any], pa.Table] | None:
    """The settings and rows of the groups table, None where there is no such table."""
    try:
        table = store._db.open_table(store.groups_collection).to_arrow()
    except ValueError as err:  # how lancedb says there is no such table
        if "not found" not in str(err) and "does not exist" not in str(err):
            raise
        return None
    metadata = table.schema.field("group").metadata or {}
    settings = json.loads(metadata[GROUP_SETTINGS_KEY.encode()])
    ints, strs = table.column(ID_INT).to_pylist(), table.column(ID_STR).to_pylist()
    ids = [number if number is not None else name for number, name in zip(ints, strs)]
    return settings, pa.table({"id": ids, **{column: table.column(column) for column in _VALUES}})


def _schema(settings_metadata: Any) -> pa.Schema:
    return pa.schema(
        [
            pa.field(KEY, pa.string(), nullable=False),
            pa.field(ID_INT, pa.int64()),
            pa.field(ID_STR, pa.string()),
            pa.field("group", pa.int64(), metadata=settings_metadata),
            pa.field("score", pa.float64()),
            pa.field("is_canonical", pa.bool_()),
        ]
    )


def _stored(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """Group rows (`id`, `group`, `score`, `is_canonical`) in the table's layout."""
    ids = rows.column("id").to_pylist()
    return pa.table(
        {
            KEY: [id_key(i) for i in ids],
            ID_INT: [i if isinstance(i, int) else None for i in ids],
            ID_STR: [i if isinstance(i, str) else None for i in ids],
            **{column: rows.column(column).to_pylist() for column in _VALUES},
        },
        schema=schema,
    )


__all__ = ["merge_group_rows", "read_group_rows", "replace_group_rows"]
