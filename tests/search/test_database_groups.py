"""Duplicate groups in a database (`stores.lancedb_groups`, `stores.qdrant_groups`): groups written by hand in the
layout of earlier releases read back equal, and what `find_groups` writes now is that layout."""

from __future__ import annotations

import json

import lancedb  # the test extra has both engines, so a broken install is an error, not a skip
import pyarrow as pa
import pytest
import qdrant_client
from qdrant_client import models

from hfsiamese.search import DuplicateIndex
from hfsiamese.search.groups import GroupSettings
from hfsiamese.search.stores.qdrant_store import point_id
from tests.search.group_vectors import THRESHOLD, corpus, model

GROUPS = "duplicate_index__groups"  # beside the default collection
SETTINGS = GroupSettings(THRESHOLD, "mean", "most_central", 10).to_dict()
IDS = [f"q{i}" for i in range(len(corpus()))]  # str ids: LanceDB's id_str column
# One row per question as earlier releases stored them: id, group, score, is_canonical.
ROWS = [("q0", 0, 0.9, False), ("q4", 0, 1.0, True), ("q9", 0, 0.95, False), ("q2", 1, 1.0, True), ("q6", 2, 1.0, True)]


def old_lancedb_schema(settings: dict) -> pa.Schema:
    """The groups table's schema as earlier releases wrote it."""
    metadata = {"hfsiamese_groups": json.dumps(settings)}
    return pa.schema(
        [
            pa.field("id_key", pa.string(), nullable=False),
            pa.field("id_int", pa.int64()),
            pa.field("id_str", pa.string()),
            pa.field("group", pa.int64(), metadata=metadata),
            pa.field("score", pa.float64()),
            pa.field("is_canonical", pa.bool_()),
        ]
    )


def write_old_layout(backend: str, folder, settings: dict, rows: list[tuple]) -> None:
    if backend == "lancedb":
        columns = {
            "id_key": [f"str:{row[0]}" for row in rows],
            "id_int": [None] * len(rows),
            "id_str": [row[0] for row in rows],
            **{name: [row[i] for row in rows] for i, name in enumerate(("group", "score", "is_canonical"), 1)},
        }
        table = pa.table(columns, schema=old_lancedb_schema(settings))
        lancedb.connect(str(folder)).create_table(GROUPS, data=table, mode="overwrite")
        return
    client = qdrant_client.QdrantClient(path=str(folder))
    try:
        client.create_collection(GROUPS, vectors_config={}, metadata={"hfsiamese_groups": settings})
        points = [
            models.PointStruct(
                id=point_id(member), vector={}, payload={"id": member, "group": g, "score": s, "is_canonical": c}
            )
            for member, g, s, c in rows
        ]
        client.upsert(GROUPS, points=points, wait=True)
    finally:
        client.close()


def read_stored_layout(backend: str, folder) -> tuple[dict, list[tuple]]:
    """The settings and rows of the stored groups, checking the layout on the way."""
    if backend == "lancedb":
        table = lancedb.connect(str(folder)).open_table(GROUPS).to_arrow()
        settings = json.loads(table.schema.field("group").metadata[b"hfsiamese_groups"])
        assert table.schema.equals(old_lancedb_schema(settings), check_metadata=True)
        assert table.column("id_key").to_pylist() == [f"str:{i}" for i in table.column("id_str").to_pylist()]
        assert table.column("id_int").null_count == table.num_rows
        columns = [table.column(name).to_pylist() for name in ("id_str", "group", "score", "is_canonical")]
        return settings, sorted(zip(*columns))
    client = qdrant_client.QdrantClient(path=str(folder))
    try:
        info = client.get_collection(GROUPS)
        assert info.config.params.vectors == {}
        records, _ = client.scroll(GROUPS, limit=100, with_payload=True, with_vectors=False)
        assert all(record.id == point_id(record.payload["id"]) for record in records)
        assert all(sorted(record.payload) == ["group", "id", "is_canonical", "score"] for record in records)
        payloads = [tuple(record.payload[k] for k in ("id", "group", "score", "is_canonical")) for record in records]
        return info.config.metadata["hfsiamese_groups"], sorted(payloads)
    finally:
        client.close()


def rows_of(index: DuplicateIndex) -> list[tuple]:
    table = index.groups.table_rows()
    return sorted(zip(table["id"], table["group"], table["score"], table["is_canonical"]))


@pytest.mark.parametrize("backend", ["lancedb", "qdrant"])
def test_groups_in_the_layout_of_earlier_releases_read_back_equal(backend, tmp_path):
    options = {"backend": backend, "database": tmp_path / "db"}
    DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, ids=IDS, **options).close()
    write_old_layout(backend, tmp_path / "db", SETTINGS, ROWS)
    with DuplicateIndex(model(), threshold=THRESHOLD, **options) as index:
        assert index.groups.settings.to_dict() == SETTINGS
        assert rows_of(index) == sorted(ROWS)
        assert index.groups.canonical_of(index.groups.group_of("q9")) == "q4"


@pytest.mark.parametrize("backend", ["lancedb", "qdrant"])
def test_groups_are_written_in_that_layout(backend, tmp_path):
    options = {"backend": backend, "database": tmp_path / "db"}
    with DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, ids=IDS, **options) as index:
        index.find_groups(guard="mean", canonical="most_central")
        index.delete(["q6"])  # a merge after the whole write: the row goes, the layout stays
        settings, written = index.groups.settings.to_dict(), rows_of(index)
    assert "q6" not in [row[0] for row in written] and len(written) == len(IDS) - 1
    assert read_stored_layout(backend, tmp_path / "db") == (settings, written)
