"""A read replica's refresh (`DuplicateService.reopened`, `ReplicaReads`): a writer commits an add's or a delete's rows
before their groups, so a replica reading between the two commits must notice it (`groups_lag`), keep what it served,
and never write to the database itself, not even the repair a writer makes of groups left behind their rows."""

from __future__ import annotations

import lancedb
import pytest

from hfsiamese.search import DuplicateIndex
from hfsiamese.search.stores.lancedb_store import LanceDBStore
from hfsiamese.service.service import DuplicateService, ReplicaReads
from tests.search.group_vectors import THRESHOLD, corpus, model

GROUPS = "duplicate_index__groups"


@pytest.fixture
def served(tmp_path):
    """A grouped LanceDB index saved to a folder, opened as a replica serves it."""
    with DuplicateIndex.build(
        corpus(), model(), threshold=THRESHOLD, store="lancedb", database=tmp_path / "db"
    ) as index:
        index.find_groups()
        index.save(tmp_path / "index")
    index = DuplicateIndex.load(tmp_path / "index", model())
    assert index.read_as_replica() == (0, 0)
    service = DuplicateService(index, tmp_path / "index")
    yield service, tmp_path
    service.close()


def writer(tmp_path) -> DuplicateIndex:
    return DuplicateIndex.load(tmp_path / "index", model())


def groups_version(tmp_path) -> int:
    return lancedb.connect(str(tmp_path / "db")).open_table(GROUPS).version


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_add_caught_between_its_rows_and_its_groups_is_held_until_it_stands(served):
    service, tmp_path = served
    with writer(tmp_path) as index:
        index.add(["python 9"], ids=[100])  # the rows' commit of an add whose groups' commit has not come yet
    clock = Clock()
    reads = ReplicaReads(standing_s=10.0, clock=clock)
    for seconds in (0.0, 0.5, 9.5):  # the same read again and again, the writer slow to commit the groups
        clock.now = seconds
        fresh = service.reopened()
        assert fresh.groups_lag == (1, 0) and len(fresh.index) == len(corpus()) + 1
        assert not reads.serves(fresh, service)  # the replica keeps what it served
        fresh.close()
    clock.now = 10.0
    standing = service.reopened()
    assert reads.serves(standing, service)  # the same read for 10 s: a standing difference (a plain add)
    with writer(tmp_path) as index:
        index.add(["sky 9"], ids=[101])  # another ungrouped row: held again, from now
    standing.groups_lag = (1, 0)
    clock.now = 11.0
    more = standing.reopened()
    assert more.groups_lag == (2, 0) and not reads.serves(more, standing)
    standing.groups_lag = (2, 0)
    assert reads.serves(more, standing)  # no more ungrouped rows than the served read: served at once
    for opened in (standing, more):
        opened.close()


def test_a_delete_caught_between_its_commits_is_served_and_not_repaired_by_the_replica(served, monkeypatch):
    service, tmp_path = served
    version = groups_version(tmp_path)
    with writer(tmp_path) as index:
        monkeypatch.setattr(LanceDBStore, "merge_group_rows", lambda *args, **kwargs: None)
        assert index.groups is not None  # read before the delete, as the writer has them
        index.delete([0])  # its rows' commit; its groups' never made
    monkeypatch.undo()
    fresh = service.reopened()
    try:
        assert fresh.groups_lag == (0, 1) and ReplicaReads().serves(fresh, service)
        assert 0 not in fresh.index.groups  # left its group in this process only
        assert groups_version(tmp_path) == version  # the replica wrote nothing
    finally:
        fresh.close()


def test_a_read_in_step_is_served_at_once(served):
    service, tmp_path = served
    with writer(tmp_path) as index:
        index.add(["python 9"], ids=[100], assign_groups=True)  # both commits
    fresh = service.reopened()
    assert fresh.groups_lag == (0, 0) and ReplicaReads(clock=Clock()).serves(fresh, service)
    assert 100 in fresh.index.groups
    fresh.close()


def test_a_replica_reads_its_rows_as_they_were_when_it_read_its_groups(served):
    """Rows held at one version (LanceDB): a writer's add shows on the replica with its groups, at its next read."""
    service, tmp_path = served
    with writer(tmp_path) as index:
        index.add(["python 9"], ids=[100], assign_groups=True)
        assert len(service.index) == len(corpus()) and service.index.contains([100]) == [False]
        assert 100 not in [match["id"] for match in service.index.search(["python 9"], k=3)[0]]
    fresh = service.reopened()
    assert fresh.index.contains([100]) == [True] and 100 in fresh.index.groups
    fresh.close()
