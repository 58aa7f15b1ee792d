"""A refused call leaves the index as it was: `add(..., assign_groups=True)` and `delete` refused for their groups (none
yet, no threshold, a damaged stored guard / canonical rule / settings, a group without a canonical) and ids of the
other kind are refused before a row is written or removed; the rows, ids, search results, groups and the files on disk
after the refusal equal those before, and the retry with the right arguments works."""

from __future__ import annotations

import hashlib
import json

import lancedb  # the test extra has it, so a broken install is an error, not a skip
import pyarrow as pa
import pytest

from hfsiamese.search import DuplicateIndex
from tests.search.group_vectors import THRESHOLD, corpus, model

BACKENDS = ["exact", "lancedb"]
GROUPS_TABLE = "duplicate_index__groups"  # beside the default collection


def options(backend: str, tmp_path) -> dict:
    return {"store": backend, "database": tmp_path / "db"} if backend in ("lancedb", "qdrant") else {"store": backend}


def files(folder) -> dict[str, str]:
    """Every file under `folder` by its path, with a digest of its bytes."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def state(index: DuplicateIndex, folder) -> dict:
    """What a refused call must leave as it was."""
    groups = index.groups
    return {
        "len": len(index),
        "ids": sorted(index.ids, key=str),
        "search": index.search(["python 9", "chain a"], k=3) if len(index) else [],
        "groups": None if groups is None else groups.to_dataset().sort("id").to_dict(),
        "files": files(folder),
    }


def refused(index: DuplicateIndex, folder, call, error: type[Exception], match: str) -> None:
    """`call(index)` raises `error` matching `match`, and the index and its files are as they were."""
    before = state(index, folder)
    with pytest.raises(error, match=match):
        call(index)
    assert state(index, folder) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_assign_groups_without_groups_is_refused_before_the_rows_are_written(backend, tmp_path):
    index = DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, **options(backend, tmp_path))
    add = lambda index: index.add(["python 9"], assign_groups=True)  # noqa: E731
    refused(index, tmp_path, add, ValueError, r"no duplicate groups yet: call index.find_groups\(\) first")
    assert len(index) == 10
    index.find_groups()
    (assigned,) = index.add(["python 9"], assign_groups=True)  # the retry: the id is free, the row joins its group
    assert len(index) == 11 and assigned["id"] == 10 and 10 in index.groups
    index.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_assign_groups_without_a_threshold_is_refused_before_the_rows_are_written(backend, tmp_path):
    index = DuplicateIndex(model(), **options(backend, tmp_path))  # empty, and the model has no threshold
    add = lambda index: index.add(["python 1", "python 2"], ids=[0, 1], assign_groups=True)  # noqa: E731
    refused(index, tmp_path, add, ValueError, r"assign_groups needs a cosine threshold: build the index with threshold")
    assert len(index) == 0 and index.groups is None
    index.close()
    with DuplicateIndex(model(), threshold=THRESHOLD, **options(backend, tmp_path)) as retry:
        assigned = retry.add(["python 1", "python 2"], ids=[0, 1], assign_groups=True)
        assert len(retry) == 2 and [row["canonical_id"] for row in assigned] == [0, 0]


def stored_groups(index: DuplicateIndex) -> tuple[dict, pa.Table]:
    """The groups `find_groups` found, as the store keeps them: settings and rows."""
    groups = index.find_groups()
    return groups.settings.to_dict(), pa.table(groups.table_rows())


def bad_guard(index: DuplicateIndex, folder) -> None:
    settings, rows = stored_groups(index)
    index.database_store.replace_group_rows(rows, {**settings, "guard": "nearest"})


def bad_canonical_rule(index: DuplicateIndex, folder) -> None:
    settings, rows = stored_groups(index)
    index.database_store.replace_group_rows(rows, {**settings, "canonical": "latest"})


def no_canonical(index: DuplicateIndex, folder) -> None:
    settings, rows = stored_groups(index)
    flags = [False] * rows.num_rows  # no group has its canonical question any more
    index.database_store.replace_group_rows(rows.set_column(3, "is_canonical", pa.array(flags)), settings)


def settings_not_json(index: DuplicateIndex, folder) -> None:
    stored_groups(index)
    table = lancedb.connect(str(folder)).open_table(GROUPS_TABLE)
    rows = table.to_arrow()
    field = rows.schema.field("group").with_metadata({"hfsiamese_groups": "{not json"})
    damaged = rows.cast(rows.schema.set(rows.schema.get_field_index("group"), field))
    lancedb.connect(str(folder)).create_table(GROUPS_TABLE, data=damaged, mode="overwrite")


DAMAGES = {
    "guard": (bad_guard, r"guard must be one of"),
    "canonical rule": (bad_canonical_rule, r"canonical must be one of"),
    "group without canonical": (no_canonical, r"have no canonical question"),
    "settings not JSON": (settings_not_json, r"are damaged \(.*\): call index.find_groups\(\) to replace them"),
}


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_damaged_stored_groups_refuse_add_and_delete_before_a_row_changes(damage, tmp_path):
    damage_groups, match = DAMAGES[damage]
    database = tmp_path / "db"
    DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, store="lancedb", database=database).close()
    with DuplicateIndex(model(), threshold=THRESHOLD, store="lancedb", database=database) as index:
        damage_groups(index, database)
    with DuplicateIndex(model(), threshold=THRESHOLD, store="lancedb", database=database) as index:
        add = lambda index: index.add(["python 9"], ids=[10], assign_groups=True)  # noqa: E731
        before = {"len": len(index), "ids": sorted(index.ids), "files": files(tmp_path)}
        for call in (add, lambda index: index.delete([0])):
            with pytest.raises(ValueError, match=match):
                call(index)
            assert {"len": len(index), "ids": sorted(index.ids), "files": files(tmp_path)} == before
        index.find_groups()  # the retry: groups found again replace the damaged ones
        (assigned,) = index.add(["python 9"], ids=[10], assign_groups=True)
        assert assigned["id"] == 10 and 10 in index.groups and index.delete([0]) == 1 and len(index) == 10


def test_a_damaged_stored_groups_message_is_one_line_naming_the_table(tmp_path):
    database = tmp_path / "db"
    with DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, store="lancedb", database=database) as index:
        bad_guard(index, database)
    index = DuplicateIndex(model(), store="lancedb", database=database)
    with index, pytest.raises(ValueError, match=GROUPS_TABLE) as raised:
        index.groups  # noqa: B018 - reading them is what is refused
    assert "\n" not in str(raised.value) and json.dumps("nearest") in str(raised.value).replace("'", '"')


@pytest.mark.parametrize("backend", [*BACKENDS, "qdrant"])
@pytest.mark.parametrize("kind", ["int", "str"])
def test_ids_of_the_other_kind_are_refused_in_one_line_by_delete_and_add(backend, kind, tmp_path):
    ids = list(range(10)) if kind == "int" else [str(i) for i in range(10)]
    other, example = ("str", r"\('0'\): pass int ids \(0, not '0'\)") if kind == "int" else ("int", r"\(0\): pass str")
    with DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, ids=ids, **options(backend, tmp_path)) as index:
        wrong = "0" if kind == "int" else 0
        delete = lambda index: index.delete([wrong])  # noqa: E731
        refused(
            index,
            tmp_path,
            delete,
            TypeError,
            rf"this index has {kind} ids, the ids to delete are {other} ids {example}",
        )
        add = lambda index: index.add(["python 9"], ids=["10" if kind == "int" else 10])  # noqa: E731
        refused(index, tmp_path, add, TypeError, rf"this index has {kind} ids, the new ids are {other} ids")
        assert index.delete([ids[0]]) == 1 and len(index) == 9  # the retry with the right kind
        index.add(["python 9"], ids=[ids[0]])
        assert len(index) == 10


def test_a_database_opened_afresh_knows_the_kind_of_its_ids(tmp_path):
    database = tmp_path / "db"
    DuplicateIndex.build(corpus(), model(), threshold=THRESHOLD, store="lancedb", database=database).close()
    with DuplicateIndex(model(), threshold=THRESHOLD, store="lancedb", database=database) as index:
        add = lambda index: index.add(["python 9"], ids=["10"])  # noqa: E731
        refused(index, tmp_path, add, TypeError, r"this index has int ids, the new ids are str ids \('10'\)")
        refused(index, tmp_path, lambda index: index.delete(["3"]), TypeError, r"the ids to delete are str ids")
        index.add(["python 9"])  # the next row number, as for the index that built it
        assert 10 in index.ids and len(index) == 11
