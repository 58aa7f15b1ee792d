"""QdrantStore in Qdrant's embedded local mode: rows, exact search, filters, reopening, and durability under SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import numpy as np
import pytest
import qdrant_client  # noqa: F401  (the test extra has it, so a broken install is an error)
import torch

from hfsiamese.search.stores.qdrant_store import QdrantStore, import_qdrant, point_id
from tests.conftest import REPO_ROOT
from tests.pipe_lines import lines_until

DIM = 12


def unit_vectors(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture
def store(tmp_path):
    with QdrantStore.open(tmp_path / "qdrant", embedding_dim=DIM) as opened:
        yield opened


def test_import_qdrant_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "qdrant_client", None)
    with pytest.raises(ImportError, match=r'needs the qdrant-client package: .*pip install -e "\.\[qdrant\]"'):
        import_qdrant()


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
    store.add(list(range(50)), [f"text {i}" for i in range(50)], corpus * 3.0)  # normalised by the store
    hits = store.search(queries, k=5)
    scores = queries @ corpus.T
    expected = np.argsort(-scores, axis=1)[:, :5]
    assert [[hit["id"] for hit in row] for row in hits] == expected.tolist()
    for q, row in enumerate(hits):
        np.testing.assert_allclose([hit["score"] for hit in row], scores[q, expected[q]], atol=1e-5)
        assert all(hit["text"] == f"text {hit['id']}" for hit in row)
    assert len(store.search(queries[:1], k=100)[0]) == 50


def test_int_and_str_ids_round_trip_as_different_points(store):
    ids = [5, "5", -5, "hello", 0, 2**62]
    vectors = unit_vectors(len(ids))
    store.add(ids, [f"t{i}" for i in range(len(ids))], vectors, [{"n": i} for i in range(len(ids))])
    assert len(store) == len(ids)
    assert point_id(5) == 5 and point_id("5") != point_id(5) and point_id(-5) != point_id("-5")
    assert point_id("5") == point_id("5")  # deterministic
    for position, user_id in enumerate(ids):
        best = store.search(vectors[position : position + 1], k=1)[0][0]
        assert best["id"] == user_id and type(best["id"]) is type(user_id) and best["n"] == position
    rows = [row for batch in store.iter_rows(batch_size=4) for row in zip(*batch[:2])]
    assert sorted(rows, key=repr) == sorted(zip(ids, [f"t{i}" for i in range(len(ids))]), key=repr)
    assert store.delete(["5"]) == 1
    assert store.contains([5, "5"]) == [True, False]


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
    with pytest.raises(ValueError, match="'score', which the store uses itself"):  # search gives its own score
        store.add([1], ["a"], unit_vectors(1), [{"score": 0.5}])
    with pytest.raises(ValueError, match=r"Qdrant filters read '\.' and '\[\]' as paths"):
        store.add([1], ["a"], unit_vectors(1), [{"a.b": 1}])
    with pytest.raises(TypeError, match="values must be str, int, float, bool or None"):
        store.add([1], ["a"], unit_vectors(1), [{"nested": {"a": 1}}])
    with pytest.raises(TypeError, match="ids must be ints or strings"):
        store.add([1.5], ["a"], unit_vectors(1))
    assert len(store) == 0


def test_delete_removes_from_search_and_len(store):
    vectors = unit_vectors(10)
    store.add(list(range(10)), [str(i) for i in range(10)], vectors)
    assert store.delete([3, 4, 99, 3]) == 2
    assert len(store) == 8 and store.contains([3, 4, 5]) == [False, False, True]
    found = {hit["id"] for hit in store.search(vectors[3:5], k=10)[0]}
    assert found == set(range(10)) - {3, 4}
    assert store.delete([3]) == 0


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
    hit = store.search(vectors[2:3], k=1, filter={"lang": "fr"})[0][0]
    assert hit == {"id": 2, "text": "w", "score": pytest.approx(1.0, abs=1e-5), "lang": "fr", "site": "a", "n": 2}
    with pytest.raises(TypeError, match="Qdrant matches str, int and bool values only"):
        store.search(vectors[:1], k=1, filter={"score": 0.5})


def test_a_stored_score_field_does_not_hide_the_search_score(store):
    # A point written before "score" was refused as a metadata name: search gives the cosine, not the field.
    models = import_qdrant().models
    vector = unit_vectors(1)[0]
    store._client.upsert(
        store.collection,
        points=[models.PointStruct(id=1, vector=vector.tolist(), payload={"id": 1, "text": "a", "score": 7, "n": 2})],
        wait=True,
    )
    hit = store.search(vector[None], k=1)[0][0]
    assert hit == {"id": 1, "text": "a", "score": pytest.approx(1.0, abs=1e-5), "n": 2}


def test_reopen_finds_everything(tmp_path):
    folder = tmp_path / "qdrant"
    vectors = unit_vectors(20)
    ids = list(range(10)) + [f"s{i}" for i in range(10)]
    with QdrantStore.open(folder, embedding_dim=DIM) as store:
        store.add(ids, [f"text {i}" for i in ids], vectors, [{"i": i} for i in range(20)], batch_size=6)
        store.delete([0])
        store.set_metadata({"model": "tiny", "threshold": 0.8, "extra": None})
        before = store.search(vectors, k=3)
    with QdrantStore.open(folder, create=False) as store:
        assert store.embedding_dim == DIM and len(store) == 19
        after = store.search(vectors, k=3)
        assert [[(h["id"], h["text"], h["i"]) for h in row] for row in after] == [
            [(h["id"], h["text"], h["i"]) for h in row] for row in before
        ]
        np.testing.assert_allclose(
            [[h["score"] for h in row] for row in after], [[h["score"] for h in row] for row in before], atol=1e-6
        )
        assert store.get_metadata() == {"model": "tiny", "threshold": 0.8, "extra": None}
        batches = list(store.iter_rows(batch_size=7))
        assert [len(batch[0]) for batch in batches] == [7, 7, 5]
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


def test_open_errors(tmp_path):
    folder = tmp_path / "qdrant"
    with pytest.raises(FileNotFoundError, match="pass create=True"):
        QdrantStore.open(folder, create=False)
    with pytest.raises(ValueError, match="needs embedding_dim"):
        QdrantStore.open(folder)
    with QdrantStore.open(folder, embedding_dim=DIM) as store:
        assert store.get_metadata() == {}
        with pytest.raises(RuntimeError, match="already open in another QdrantStore or process"):
            QdrantStore.open(folder)
    with pytest.raises(ValueError, match="holds 12-dim embeddings, not 16"):
        QdrantStore.open(folder, embedding_dim=16)
    with pytest.raises(FileNotFoundError, match="no collection 'other'"):
        QdrantStore.open(folder, collection="other", create=False)
    with QdrantStore.open(folder, collection="other", embedding_dim=4) as other:  # a second collection beside
        assert other.embedding_dim == 4
    with pytest.raises(ValueError, match="api_key is for a Qdrant server URL"):
        QdrantStore.open(folder, api_key="secret")


# Adds batches of 50 rows, printing the number of rows acknowledged after each `add` returns. In its add number
# argv[3] (counting from 0), once two of that add's 5 upserts of 10 points have returned, it prints
# "mid-add <rows acknowledged>" and waits to be killed: the kill lands inside `add`, by that marker, not by chance.
WRITER = r"""
import sys
import time
import numpy as np
from hfsiamese.search.stores.qdrant_store import QdrantStore

dim, cut_add = int(sys.argv[2]), int(sys.argv[3])
store = QdrantStore.open(sys.argv[1], embedding_dim=dim)
upsert = store._client.upsert
upserted = 0

def counted_upsert(*args, **kwargs):
    global upserted
    if done == 50 * cut_add and upserted == 2:
        print(f"mid-add {done}", flush=True)
        time.sleep(600)
    result = upsert(*args, **kwargs)
    upserted += 1
    return result

store._client.upsert = counted_upsert
rng = np.random.default_rng(0)
done = 0
while True:
    upserted = 0
    ids = list(range(done, done + 50))
    store.add(ids, [f"text {i}" for i in ids], rng.normal(size=(50, dim)), batch_size=10)
    done += 50
    print(done, flush=True)
"""


@pytest.mark.timeout(300)  # beyond its own 120 s deadline for the writer
@pytest.mark.slow
def test_a_kill_in_the_middle_of_an_add_loses_no_acknowledged_row(tmp_path):
    folder = tmp_path / "qdrant"
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONPATH=str(REPO_ROOT))
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
    assert lines == ["50", "100", "150", "mid-add 150"]  # three adds acknowledged, two upserts of the fourth returned
    acknowledged = 150
    with QdrantStore.open(folder, create=False) as store:  # the dead writer's lock went with it
        assert all(store.contains(list(range(acknowledged))))
        # Each upsert is committed before it returns: the cut add left exactly its first two batches of 10.
        cut_add = list(range(acknowledged, acknowledged + 50))
        assert store.contains(cut_add) == [True] * 20 + [False] * 30 and len(store) == acknowledged + 20
        rng = np.random.default_rng(0)
        vectors = np.concatenate([rng.normal(size=(50, DIM)) for _ in range(acknowledged // 50)])
        probes = [0, acknowledged // 2, acknowledged - 1]
        for probe, hits in zip(probes, store.search(vectors[probes], k=1)):
            assert hits[0]["id"] == probe and hits[0]["text"] == f"text {probe}"


def test_metadata_must_be_json(store):
    with pytest.raises(ValueError, match="plain JSON"):
        store.set_metadata({"threshold": float("nan")})
    store.set_metadata({"fingerprint": "abc", "sizes": [1, 2], "nested": {"a": True}})
    assert json.loads(json.dumps(store.get_metadata())) == {
        "fingerprint": "abc",
        "sizes": [1, 2],
        "nested": {"a": True},
    }


def test_unreachable_server_is_one_clear_error():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(ConnectionError, match=f"cannot reach the Qdrant server at {url}"):
        QdrantStore.open(url, embedding_dim=DIM)
