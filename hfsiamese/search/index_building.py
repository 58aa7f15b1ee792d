"""How `DuplicateIndex.build` fills a new index: the texts embedded and added in one go, or encoded in resumable
shards first (`hfsiamese.search.shards`), whose embeddings then stay on disk for an in-process index."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hfsiamese.search.embedding_input import assembled_embeddings, check_embedding_shape
from hfsiamese.search.index_rows import check_new_ids
from hfsiamese.search.index_views import IndexViews
from hfsiamese.search.input_checks import check_metadata, id_type
from hfsiamese.search.stores.faiss_store import FaissStore
from hfsiamese.search.stores.in_memory import InMemoryStore


def check_empty_store(index: IndexViews) -> None:
    """A database collection that holds texts already is loaded, not built into."""
    if not isinstance(index._store, InMemoryStore) and len(index._store):
        raise ValueError(
            f"the collection {index.collection!r} at {index.database} already holds {len(index._store)} texts: "
            "DuplicateIndex.load it (and add), or build into another collection"
        )


def fill_from_shards(
    index: IndexViews,
    texts: list[str],
    ids: Sequence[int | str] | None,
    metadata: Sequence[dict[str, Any]] | None,
    shards_dir: str | os.PathLike,
    shard_size: int,
    show_progress_bar: bool,
) -> None:
    """Encode `texts` into shards in `shards_dir` (skipping those there already) and add them to `index`: a database
    takes them shard by shard, an in-process index one memory-mapped file assembled from them."""
    from hfsiamese.search.shards import EmbeddingShards, encode_to_shards

    encode_to_shards(
        texts,
        shards_dir,
        index.model,
        index.tokenizer,
        shard_size=shard_size,
        batch_size=index.batch_size,
        max_length=index.max_length,
        truncate_dim=index.truncate_dim,
        show_progress_bar=show_progress_bar,
    )
    shards = EmbeddingShards.open(shards_dir)
    if not isinstance(index._store, InMemoryStore):
        index.add_embeddings(texts, shards, ids, metadata=metadata)
    else:  # the embeddings stay on disk: one memory-mapped file assembled from the shards
        new_ids = check_new_ids(index, ids, len(texts))
        check_metadata(metadata, len(texts), database=False)
        table = assembled_embeddings(shards, Path(shards_dir))
        check_embedding_shape(table, len(texts), index.embedding_dim)
        index._store.adopt(new_ids, texts, table)
        index._id_type = id_type(new_ids)


def with_ann(index: IndexViews) -> IndexViews:
    """`index`, its FAISS index built (and measured) now with `backend="faiss"`: the last step of `build`."""
    if isinstance(index._store, FaissStore):
        index._store.ensure_ann()
    return index


__all__ = ["check_empty_store", "fill_from_shards", "with_ann"]
