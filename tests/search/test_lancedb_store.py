"""LanceDBStore embedded in a folder: rows, exact search, filters, schema evolution, reopening, and durability under SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import lancedb  # the test extra has it, so a broken install is an error, not a skip
import numpy as np
import pytest
import torch

from hfsiamese.search.stores import lancedb_maintenance, lancedb_store
from hfsiamese.search.stores.lancedb_store import LanceDBStore, id_key, import_lancedb
from tests.conftest import REPO_ROOT
from tests.pipe_lines import lines_until

DIM = 12


def unit_vectors(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def store(tmp_path):
    with LanceDBStore.open(tmp_path / "lancedb", embedding_dim=DIM) as opened:
        yield opened


def test_import_lancedb_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "lancedb", None)
    with pytest.raises(ImportError, match=r'needs the lancedb package: .*pip install -e "\.\[lancedb\]"'):
        import_lancedb()


def test_add_len_contains(store):
    assert len(store) == 0 and store.embedding_dim == DIM
    store.add([1, 2, 3], ["a", "b", "c"], unit_vectors(3))
    store.add([4], ["d"], torch.from_numpy(unit_vectors(1, seed=1)))  # a tensor as well
    assert len(store) == 4
    assert store.contains([1, 4, 5, "1"]) == [True, True, False, False]
    store.add([], [], np.zeros((0, DIM), np.float32))
    assert len(store) == 4


def test_search_matches_exact_cosine(store):
    corpus, queries = unit_vectors(50, seed=0), unit_vectors(7, seed=1)
    store.add(list(range(50)), [f"text {i}" for i in range(50)], corpus * 3.0, batch_size=16)  # normalised by the store
    hits = store.search(queries, k=5)
    scores = queries @ corpus.T
    expected = np.argsort(-scores, axis=1)[:, :5]
    assert [[hit["id"] for hit in row] for row in hits] == expected.tolist()
    for q, row in enumerate(hits):
        np.testing.assert_allclose([hit["score"] for hit in row], scores[q, expected[q]], atol=1e-5)
        assert all(hit["text"] == f"text {hit['id']}" for hit in row)
    assert len(store.search(queries[:1], k=100)[0]) == 50
    assert [[h["id"] for h in row] for row in store.search(queries[3:4], k=5)] == expected[3:4].tolist()  # one query
    assert store.search(np.zeros((0, DIM)), k=3) == []


def test_search_batches_many_queries(store, monkeypatch):
    monkeypatch.setattr(lancedb_store, "_QUERY_BATCH", 3)  # several multi-vector requests
    corpus, queries = unit_vectors(40, seed=2), unit_vectors(8, seed=3)
    store.add(list(range(40)), [str(i) for i in range(40)], corpus)
    expected = np.argsort(-(queries @ corpus.T), axis=1)[:, :4]
    assert [[hit["id"] for hit in row] for row in store.search(queries, k=4)] == expected.tolist()


def test_int_and_str_ids_round_trip_as_different_rows(store):
    ids = [5, "5", -5, "hello", 0, 2**62, -(2**63), "it's", "a\\'b", ""]
    vectors = unit_vectors(len(ids))
    store.add(ids, [f"t{i}" for i in range(len(ids))], vectors, [{"n": i} for i in range(len(ids))])
    assert len(store) == len(ids)
    assert id_key(5) == "int:5" and id_key("5") == "str:5" and id_key(np.int64(5)) == "int:5"
    for position, user_id in enumerate(ids):
        best = store.search(vectors[position : position + 1], k=1)[0][0]
        assert best["id"] == user_id and type(best["id"]) is type(user_id) and best["n"] == position
    rows = [row for batch in store.iter_rows(batch_size=4) for row in zip(*batch[:2])]
    assert sorted(rows, key=repr) == sorted(zip(ids, [f"t{i}" for i in range(len(ids))]), key=repr)
    assert store.contains(["it's", "a\\'b", "", "it"]) == [True, True, True, False]
    assert store.delete(["5", "it's"]) == 2
    assert store.contains([5, "5", "it's"]) == [True, False, False]
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        store.add([2**63], ["x"], unit_vectors(1))


def test_present_ids_are_refused_and_nothing_is_written(store):
    store.add([1, "a"], ["one", "a"], unit_vectors(2))
    with pytest.raises(ValueError, match=r"2 ids are already in the collection: 1, 'a'; nothing was added"):
        store.add([7, 1, "a", 8], ["x", "y", "z", "w"], unit_vectors(4, seed=1), batch_size=1)
    with pytest.raises(ValueError, match="ids repeat within this call: 9"):
        store.add([9, 9], ["x", "y"], unit_vectors(2, seed=2))
    assert len(store) == 2 and store.contains([7, 8, 9]) == [False, False, False]


def test_rows_are_checked(store):
    with pytest.raises(ValueError, match=r"must have shape \(n, 12\)"):
        store.add([1], ["a"], unit_vectors(1, dim=8))
    with pytest.raises(ValueError, match="2 embeddings for 1 texts"):
        store.add([1], ["a"], unit_vectors(2))
    with pytest.raises(ValueError, match="all zeros"):
        store.add([1], ["a"], np.zeros((1, DIM)))
    with pytest.raises(ValueError, match="'text', which the store uses itself"):
        store.add([1], ["a"], unit_vectors(1), [{"text": "b"}])
    with pytest.raises(ValueError, match="'vector', which the store uses itself"):
        store.add([1], ["a"], unit_vectors(1), [{"vector": "b"}])
    with pytest.raises(ValueError, match="'score', which the store uses itself"):  # search gives its own score
        store.add([1], ["a"], unit_vectors(1), [{"score": 0.5}])
    with pytest.raises(ValueError, match="are identifiers"):
        store.add([1], ["a"], unit_vectors(1), [{"a b": 1}])
    with pytest.raises(ValueError, match="are identifiers"):
        store.add([1], ["a"], unit_vectors(1), [{"x`) OR (1=1": 1}])
    with pytest.raises(TypeError, match="values must be str, int, float, bool or None"):
        store.add([1], ["a"], unit_vectors(1), [{"nested": {"a": 1}}])
    with pytest.raises(TypeError, match="ids must be ints or strings"):
        store.add([1.5], ["a"], unit_vectors(1))
    assert len(store) == 0 and list(store.iter_rows()) == []


def test_delete_removes_from_search_and_len(store):
    vectors = unit_vectors(10)
    store.add(list(range(10)), [str(i) for i in range(10)], vectors)
    assert store.delete([3, 4, 99, 3]) == 2
    assert len(store) == 8 and store.contains([3, 4, 5]) == [False, False, True]
    found = {hit["id"] for hit in store.search(vectors[3:5], k=10)[0]}
    assert found == set(range(10)) - {3, 4}
    assert store.delete([3]) == 0 and store.delete([]) == 0


def test_filters(store):
    metadata = [{"lang": lang, "site": site, "n": n} for n, (lang, site) in enumerate(
        [("en", "a"), ("en", "b"), ("fr", "a"), ("fr", "b"), ("de", "a"), ("en", "a")]
    )]  # fmt: skip
    vectors = unit_vectors(len(metadata))
    store.add(list(range(len(metadata))), list("uvwxyz"), vectors, metadata)

    def found(filter):
        return [sorted(hit["id"] for hit in row) for row in store.search(vectors[:2], k=10, filter=filter)]

    assert found({"lang": "en"}) == [[0, 1, 5]] * 2
    assert found({"lang": ["fr", "de"]}) == [[2, 3, 4]] * 2
    assert found({"lang": "en", "site": "a"}) == [[0, 5]] * 2
    assert found({"lang": ["en", "fr"], "site": "b"}) == [[1, 3]] * 2
    assert found({"n": [0, 4]}) == [[0, 4]] * 2
    assert found({"lang": []}) == [[], []]
    assert found({"lang": "xx"}) == [[], []]
    assert found({"missing": "en"}) == [[], []]  # a field no row has
    assert found({"n": "0"}) == [[], []]  # a str never matches an int field (no SQL cast)
    assert found({"n": True}) == [[], []]
    assert found({"id": [1, "1", 5]}) == [[1, 5]] * 2
    assert found({"text": "w"}) == [[2]] * 2
    hit = store.search(vectors[2:3], k=1, filter={"lang": "fr"})[0][0]
    assert hit == {"id": 2, "text": "w", "score": pytest.approx(1.0, abs=1e-5), "lang": "fr", "site": "a", "n": 2}
    # The filter is applied before the search: the k best of the matching rows, not the matching ones of the k best.
    assert [h["id"] for h in store.search(vectors[0:1], k=1, filter={"lang": "de"})[0]] == [4]
    with pytest.raises(TypeError, match="match str, int and bool values only"):
        store.search(vectors[:1], k=1, filter={"score": 0.5})
    with pytest.raises(ValueError, match="is not a field name"):
        store.search(vectors[:1], k=1, filter={"lang = 'en' OR 1": "x"})
    with pytest.raises(ValueError, match="column of the store itself"):
        store.search(vectors[:1], k=1, filter={"vector": "x"})


def test_filter_values_are_quoted_not_sql(store):
    values = ["it's", "x' OR '1'='1", "back\\slash", "a\\'b", 'say "hi"', "new\nline", "ünï"]
    vectors = unit_vectors(len(values) + 1)
    store.add(
        list(range(len(values) + 1)), ["t"] * (len(values) + 1), vectors, [{"v": v} for v in values] + [{"v": "1"}]
    )
    for position, value in enumerate(values):
        assert [h["id"] for h in store.search(vectors[:1], k=10, filter={"v": value})[0]] == [position]
    assert sorted(h["id"] for h in store.search(vectors[:1], k=10, filter={"v": ["x' OR '1'='1", "1"]})[0]) == [1, 7]


def test_bool_list_and_float_fields_and_schema_evolution(store):
    vectors = unit_vectors(6)
    store.add([0, 1], ["a", "b"], vectors[:2], [{"ok": True, "tags": ["x", "y"]}, {"ok": False, "tags": []}])
    # New fields in a later add become new columns; older rows have none of them.
    store.add([2, 3], ["c", "d"], vectors[2:4], [{"score_": 1, "tags": ["z"]}, {"score_": 0.5, "extra": None}])
    store.add([4], ["e"], vectors[4:5])  # no metadata at all
    rows = {i: meta for batch in store.iter_rows() for i, meta in zip(batch[0], batch[3])}
    assert rows == {
        0: {"ok": True, "tags": ["x", "y"]},
        1: {"ok": False, "tags": []},
        2: {"score_": 1.0, "tags": ["z"]},  # an int in a float field comes back a float
        3: {"score_": 0.5},  # None is the same as no field
        4: {},
    }

    def found(filter):
        return sorted(hit["id"] for hit in store.search(vectors[:1], k=10, filter=filter)[0])

    assert found({"ok": True}) == [0] and found({"ok": [True, False]}) == [0, 1] and found({"ok": 1}) == []
    assert found({"tags": "y"}) == [0] and found({"tags": ["z", "x"]}) == [0, 2] and found({"tags": 3}) == []
    assert found({"score_": 1}) == [2]
    with pytest.raises(TypeError, match=r"metadata\[1\]\['ok'\] is a single value \(str\) but field 'ok' holds bool"):
        store.add([8, 9], ["x", "y"], vectors[:2], [{"ok": True}, {"ok": "yes"}])
    with pytest.raises(TypeError, match=r"field 'tags' holds lists of str"):
        store.add([8], ["x"], vectors[:1], [{"tags": "x"}])
    with pytest.raises(TypeError, match="metadata field 'new' mixes int and str"):
        store.add([8, 9], ["x", "y"], vectors[:2], [{"new": 1}, {"new": "1"}])
    with pytest.raises(ValueError, match="holds only empty lists"):
        store.add([8], ["x"], vectors[:1], [{"empty": []}])
    assert len(store) == 5 and store.contains([8, 9]) == [False, False]


def test_reopen_finds_everything(tmp_path):
    folder = tmp_path / "lancedb"
    vectors = unit_vectors(20)
    ids = list(range(10)) + [f"s{i}" for i in range(10)]
    with LanceDBStore.open(folder, embedding_dim=DIM) as store:
        store.set_metadata({"model": "tiny", "threshold": 0.8, "extra": None})
        store.add(ids, [f"text {i}" for i in ids], vectors, [{"i": i} for i in range(20)], batch_size=6)
        store.delete([0])
        before = store.search(vectors, k=3)
    with LanceDBStore.open(folder, create=False) as store:
        assert store.embedding_dim == DIM and len(store) == 19
        after = store.search(vectors, k=3)
        assert [[(h["id"], h["text"], h["i"]) for h in row] for row in after] == [
            [(h["id"], h["text"], h["i"]) for h in row] for row in before
        ]
        np.testing.assert_allclose(
            [[h["score"] for h in row] for row in after], [[h["score"] for h in row] for row in before], atol=1e-6
        )
        assert store.get_metadata() == {"model": "tiny", "threshold": 0.8, "extra": None}  # kept through add and delete
        batches = list(store.iter_rows(batch_size=7))
        assert [len(batch[0]) for batch in batches] == [7, 7, 5]
        assert [batch[0] for batch in store.iter_rows(batch_size=7)] == [batch[0] for batch in batches]  # stable
        got = {i: (text, emb, meta) for batch in batches for i, text, emb, meta in zip(*batch)}
        assert set(got) == set(ids[1:])
        for position, user_id in enumerate(ids[1:], start=1):
            text, embedding, meta = got[user_id]
            assert text == f"text {user_id}" and meta == {"i": position}
            np.testing.assert_allclose(embedding, vectors[position], atol=1e-6)
        assert all(batch[2].dtype == np.float32 for batch in batches)
        assert all(batch[2] is None for batch in store.iter_rows(with_vectors=False))
        store.set_metadata({"model": "other"})  # replaces, does not merge
        assert store.get_metadata() == {"model": "other"}
    store.close()
    with pytest.raises(RuntimeError, match="is closed"):
        len(store)


def test_open_errors(tmp_path):
    folder = tmp_path / "lancedb"
    with pytest.raises(FileNotFoundError, match="pass create=True"):
        LanceDBStore.open(folder, create=False)
    with pytest.raises(ValueError, match="needs embedding_dim"):
        LanceDBStore.open(folder)
    with LanceDBStore.open(folder, embedding_dim=DIM) as store:
        assert store.get_metadata() == {}
        with LanceDBStore.open(folder) as second:  # no lock: a second store (or process) on the same table
            second.add([1], ["a"], unit_vectors(1))
            assert len(store) == 1 and store.contains([1]) == [True]  # the first sees the second's commit
    with pytest.raises(ValueError, match="holds 12-dim embeddings, not 16"):
        LanceDBStore.open(folder, embedding_dim=16)
    with pytest.raises(FileNotFoundError, match="no collection 'other'"):
        LanceDBStore.open(folder, collection="other", create=False)
    with LanceDBStore.open(folder, collection="other", embedding_dim=4) as other:  # a second table beside
        assert other.embedding_dim == 4 and len(other) == 0
    with pytest.raises(ValueError, match="api_key is for a LanceDB Cloud URI"):
        LanceDBStore.open(folder, api_key="secret")
    with pytest.raises(ValueError, match="api_key is for LanceDB Cloud or Enterprise"):
        LanceDBStore.open("s3://bucket/path", api_key="secret")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        LanceDBStore.open(tmp_path / "file", embedding_dim=DIM)
    lancedb.connect(str(folder)).create_table("foreign", data=[{"vector": [0.0, 1.0], "x": 1}])
    with pytest.raises(ValueError, match="not made by LanceDBStore"):
        LanceDBStore.open(folder, collection="foreign")


def test_many_small_adds_are_compacted(store, monkeypatch):
    monkeypatch.setattr(lancedb_maintenance, "COMPACT_AFTER_SMALL_FRAGMENTS", 4)
    vectors = unit_vectors(12)
    for start in range(0, 12, 2):
        store.add([start, start + 1], ["t", "t"], vectors[start : start + 2])
        assert store._table.stats()["fragment_stats"]["num_fragments"] < 4
    assert len(store) == 12
    assert [h["id"] for h in store.search(vectors[5:6], k=1)[0]] == [5]


def test_large_tables_index_their_id_keys(store, monkeypatch):
    monkeypatch.setattr(lancedb_maintenance, "INDEX_KEYS_FROM", 6)
    vectors = unit_vectors(12)
    store.add(list(range(4)), ["t"] * 4, vectors[:4])
    assert store._table.list_indices() == []
    store.add(list(range(4, 8)), ["t"] * 4, vectors[4:8])
    assert [index.columns for index in store._table.list_indices()] == [["id_key"]]
    store.add([8, "9"], ["t", "t"], vectors[8:10])  # rows the index does not cover yet are scanned
    assert store.contains([0, 7, 8, "9", 9, 10]) == [True, True, True, True, False, False]
    with pytest.raises(ValueError, match="1 ids are already in the collection: 8"):
        store.add([8], ["t"], vectors[10:11])
    assert store.delete([0, 8, 10]) == 2 and len(store) == 8


# Adds batches of 50 rows, printing the number of rows acknowledged after each `add` returns. In its add number
# argv[3] (counting from 0), once Lance has read two of that add's 5 Arrow batches of 10, it prints
# "mid-add <rows acknowledged>" and waits to be killed: the kill lands inside `add`, by that marker, not by chance.
WRITER = r"""
import sys
import time
import numpy as np
from hfsiamese.search.stores import lancedb_store
from hfsiamese.search.stores.lancedb_store import LanceDBStore

dim, cut_add = int(sys.argv[2]), int(sys.argv[3])
make_batch = lancedb_store.record_batch
made = 0

def record_batch(*args):
    global made
    if done == 50 * cut_add and made == 2:
        print(f"mid-add {done}", flush=True)
        time.sleep(600)
    made += 1
    return make_batch(*args)

lancedb_store.record_batch = record_batch
store = LanceDBStore.open(sys.argv[1], embedding_dim=dim)
rng = np.random.default_rng(0)
done = 0
while True:
    made = 0
    ids = list(range(done, done + 50))
    store.add(ids, [f"text {i}" for i in ids], rng.normal(size=(50, dim)), batch_size=10)
    done += 50
    print(done, flush=True)
"""


@pytest.mark.timeout(300)  # beyond its own 120 s deadline for the writer
@pytest.mark.slow
def test_a_kill_in_the_middle_of_an_add_loses_no_acknowledged_row_and_commits_none_of_that_add(tmp_path):
    folder = tmp_path / "lancedb"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", LANCE_CPU_THREADS="1", PYTHONPATH=str(REPO_ROOT))
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder), str(DIM), "3"], stdout=subprocess.PIPE, env=env
    )
    try:
        lines = lines_until(writer, "mid-add", timeout=120)
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)
        writer.stdout.close()
    assert writer.returncode == -signal.SIGKILL
    assert lines == ["50", "100", "150", "mid-add 150"]  # three adds acknowledged, the fourth under way
    acknowledged = 150
    with LanceDBStore.open(folder, create=False) as store:
        assert all(store.contains(list(range(acknowledged))))
        # Each add is one commit: the add the kill cut short left none of its rows, although Lance had read some.
        assert len(store) == acknowledged and not any(store.contains(list(range(acknowledged, acknowledged + 50))))
        rng = np.random.default_rng(0)
        vectors = np.concatenate([rng.normal(size=(50, DIM)) for _ in range(acknowledged // 50)])
        probes = [0, acknowledged // 2, acknowledged - 1]
        for probe, hits in zip(probes, store.search(vectors[probes], k=1)):
            assert hits[0]["id"] == probe and hits[0]["text"] == f"text {probe}"
        store.add([acknowledged], ["after the crash"], vectors[:1])  # the table takes writes again
        assert len(store) == acknowledged + 1


def test_metadata_must_be_json(store):
    with pytest.raises(ValueError, match="plain JSON"):
        store.set_metadata({"threshold": float("nan")})
    store.set_metadata({"fingerprint": "abc", "sizes": [1, 2], "nested": {"a": True}})
    assert json.loads(json.dumps(store.get_metadata())) == {
        "fingerprint": "abc",
        "sizes": [1, 2],
        "nested": {"a": True},
    }


RACER = r"""
import sys
import time
from pathlib import Path
import numpy as np
from hfsiamese.search.stores.lancedb_store import LanceDBStore

folder, dim, first, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
checked = LanceDBStore._contains_keys

def slow_check(self, keys):
    found = checked(self, keys)
    time.sleep(1.0)  # between the check that the ids are new and their commit: where two writers would cross
    return found

LanceDBStore._contains_keys = slow_check
store = LanceDBStore.open(folder, embedding_dim=dim)
print("ready", flush=True)
while not go.exists():
    time.sleep(0.01)
ids = list(range(first, first + 100))
try:
    store.add(ids, [f"text {i}" for i in ids], np.random.default_rng(first).normal(size=(100, dim)))
    print("added", flush=True)
except ValueError as err:
    print(f"refused: {err}", flush=True)
"""


@pytest.mark.slow
def test_two_processes_adding_overlapping_ids_at_once_add_each_id_once(tmp_path):
    """The write lock: of two writers whose ids overlap (0-99 and 50-149), checked at the same moment, one adds its
    rows and the other is refused whole; no id is stored twice."""
    folder, go = tmp_path / "lancedb", tmp_path / "go"
    LanceDBStore.open(folder, embedding_dim=DIM).close()  # the table exists before the race
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", LANCE_CPU_THREADS="1", PYTHONPATH=str(REPO_ROOT))
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(folder), str(DIM), str(first), str(go)], stdout=subprocess.PIPE, env=env
        )
        for first in (0, 50)
    ]
    try:
        for racer in racers:
            assert lines_until(racer, "ready", timeout=120) == ["ready"]
        go.touch()
        outcomes = sorted(racer.communicate(timeout=120)[0].decode().strip() for racer in racers)
    finally:
        for racer in racers:
            if racer.poll() is None:
                racer.kill()
                racer.wait(timeout=60)
    assert outcomes[0] == "added" and outcomes[1].startswith("refused: ") and "already" in outcomes[1], outcomes
    with LanceDBStore.open(folder, create=False) as store:
        ids = [i for batch in store.iter_rows(with_vectors=False) for i in batch[0]]
    assert len(ids) == len(set(ids)) == 100 and sorted(ids) in (list(range(100)), list(range(50, 150)))
