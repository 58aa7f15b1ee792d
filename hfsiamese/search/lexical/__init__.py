"""Keyword + dense ("hybrid") duplicate search: a BM25 index over an index's texts (`bm25_index`, the `bm25s`
package) and the fusion of its results with the dense ones (`fusion`: reciprocal rank fusion, weighted normalised
scores). `DuplicateIndex(hybrid="rrf" | "weighted")` uses them; the guide "Duplicate search" says when."""

from hfsiamese.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "Bm25Index": "hfsiamese.search.lexical.bm25_index",
    "HybridSpec": "hfsiamese.search.lexical.hybrid_settings",
    "RRF_K": "hfsiamese.search.lexical.fusion",
    "hybrid_search_embeddings": "hfsiamese.search.lexical.hybrid_search",
    "reciprocal_rank_fusion": "hfsiamese.search.lexical.fusion",
    "weighted_fusion": "hfsiamese.search.lexical.fusion",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = sorted(_EXPORTS)
