"""
The search backends of a `DuplicateIndex`, by name:

* `"exact"`: chunked top-k cosine in torch (`exact.topk_cosine`): nothing to install, exact, every
  row scanned per query;
* `"faiss"`: a FAISS index owned by the `DuplicateIndex` (`ann_index`): exact (flat), quantised
  (int8, product codes, binary) and/or approximate (HNSW, IVF), chosen by corpus size and tuned to a
  recall target measured on the corpus unless told (`recall_tuning`); rows are added to it without a
  rebuild (the `faiss` extra);
* `"lancedb"`: the texts, embeddings and metadata live in a LanceDB table (`stores.lancedb_store`): embedded
  in a folder (exact search, fast appends, every insert a durable commit), or shared storage / LanceDB
  Cloud by URI; inserts, deletes and metadata filters without a rebuild (the `lancedb` extra);
* `"qdrant"`: the same in a Qdrant collection (`stores.qdrant_store`): a Qdrant server or cluster by URL, or
  Qdrant's embedded mode in a folder, which is for small collections (its inserts are slow beyond
  ~100k texts: see `stores.qdrant_store`) (the `qdrant` extra).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from hfsiamese.search.stores.ann_index import AnnSpec
from hfsiamese.search.stores.base import VectorStore
from hfsiamese.search.stores.faiss_store import FaissStore
from hfsiamese.search.stores.in_memory import InMemoryStore

BACKENDS = ("exact", "faiss", "lancedb", "qdrant")
Backend = Literal["exact", "faiss", "lancedb", "qdrant"]
# The backends whose texts and embeddings the `DuplicateIndex` keeps itself (the others keep theirs).
IN_PROCESS_BACKENDS = ("exact", "faiss")
DATABASE_BACKENDS = ("lancedb", "qdrant")


def check_backend(backend: str) -> str:
    """A known backend, whose package is installed."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "faiss":
        from hfsiamese.search.stores.ann_index import import_faiss

        import_faiss()
    if backend == "qdrant":
        from hfsiamese.search.stores.qdrant_store import import_qdrant

        import_qdrant()
    if backend == "lancedb":
        from hfsiamese.search.stores.lancedb_store import import_lancedb

        import_lancedb()
    return backend


def check_backend_options(backend: str, spec: AnnSpec, database: str | os.PathLike | None) -> None:
    """FAISS settings only with `backend="faiss"`, and `database` exactly with a database backend."""
    if backend != "faiss" and not spec.is_default:
        raise ValueError(
            f'quantization, structure, ann and faiss_string_factory apply to backend="faiss", not {backend!r}'
        )
    if backend in DATABASE_BACKENDS and database is None:
        raise ValueError(f'backend="{backend}" needs database=: a folder (the embedded engine) or the URI of a server')
    if backend not in DATABASE_BACKENDS and database is not None:
        raise ValueError(f'database= applies to backend="lancedb" or "qdrant", not {backend!r}')


def database_location(database: str | os.PathLike) -> str:
    """A URL as given, a folder as an absolute path (so that a saved index finds it from anywhere)."""
    text = os.fspath(database)
    return text if "://" in text else str(Path(text).resolve())


def open_store(
    backend: str,
    embedding_dim: int | None,
    *,
    spec: AnnSpec,
    recall_target: float | None,
    database: str | os.PathLike | None,
    collection: str,
    api_key: str | None,
    query_chunk_size: int,
    corpus_chunk_size: int,
) -> VectorStore:
    """The store of a `DuplicateIndex` of this backend (a database one opened, its collection created if missing)."""
    chunks = {"query_chunk_size": query_chunk_size, "corpus_chunk_size": corpus_chunk_size}
    if backend == "exact":
        return InMemoryStore(embedding_dim, **chunks)
    if backend == "faiss":
        return FaissStore(embedding_dim, spec, recall_target, **chunks)
    if backend == "qdrant":
        from hfsiamese.search.stores.qdrant_store import QdrantStore as Store
    else:
        from hfsiamese.search.stores.lancedb_store import LanceDBStore as Store
    return Store.open(database, collection=collection, embedding_dim=embedding_dim, api_key=api_key)


__all__ = [
    "BACKENDS",
    "DATABASE_BACKENDS",
    "IN_PROCESS_BACKENDS",
    "Backend",
    "check_backend",
    "check_backend_options",
    "database_location",
    "open_store",
]
