"""Where a `DuplicateIndex` keeps and searches its vectors: one `VectorStore` per backend (`backends`)."""

from hfsiamese.search.stores.base import DatabaseStore, VectorStore
from hfsiamese.search.stores.faiss_store import FaissStore
from hfsiamese.search.stores.in_memory import InMemoryStore
from hfsiamese.search.stores.lancedb_store import LanceDBStore
from hfsiamese.search.stores.qdrant_store import QdrantStore

__all__ = ["DatabaseStore", "FaissStore", "InMemoryStore", "LanceDBStore", "QdrantStore", "VectorStore"]
