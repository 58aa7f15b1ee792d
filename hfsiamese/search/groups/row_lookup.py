"""
The texts and embeddings of some indexed questions, by id, in whichever store keeps them: the few rows that keeping
groups current needs (a new question's group members, a group's new canonical), never the whole collection.
A database is asked for exactly these rows (LanceDB: an `id_key IN (...)` filter; Qdrant: its point ids).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hfsiamese.search.index_views import IndexViews
from hfsiamese.search.stores.in_memory import InMemoryStore

_ID_BATCH = 1000


class RowLookup:
    """`rows(ids)`: `(texts, embeddings)` of these ids, in their order (every id must be in the index). One lookup
    serves one operation: an in-memory store's id positions are read once for it."""

    def __init__(self, index: IndexViews) -> None:
        self.index = index
        self._positions: dict[Any, int] | None = None

    def rows(self, ids: list[Any]) -> tuple[list[str], np.ndarray]:
        store = self.index._store
        if not ids:
            return [], np.empty((0, self.index.embedding_dim or 0), dtype=np.float32)
        if isinstance(store, InMemoryStore):
            if self._positions is None:
                self._positions = {member: row for row, member in enumerate(store.corpus["id"])}
            rows = np.array([self._positions[member] for member in ids], dtype=np.int64)
            return list(store.corpus[rows.tolist()]["text"]), store.table.gather(rows)
        found: dict[Any, tuple[str, np.ndarray]] = {}
        for start in range(0, len(ids), _ID_BATCH):
            batch = ids[start : start + _ID_BATCH]
            found.update(_lancedb_rows(store, batch) if self.index.backend == "lancedb" else _qdrant_rows(store, batch))
        missing = [member for member in ids if member not in found]
        if missing:
            raise KeyError(f"ids not in the index: {missing[:5]}")
        texts = [found[member][0] for member in ids]
        return texts, np.stack([found[member][1] for member in ids]).astype(np.float32, copy=False)


def _lancedb_rows(store: Any, ids: list[Any]) -> dict[Any, tuple[str, np.ndarray]]:
    from hfsiamese.search.stores.lancedb_columns import ID_INT, ID_STR, KEY, TEXT, VECTOR, id_key
    from hfsiamese.search.stores.lancedb_filters import in_list

    table = store._table.search().where(in_list(KEY, [id_key(i) for i in ids])).select([ID_INT, ID_STR, TEXT, VECTOR])
    rows = table.to_arrow()
    ints, strs = rows.column(ID_INT).to_pylist(), rows.column(ID_STR).to_pylist()
    texts, vectors = rows.column(TEXT).to_pylist(), rows.column(VECTOR).to_pylist()
    return {
        (number if number is not None else name): (text, np.asarray(vector, dtype=np.float32))
        for number, name, text, vector in zip(ints, strs, texts, vectors)
    }


def _qdrant_rows(store: Any, ids: list[Any]) -> dict[Any, tuple[str, np.ndarray]]:
    from hfsiamese.search.stores.qdrant_store import point_id

    records = store._client.retrieve(
        store.collection, ids=[point_id(i) for i in ids], with_payload=True, with_vectors=True
    )
    return {
        record.payload["id"]: (record.payload["text"], np.asarray(record.vector, dtype=np.float32))
        for record in records
    }


__all__ = ["RowLookup"]
