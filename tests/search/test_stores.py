"""Every store of a `DuplicateIndex` is a `VectorStore`; a class missing one of its methods is not."""

from __future__ import annotations

import numpy as np
import pytest

from hfsiamese.search import VectorStore
from hfsiamese.search.stores import FaissStore, InMemoryStore, LanceDBStore, QdrantStore
from hfsiamese.search.stores.ann_index import AnnSpec


def test_in_process_stores_are_vector_stores():
    assert isinstance(InMemoryStore(4), VectorStore)
    assert isinstance(FaissStore(4, AnnSpec(), None), VectorStore)


@pytest.mark.parametrize("store_class", [LanceDBStore, QdrantStore])
def test_database_stores_are_vector_stores(store_class, tmp_path):
    with store_class.open(tmp_path / "db", embedding_dim=4) as store:
        assert isinstance(store, VectorStore)


def test_a_store_missing_a_method_is_refused():
    class NoSearch(InMemoryStore):
        search = None  # a protocol member set to None counts as absent

    assert not isinstance(NoSearch(4), VectorStore)
    assert not isinstance(object(), VectorStore)


def test_in_memory_store_iterates_its_rows_in_order():
    store = InMemoryStore(2)
    store.add([3, 1, 2], ["a", "b", "c"], np.eye(3, 2, dtype=np.float32) + 0.5)
    (ids, texts, vectors, metadata), *rest = list(store.iter_rows(batch_size=2))
    assert (ids, texts, vectors.shape, metadata, len(rest)) == ([3, 1], ["a", "b"], (2, 2), [{}, {}], 1)
    assert store.contains([1, 7]) == [True, False] and store.delete([1, 7]) == 1 and len(store) == 2


@pytest.mark.parametrize("ids", [[3, 1, 2], ["q3", "q1", "q2"]])
def test_the_rows_dataset_is_made_without_hashing_every_text(ids, monkeypatch):
    """`datasets` fingerprints a table made by `from_dict` by pickling all of it (2M texts: 4 s against 0.4 s, and a
    pickled copy in memory); the store's rows never go through a cached transform, so they get a random fingerprint
    instead."""
    import datasets.arrow_dataset

    def hashed(*args, **kwargs):
        raise AssertionError("the rows were hashed")

    monkeypatch.setattr(datasets.arrow_dataset, "generate_fingerprint", hashed)
    store = InMemoryStore(2)
    store.add(ids, ["a", "b", "c"], np.eye(3, 2, dtype=np.float32) + 0.5)
    corpus = store.corpus
    assert corpus["id"] == ids and corpus["text"] == ["a", "b", "c"]
    assert corpus.features["id"].dtype == ("int64" if isinstance(ids[0], int) else "string")


def _opened(kind: str, tmp_path):
    if kind == "exact":
        return InMemoryStore(3)
    if kind == "faiss":
        return FaissStore(3, AnnSpec(), None)
    return {"lancedb": LanceDBStore, "qdrant": QdrantStore}[kind].open(tmp_path / "db", embedding_dim=3, create=True)


@pytest.mark.parametrize("kind", ["exact", "faiss", "lancedb", "qdrant"])
def test_rows_by_id_reads_those_rows_in_the_order_asked(kind, tmp_path):
    vectors = np.eye(4, 3, dtype=np.float32)
    vectors[3] = [0.6, 0.8, 0.0]
    store = _opened(kind, tmp_path)
    try:
        store.add([10, 11, 12, 13], ["a", "b", "c", "d"], vectors)
        texts, found = store.rows_by_id([13, 10, 13])
        assert texts == ["d", "a", "d"] and found.dtype == np.float32
        np.testing.assert_allclose(found, vectors[[3, 0, 3]], atol=1e-6)
        assert store.rows_by_id([])[1].shape == (0, 3)
        with pytest.raises(KeyError, match="99"):
            store.rows_by_id([10, 99])
        store.delete([10])  # rows numbered again in memory
        store.add([14], ["e"], vectors[[1]])
        assert store.rows_by_id([14, 13, 11])[0] == ["e", "d", "b"]
    finally:
        store.close()


def test_rows_added_one_at_a_time_are_searched_before_and_after_they_are_folded_in(monkeypatch):
    import hfsiamese.search.stores.in_memory as in_memory

    monkeypatch.setattr(in_memory, "_PENDING_ROWS", 3)
    store = InMemoryStore(2)
    store.add([0, 1], ["a", "b"], np.array([[1, 0], [0, 1]], dtype=np.float32))  # below 3: still pending
    store.add([2], ["c"], np.array([[0.6, 0.8]], dtype=np.float32))  # reaches 3: folded into the corpus
    assert store.corpus.num_rows == 3 and not store._pending_ids
    store.add([3], ["d"], np.array([[0.8, 0.6]], dtype=np.float32))  # pending again
    assert len(store) == 4 and store._pending_ids == [3]
    (found,) = store.search(np.array([[0.8, 0.6]], dtype=np.float32), 4)
    assert [(m["id"], m["text"]) for m in found] == [(3, "d"), (2, "c"), (0, "a"), (1, "b")]
    assert store.rows_by_id([3, 0])[0] == ["d", "a"] and store.contains([3]) == [True]
    assert store.all_texts() == ["a", "b", "c", "d"] and store.corpus.num_rows == 4  # read whole: folded in
