"""New rows of a `DuplicateIndex` (`add`, `add_embeddings`, `build`): their ids checked against the index's (one
kind, none twice, none kept already), then handed to its store."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hfsiamese.search.embedding_input import embedding_batches, embedding_table
from hfsiamese.search.input_checks import check_metadata, check_texts, id_type, plain_ids
from hfsiamese.search.stores.in_memory import InMemoryStore

if TYPE_CHECKING:
    from hfsiamese.search.duplicate_index import DuplicateIndex


def check_new_ids(index: DuplicateIndex, ids: Sequence[int | str] | None, count: int) -> list[Any]:
    """The ids of `count` new texts (default: the next row numbers), refused where of the other kind than the index's,
    repeated, or kept already."""
    if ids is None:
        if index._id_type == "str":
            raise ValueError("this index has string ids: pass ids=... for the new texts")
        start = len(index)
        ids = list(range(start, start + count))
    else:
        ids = plain_ids(ids)
        if len(ids) != count:
            raise ValueError(f"got {count} texts but {len(ids)} ids: give one id per text")
    kind = id_type(ids)
    if index._id_type is not None and kind != index._id_type:
        raise TypeError(f"this index has {index._id_type} ids, the new ids are {kind}s")
    seen: set[Any] = set()
    repeated = [i for i in ids if i in seen or seen.add(i)]
    if repeated:
        raise ValueError(f"duplicate ids among the new texts: {sorted(set(repeated))[:5]}")
    clashing = [i for i, present in zip(ids, index._store.contains(ids)) if present]  # one query for them all
    if clashing:
        raise ValueError(f"ids already in the index: {clashing[:5]}{' ...' if len(clashing) > 5 else ''}")
    return ids


def add_embedded(
    index: DuplicateIndex,
    texts: Sequence[str],
    embeddings: Any,
    ids: Sequence[int | str] | None,
    metadata: Sequence[dict[str, Any]] | None,
) -> None:
    """Texts embedded already, added to the index's store: in memory as one table of every new row, in a database
    piece by piece (shard by shard), each piece written there."""
    texts = check_texts(texts)
    new_ids = check_new_ids(index, ids, len(texts))
    metadata = check_metadata(metadata, len(texts), database=not isinstance(index._store, InMemoryStore))
    kind = index._id_type or id_type(new_ids)
    if isinstance(index._store, InMemoryStore):  # one table of every new row, then appended at once
        index._store.add(new_ids, texts, embedding_table(embeddings, len(texts), index.embedding_dim))
    else:  # piece by piece (shard by shard), each written to the database
        for start, batch in embedding_batches(embeddings, len(texts), index.embedding_dim):
            stop = start + len(batch)
            index._store.add(
                new_ids[start:stop], texts[start:stop], batch, None if metadata is None else metadata[start:stop]
            )
    index._id_type = kind


__all__ = ["add_embedded", "check_new_ids"]
