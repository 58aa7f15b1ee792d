"""Searches among a store's first rows (`hfsiamese.search.stores.prefix_search`), what duplicate groups are mined
with: exact over the table, or through an empty copy of the store's FAISS index filled as the prefix grows; and the
links `earlier_links` makes through either, against a brute-force reading of the rule."""

from __future__ import annotations

import numpy as np
import pytest

from hfsiamese.search.groups.earlier_links import earlier_links
from hfsiamese.search.stores.ann_index import AnnSpec
from hfsiamese.search.stores.faiss_store import FaissStore
from hfsiamese.search.stores.in_memory import InMemoryStore
from hfsiamese.search.stores.prefix_search import AnnPrefixSearch, ExactPrefixSearch
from tests.search.groups.test_earlier_links import THRESHOLD, by_the_rule, near_copies


def filled(store: InMemoryStore, vectors: np.ndarray) -> InMemoryStore:
    store.add(list(range(len(vectors))), [f"q{row}" for row in range(len(vectors))], vectors)
    return store


def exact_before(vectors: np.ndarray, queries: np.ndarray, start: int, depth: int) -> list[set[int]]:
    """Each query's `depth` nearest among rows `0:start`, read off the whole cosine matrix (no ties here)."""
    cosines = queries @ vectors[:start].T
    return [set(np.argsort(-row, kind="stable")[:depth].tolist()) for row in cosines]


def test_the_exact_prefix_search_finds_the_nearest_among_the_first_rows_only():
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((50, 6)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    search = ExactPrefixSearch(filled(InMemoryStore(6), vectors).table, corpus_chunk_size=7)  # pieces cut by start
    for start, depth in ((0, 3), (1, 3), (9, 4), (30, 40), (50, 5)):
        scores, rows = search.before(vectors[40:45], start, depth)
        assert rows.shape == (5, min(depth, start)) and (rows < start).all()
        assert [set(r.tolist()) for r in rows] == exact_before(vectors, vectors[40:45], start, depth)
        assert np.all(np.diff(scores, axis=1) <= 0)  # best first
    assert np.array_equal(search.vectors(3, 7), vectors[3:7])


@pytest.mark.parametrize(
    "spec",
    [AnnSpec(structure="ivf", quantization="none", nlist=4, nprobe=4), AnnSpec(structure="ivf", quantization="int8",
     nlist=4, nprobe=4, rescore_multiplier=64), AnnSpec(structure="ivf", quantization="binary", nlist=2, nprobe=2,
     rescore_multiplier=64)],
    ids=["ivf-flat", "ivf-int8", "ivf-binary"],
)  # fmt: skip
def test_groups_mined_through_a_faiss_copy_filled_in_row_order_follow_the_rule(spec):
    vectors = near_copies(1, clusters=10, size=30, spread=0.3)  # 300 rows; every cell probed, every candidate rescored
    store = filled(FaissStore(8, spec, None), vectors)
    search = store.prefix_search()
    assert isinstance(search, AnnPrefixSearch)
    for k in (1, 3, 8):
        found = earlier_links(store.prefix_search(), len(vectors), THRESHOLD, k, query_chunk_size=64)
        assert set(zip(found.later.tolist(), found.earlier.tolist())) == by_the_rule(vectors, THRESHOLD, k)
    assert len(store.ann) == len(vectors)  # the store's own index is left whole


def test_a_faiss_prefix_search_goes_forward_only():
    vectors = near_copies(2, clusters=4, size=25)
    store = filled(FaissStore(8, AnnSpec(structure="ivf", quantization="none", nlist=2, nprobe=2), None), vectors)
    search = store.prefix_search()
    _, rows = search.before(vectors[60:62], 60, 5)
    assert rows.shape == (2, 5) and (rows < 60).all() and len(search.ann) == 60
    with pytest.raises(ValueError, match="a prefix search goes forward only: it holds 60 rows, asked for 10"):
        search.before(vectors[:1], 10, 5)


def test_an_exact_faiss_store_searches_its_prefix_exactly():
    store = filled(FaissStore(8, AnnSpec(), None), near_copies(3))
    assert isinstance(store.prefix_search(), ExactPrefixSearch)


def test_a_chunk_larger_than_the_links_it_needs_and_chunks_of_one_agree():
    vectors = near_copies(4, clusters=6, size=20, spread=0.25)
    search = ExactPrefixSearch.of_vectors(vectors)
    for chunk in (1, 5, 128):
        found = earlier_links(search, len(vectors), THRESHOLD, 4, query_chunk_size=chunk)
        assert set(zip(found.later.tolist(), found.earlier.tolist())) == by_the_rule(vectors, THRESHOLD, 4)
