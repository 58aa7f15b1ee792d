"""Duplicate groups in a database (`stores.lancedb_groups`, `stores.qdrant_groups`): groups written by hand in the
layout of earlier releases read back equal, what `find_groups` writes now is that layout, and groups left behind
their rows by a killed process are made good when read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import lancedb  # the test extra has both engines, so a broken install is an error, not a skip
import pyarrow as pa
import pytest
import qdrant_client
from qdrant_client import models

from hfsiamese.search import DuplicateIndex
from hfsiamese.search.groups import GroupSettings
from hfsiamese.search.stores.qdrant_store import point_id
from tests.conftest import REPO_ROOT
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
    options = {"store": backend, "database": tmp_path / "db"}
    DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, ids=IDS, **options).close()
    write_old_layout(backend, tmp_path / "db", SETTINGS, ROWS)
    with DuplicateIndex(model(), threshold=THRESHOLD, **options) as index:
        assert index.groups.settings.to_dict() == SETTINGS
        assert rows_of(index) == sorted(ROWS)
        assert index.groups.canonical_of(index.groups.group_of("q9")) == "q4"


@pytest.mark.parametrize("backend", ["lancedb", "qdrant"])
def test_groups_are_written_in_that_layout(backend, tmp_path):
    options = {"store": backend, "database": tmp_path / "db"}
    with DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, ids=IDS, **options) as index:
        index.find_groups(guard="mean", canonical="most_central")
        index.delete(["q6"])  # a merge after the whole write: the row goes, the layout stays
        settings, written = index.groups.settings.to_dict(), rows_of(index)
    assert "q6" not in [row[0] for row in written] and len(written) == len(IDS) - 1
    assert read_stored_layout(backend, tmp_path / "db") == (settings, written)


KILLED_BETWEEN_WRITES = r"""
import os
import signal
import sys
from hfsiamese.search import DuplicateIndex
from hfsiamese.search.stores.lancedb_store import LanceDBStore
from tests.search.group_vectors import THRESHOLD, model

def killed(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)  # the rows are committed, their group rows never written

LanceDBStore.merge_group_rows = killed
model_ = model()
model_.vectors["python 4"] = model_.vectors["python 1"][:1] + [0.05] + model_.vectors["python 1"][2:]
index = DuplicateIndex(model_, threshold=THRESHOLD, store="lancedb", database=sys.argv[1])
index.groups  # read before the write, as a running service has them
if sys.argv[2] == "add":
    index.add(["python 4"], ids=[10], assign_groups=True)
else:
    index.delete([0])
"""


@pytest.mark.parametrize("how", ["add", "delete"])
@pytest.mark.slow
def test_a_kill_between_the_rows_and_their_groups_leaves_groups_that_hold(how, tmp_path, caplog):
    """SIGKILL after an add's (or a delete's) rows were committed and before their group rows were, then reopened:
    a delete's groups equal those of the same delete uninterrupted (the deleted canonical's group promotes another),
    an add's row is ungrouped (as after a plain add); either way the next add with assign_groups works."""
    for name in ("killed", "whole"):
        with DuplicateIndex.build(
            corpus(), model(), threshold=THRESHOLD, store="lancedb", database=tmp_path / name
        ) as index:
            index.find_groups()
            if name == "whole":
                before = index.groups.to_dataset().sort("id").to_dict()
                if how == "delete":
                    index.delete([0])
                want = index.groups.to_dataset().sort("id").to_dict()
    env = dict(os.environ, OMP_NUM_THREADS="1", LANCE_CPU_THREADS="1", PYTHONPATH=str(REPO_ROOT))
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_BETWEEN_WRITES, str(tmp_path / "killed"), how], env=env, timeout=300
    )
    assert killed.returncode == -signal.SIGKILL
    reopened = DuplicateIndex(model(), threshold=THRESHOLD, store="lancedb", database=tmp_path / "killed")
    with reopened as index:
        assert len(index) == (11 if how == "add" else 9)  # the rows' commit went through
        with caplog.at_level("WARNING"):
            got = index.groups.to_dataset().sort("id").to_dict()
        if how == "delete":
            assert "no longer in the index (a delete stopped between its rows and its groups)" in caplog.text
        else:
            assert got == before and 10 not in index.groups
        got_scores, want_scores = got.pop("score"), want.pop("score")
        assert got == want and got_scores == pytest.approx(want_scores, abs=1e-6)
        model_ = index.model
        model_.vectors["python 5"] = model_.vectors["python 3"]
        (assigned,) = index.add(["python 5"], ids=[20], assign_groups=True)  # joins the python group
        assert assigned["canonical_id"] in index.ids and not assigned["new_group"]
