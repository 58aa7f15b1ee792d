"""Similarity search over embedded texts, and reranking its candidates with a cross-encoder."""

from .duplicate_index import DuplicateIndex
from .exact import topk_cosine
from .reranking import rerank_matches, rerank_pairs

__all__ = ["DuplicateIndex", "rerank_matches", "rerank_pairs", "topk_cosine"]
