"""
The stores of a `DuplicateIndex`, by name (`store=`, `--store`; `backend` names the model's runtime, as in
`hfsiamese.load_model` and sentence-transformers):

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
from hfsiamese.utils.deprecation import warn_deprecated

STORES = ("exact", "faiss", "lancedb", "qdrant")
Store = Literal["exact", "faiss", "lancedb", "qdrant"]
# The names these had while `backend` meant the store (the values are disjoint from the runtime's, so an old
# `backend="faiss"` is told apart from `backend="auto"` and warned: `store_and_runtime`).
BACKENDS = STORES
Backend = Store
# The backends whose texts and embeddings the `DuplicateIndex` keeps itself (the others keep theirs).
IN_PROCESS_BACKENDS = ("exact", "faiss")
DATABASE_BACKENDS = ("lancedb", "qdrant")


def store_and_runtime(store: str | None, backend: str | None, *, flag: bool = False) -> tuple[str | None, str | None]:
    """
    `(store, backend)` with an old store name given as `backend` moved to `store`, with a FutureWarning in the
    words the user wrote (`flag`: `--backend faiss` on a command line, else the keyword `backend="faiss"`). Given
    under both names, with different stores, is an error; a runtime `backend` ("auto") is returned as it is.
    """
    if backend not in STORES:
        return store, backend
    if store is not None and store != backend:
        said = f"--backend {backend} (deprecated) and --store {store}" if flag else f"backend={backend!r} and store="
        raise ValueError(f"{said}{'' if flag else repr(store)} name different stores: give the store once, as store")
    if flag:
        warn_deprecated("option", "--backend STORE", said_old=f"--backend {backend}", said_new=f"--store {backend}")
    else:
        warn_deprecated("keyword", "backend=STORE", said_old=f"backend={backend!r}", said_new=f"store={backend!r}")
    return backend, None


def check_backend(backend: str) -> str:
    """A known store, whose package is installed."""
    if backend not in STORES:
        raise ValueError(f"store must be one of {STORES}, got {backend!r}")
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
    """FAISS settings only with `store="faiss"`, and `database` exactly with a database store."""
    if backend != "faiss" and not spec.is_default:
        raise ValueError(
            f'quantization, structure, ann and faiss_string_factory apply to store="faiss", not {backend!r}'
        )
    if backend in DATABASE_BACKENDS and database is None:
        raise ValueError(f'store="{backend}" needs database=: a folder (the embedded engine) or the URI of a server')
    if backend not in DATABASE_BACKENDS and database is not None:
        raise ValueError(f'database= applies to store="lancedb" or "qdrant", not {backend!r}')


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
    "STORES",
    "Backend",
    "Store",
    "check_backend",
    "check_backend_options",
    "database_location",
    "open_store",
    "store_and_runtime",
]
