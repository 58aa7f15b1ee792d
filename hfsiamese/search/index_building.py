"""How `DuplicateIndex.build` fills a new index: the texts embedded and added in one go, or encoded in resumable
shards first (`hfsiamese.search.shards`), whose embeddings then stay on disk for an in-process index."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hfsiamese.search.embedding_input import assembled_embeddings, check_embedding_shape
from hfsiamese.search.index_rows import check_new_ids
from hfsiamese.search.input_checks import check_metadata, id_type

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex
    from hfsiamese.search.stores.in_memory import InMemoryStore


def check_empty_store(index: SearchIndex) -> None:
    """A database collection that holds texts already is loaded, not built into."""
    if index.store.database and len(index):
        raise ValueError(
            f"the collection {index.collection!r} at {index.database} already holds {len(index)} texts: "
            "DuplicateIndex.load it (and add), or build into another collection"
        )


def fill_from_shards(
    index: SearchIndex,
    texts: list[str],
    ids: Sequence[int | str] | None,
    metadata: Sequence[dict[str, Any]] | None,
    shards_dir: str | os.PathLike,
    shard_size: int,
    show_progress_bar: bool,
) -> str | None:
    """Encode `texts` into shards in `shards_dir` (skipping those there already) and add them to `index`: a database
    takes them shard by shard, an in-process index one memory-mapped file assembled from them. Returns the kind of
    the index's ids now."""
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
    if index.store.database:
        index.add_embeddings(texts, shards, ids, metadata=metadata)
        return index.id_type
    # in process, the embeddings stay on disk: one memory-mapped file assembled from the shards
    new_ids = check_new_ids(index, ids, len(texts))
    check_metadata(metadata, len(texts), database=False)
    table = assembled_embeddings(shards, Path(shards_dir))
    check_embedding_shape(table, len(texts), index.embedding_dim)
    cast("InMemoryStore", index.store).adopt(new_ids, texts, table)  # numbered rows: an in-process store
    return id_type(new_ids)


__all__ = ["check_empty_store", "fill_from_shards"]
