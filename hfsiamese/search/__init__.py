"""Similarity search over embedded texts (in memory, memory-mapped with FAISS, or in a vector database),
corpus encoding in resumable shards, reranking search candidates with a cross-encoder, and duplicate groups."""

from hfsiamese.search.duplicate_index import DuplicateIndex
from hfsiamese.search.groups import DuplicateGroups
from hfsiamese.search.reranking import rerank_matches, rerank_pairs
from hfsiamese.search.shards import EmbeddingShards, encode_to_shards, encode_to_shards_ray
from hfsiamese.search.stores.ann_index import AnnSpec
from hfsiamese.search.stores.base import VectorStore
from hfsiamese.utils.exact_topk import topk_cosine

__all__ = [
    "AnnSpec",
    "DuplicateGroups",
    "DuplicateIndex",
    "EmbeddingShards",
    "VectorStore",
    "encode_to_shards",
    "encode_to_shards_ray",
    "rerank_matches",
    "rerank_pairs",
    "topk_cosine",
]
