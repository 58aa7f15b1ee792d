"""The two fusion rules against hand computation."""

import pytest

from hfsiamese.search.lexical.fusion import RRF_K, reciprocal_rank_fusion, weighted_fusion


def test_reciprocal_rank_fusion_sums_one_over_k_plus_rank():
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "d"]])
    assert RRF_K == 60
    expected = {"a": 1 / 61, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    assert dict(fused) == pytest.approx(expected)
    # c is in both lists; b and d tie at 1/62, b first (the dense list is given first)
    assert [key for key, _ in fused] == ["c", "a", "b", "d"]


def test_a_small_rrf_k_lets_the_first_ranks_weigh_more():
    # k=60: b (ranks 2 and 2) beats a (ranks 1 and 4); k=1: a (1/2 + 1/5) beats b (1/3 + 1/3)
    rankings = [["a", "b"], ["c", "b", "d", "a"]]
    assert [key for key, _ in reciprocal_rank_fusion(rankings)][:2] == ["b", "a"]
    fused = reciprocal_rank_fusion(rankings, rrf_k=1)
    assert fused[0] == ("a", pytest.approx(1 / 2 + 1 / 5)) and dict(fused)["b"] == pytest.approx(2 / 3)


def test_weighted_fusion_normalises_each_side_and_weighs_them():
    # dense list a, b, c (cosines 0.9..0.5: min-max to 1, 0.5, 0); d found by BM25 only (cosine 0.6 -> 0.25),
    # e's cosine below the dense list's lowest is clipped to 0; BM25 divided by its highest (4.0)
    dense = {"a": 0.9, "b": 0.7, "c": 0.5, "d": 0.6, "e": 0.2}
    lexical = {"c": 4.0, "d": 2.0, "e": 1.0}
    fused = dict(weighted_fusion(dense, lexical, 0.25, dense_range=(0.5, 0.9)))
    assert fused == pytest.approx(
        {
            "a": 0.75 * 1.0,
            "b": 0.75 * 0.5,
            "c": 0.75 * 0.0 + 0.25 * 1.0,
            "d": 0.75 * 0.25 + 0.25 * 0.5,
            "e": 0.75 * 0.0 + 0.25 * 0.25,
        }
    )
    assert [key for key, _ in weighted_fusion(dense, lexical, 0.25, dense_range=(0.5, 0.9))] == list("abdce")


def test_weighted_fusion_edges():
    # no range given: that of the cosines; lexical_weight 0 is the dense order, 1 the BM25 order
    dense, lexical = {"a": 0.8, "b": 0.4}, {"b": 3.0}
    assert weighted_fusion(dense, lexical, 0.0) == [("a", 1.0), ("b", 0.0)]
    assert weighted_fusion(dense, lexical, 1.0) == [("b", 1.0), ("a", 0.0)]
    # one cosine (or all equal): each counts 1; no BM25 match: the lexical side adds nothing
    assert weighted_fusion({"a": 0.3}, {}, 0.5) == [("a", 0.5)]
