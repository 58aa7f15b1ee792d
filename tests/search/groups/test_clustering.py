"""The rebuild's placement (`hfsiamese.search.groups.clustering`): the members' embeddings it keeps for large groups
are the rows a fresh read gives, and the groups are the same with or without keeping them."""

from __future__ import annotations

import numpy as np

from hfsiamese.search.groups.clustering import GroupVectorCache, guarded_groups, pair_graph
from hfsiamese.search.groups.earlier_links import earlier_links, vectors_search
from tests.search.groups.test_earlier_links import near_copies


class CountingRows:
    """Rows of a table, counting how many are read."""

    def __init__(self, table: np.ndarray) -> None:
        self.table, self.read = table, 0

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        self.read += len(rows)
        return self.table[rows]


def test_a_growing_group_reads_only_its_new_members():
    table = np.random.default_rng(0).standard_normal((100, 4)).astype(np.float32)
    reads = CountingRows(table)
    cache = GroupVectorCache(reads, min_members=3)
    members = [5, 9]
    assert np.array_equal(cache(members), table[members]) and reads.read == 2  # small: read afresh, not kept
    for new in (11, 40, 41, 70, 2, 99):
        members.append(new)
        assert np.array_equal(cache(members), table[members])
    assert reads.read == 2 + 3 + 5  # once whole at 3 members, then one new member a call
    assert np.array_equal(cache(members), table[members]) and reads.read == 10  # unchanged: nothing read
    assert np.array_equal(cache(members[:4]), table[members[:4]])  # shrunk: read whole, kept again
    changed = [5, 9, 12, 13]  # same first member, not grown at its end
    assert np.array_equal(cache(changed), table[changed])


def test_no_more_than_max_bytes_are_kept():
    table = np.ones((1000, 8), dtype=np.float32)
    cache = GroupVectorCache(CountingRows(table), min_members=2, max_bytes=4 * 8 * 40)  # 40 rows' bytes
    for first in range(0, 1000, 10):
        group = list(range(first, first + 10))
        assert np.array_equal(cache(group), table[group])
    assert 0 < cache.kept_bytes <= cache.max_bytes


def test_the_groups_are_the_same_with_the_cache_as_with_fresh_reads(monkeypatch):
    vectors = near_copies(5, clusters=4, size=60, spread=0.35)  # groups past the cache's 32 members
    links = earlier_links(vectors_search(vectors), len(vectors), 0.8, 10)
    graph = pair_graph(len(vectors), links.later, links.earlier, links.scores)
    settings = (("mean", "earliest"), ("canonical", "most_central"))
    kept = [guarded_groups(graph, CountingRows(vectors), 0.8, guard, canonical) for guard, canonical in settings]
    fresh = CountingRows(vectors)  # every group read afresh, as before the cache
    monkeypatch.setattr(GroupVectorCache, "__call__", lambda self, members: fresh(np.asarray(members, dtype=np.int64)))
    for found, (guard, canonical) in zip(kept, settings):
        expected = guarded_groups(graph, fresh, 0.8, guard, canonical)
        assert all(np.array_equal(a, b) for a, b in zip(found, expected))
        assert np.bincount(found[0]).max() >= 32  # a group large enough to be kept
