"""New rows of a `DuplicateIndex` (`add`, `add_embeddings`, `build`): their ids checked against the index's (one
kind, none twice, none kept already), then handed to its store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hfsiamese.search.embedding_input import embedding_batches, embedding_table
from hfsiamese.search.input_checks import check_metadata, check_texts, id_type, plain_ids
from hfsiamese.search.stores.store_checks import show

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex


def check_id_kind(index: SearchIndex, ids: list[Any], what: str) -> None:
    """Refuse ids of the other kind than the index's (`what` names them in the message): `"0"` never finds `0`."""
    if not ids:
        return
    kind, have = id_type(ids), index.id_type
    if have is not None and kind != have:
        example = "0, not '0'" if have == "int" else "'0', not 0"
        raise TypeError(
            f"this index has {have} ids, the {what} are {kind} ids ({show(ids)}): pass {have} ids ({example})"
        )


def check_ids_to_delete(index: SearchIndex, ids: Sequence[int | str]) -> list[Any]:
    """The ids `delete` removes, refused where of the other kind than the index's (or of both kinds)."""
    ids = plain_ids(ids)
    check_id_kind(index, ids, "ids to delete")
    return ids


def check_new_ids(index: SearchIndex, ids: Sequence[int | str] | None, count: int) -> list[Any]:
    """The ids of `count` new texts (default: the next row numbers), refused where of the other kind than the index's,
    repeated, or kept already."""
    if ids is None:
        if index.id_type == "str":
            raise ValueError("this index has string ids: pass ids=... for the new texts")
        start = len(index)
        ids = list(range(start, start + count))
    else:
        ids = plain_ids(ids)
        if len(ids) != count:
            raise ValueError(f"got {count} texts but {len(ids)} ids: give one id per text")
    check_id_kind(index, ids, "new ids")
    seen: set[Any] = set()
    repeated = [i for i in ids if i in seen or seen.add(i)]
    if repeated:
        raise ValueError(f"duplicate ids among the new texts: {sorted(set(repeated))[:5]}")
    clashing = [i for i, present in zip(ids, index.contains(ids)) if present]  # one query for them all
    if clashing:
        raise ValueError(f"ids already in the index: {clashing[:5]}{' ...' if len(clashing) > 5 else ''}")
    return ids


def rows_to_add(
    index: SearchIndex,
    texts: Sequence[str],
    embeddings: Any,
    ids: Sequence[int | str] | None,
    metadata: Sequence[dict[str, Any]] | None,
) -> tuple[str, Iterable[tuple[list[Any], list[str], Any, list[dict[str, Any]] | None]]]:
    """
    The id kind of the index once texts embedded already are added, and the `(ids, texts, embeddings, metadata)`
    pieces to hand its store's `add`: in memory one table of every new row, in a database one piece per batch
    (shard by shard, read as they are handed on). `add_embeddings` hands them on itself, so that a warning of the
    store's (`faiss_tuning`) names the same line as before.
    """
    texts = check_texts(texts)
    new_ids = check_new_ids(index, ids, len(texts))
    metadata = check_metadata(metadata, len(texts), database=index.store.database)
    kind = index.id_type or id_type(new_ids)
    if not index.store.database:  # one table of every new row, then appended at once
        return kind, [(new_ids, texts, embedding_table(embeddings, len(texts), index.embedding_dim), None)]
    pieces = (  # piece by piece (shard by shard), each written to the database
        (new_ids[start : start + len(batch)], texts[start : start + len(batch)], batch,
         None if metadata is None else metadata[start : start + len(batch)])
        for start, batch in embedding_batches(embeddings, len(texts), index.embedding_dim)
    )  # fmt: skip
    return kind, pieces


__all__ = ["check_ids_to_delete", "check_id_kind", "check_new_ids", "rows_to_add"]
