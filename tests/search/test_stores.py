"""Every store of a `DuplicateIndex` is a `VectorStore`; a class missing one of its methods is not."""

from __future__ import annotations

import numpy as np
import pytest

from hfsiamese.search import VectorStore
from hfsiamese.search.ann_index import AnnSpec
from hfsiamese.search.stores import FaissStore, InMemoryStore, LanceDBStore, QdrantStore


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
