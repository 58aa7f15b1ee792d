"""
How rows get into a `DuplicateIndex` and out of it: `build` (an empty index filled from a corpus: its texts embedded
and added in one go, or encoded in resumable shards first, `hfsiamese.search.shards`, whose embeddings then stay on
disk for an in-process index), `add`, `add_embeddings` and `delete`. Each refuses bad input before a row is written
(new ids checked against the index's: one kind, none twice, none kept already; `input_checks` for the rest) and keeps
the index's duplicate groups current (`groups.index_groups`). The read side is `index_contents`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, cast

from hfsiamese.search.embedding_input import (
    assembled_embeddings,
    check_embedding_shape,
    embedding_batches,
    embedding_table,
)
from hfsiamese.search.index_faiss import IndexFaiss
from hfsiamese.search.input_checks import (
    check_given_ids,
    check_metadata,
    check_metadata_rows,
    check_texts,
    id_type,
    plain_ids,
    texts_and_ids,
)
from hfsiamese.search.stores.store_checks import show

if TYPE_CHECKING:
    import datasets
    import numpy as np
    import torch

    from hfsiamese.models.siamese.modeling_siamese import SiameseModel
    from hfsiamese.search.groups.index_groups import IndexGroups
    from hfsiamese.search.index_protocol import SearchIndex
    from hfsiamese.search.stores.in_memory import InMemoryStore


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
        ids = check_given_ids(ids, count)
    check_id_kind(index, ids, "new ids")
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
    if index.database_store is not None:  # every row's id and metadata, before the first piece is written
        index.database_store.check_new_rows(new_ids, metadata)
    kind = index.id_type or id_type(new_ids)
    if not index.store.database:  # one table of every new row, then appended at once
        return kind, [(new_ids, texts, embedding_table(embeddings, len(texts), index.embedding_dim), None)]
    pieces = (  # piece by piece (shard by shard), each written to the database
        (new_ids[start : start + len(batch)], texts[start : start + len(batch)], batch,
         None if metadata is None else metadata[start : start + len(batch)])
        for start, batch in embedding_batches(embeddings, len(texts), index.embedding_dim)
    )  # fmt: skip
    return kind, pieces


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

    # Refused before the first shard is written: a refusal after encoding would leave the shards behind.
    new_ids = check_new_ids(index, ids, len(texts))
    metadata = check_metadata(metadata, len(texts), database=index.store.database)
    if index.database_store is not None:
        index.database_store.check_new_rows(new_ids, metadata)
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
        index.add_embeddings(texts, shards, new_ids, metadata=metadata)
        return index.id_type
    # in process, the embeddings stay on disk: one memory-mapped file assembled from the shards
    table = assembled_embeddings(shards, Path(shards_dir))
    check_embedding_shape(table, len(texts), index.embedding_dim)
    cast("InMemoryStore", index.store).adopt(new_ids, texts, table)  # numbered rows: an in-process store
    return id_type(new_ids)


class IndexWrites(IndexFaiss):
    """The write path of an index (`DuplicateIndex` is one: it embeds with `_encode` and holds its `_groups`)."""

    _groups: IndexGroups
    _encode: Callable[..., torch.Tensor]

    @classmethod
    def build(
        cls,
        corpus: Sequence[str] | datasets.Dataset,
        model: SiameseModel | str,
        tokenizer: Any | None = None,
        *,
        ids: Sequence[int | str] | None = None,
        text_column: str = "text",
        id_column: str | None = None,
        metadata: Sequence[dict[str, Any]] | None = None,
        shards_dir: str | os.PathLike | None = None,
        shard_size: int = 100_000,
        show_progress_bar: bool = False,
        **kwargs: Any,
    ) -> Self:
        """
        Embed a corpus and index it.

        Args:
            corpus: a list of texts, or a `datasets.Dataset` whose `text_column` holds them.
            model, tokenizer: as in the constructor (a model is required here).
            ids: one id per text (all integers or all strings, unique); default the row numbers.
            id_column: with a `Dataset`, the column holding the ids (instead of `ids`).
            metadata: one dict per text (e.g. `{"site": "cooking"}`) that `search(filter=...)` can select on (a
                database backend).
            shards_dir: encode the corpus in resumable shards of `shard_size` texts written to this folder
                (`hfsiamese.search.shards`): a build started again skips the shards it finished, and under
                `accelerate launch` each process encodes its share.
            show_progress_bar: show a tqdm bar while encoding.
            **kwargs: the constructor's options (`store`, `threshold`, `batch_size`, chunk sizes...).

        With `store="faiss"` the FAISS index is built here too, tuned and measured (`recall_report`; one log line).
        """
        if model is None:
            raise ValueError("build needs a model to embed the corpus")
        texts, ids = texts_and_ids(corpus, ids, text_column, id_column)
        if not texts:
            raise ValueError("cannot build an index from an empty corpus")
        if ids is not None:  # refused before a database collection is made or a text encoded
            ids = check_given_ids(ids, len(texts))
        if metadata is not None:
            check_metadata_rows(metadata, len(texts))
        index = cls(model, tokenizer, **kwargs)  # type: ignore[call-arg]  # the index's own constructor
        check_empty_store(index)
        if shards_dir is None:
            index.add(texts, ids, metadata=metadata, show_progress_bar=show_progress_bar)
        else:
            index._id_type = fill_from_shards(index, texts, ids, metadata, shards_dir, shard_size, show_progress_bar)
        index._store.finish_build()  # a FAISS index built and measured now
        return index

    def add(
        self,
        texts: Sequence[str],
        ids: Sequence[int | str] | None = None,
        *,
        metadata: Sequence[dict[str, Any]] | None = None,
        show_progress_bar: bool = False,
        assign_groups: bool = False,
    ) -> list[dict[str, Any]] | None:
        """
        Embed `texts` and append them to the index. `ids` default to the next row numbers (only while the index's
        ids are integers); an id already in the index is an error, and so is an empty text. Nothing changes unless
        every text is embedded. A FAISS index takes the new rows without a rebuild; a database has every row durably
        when `add` returns.

        `assign_groups=True` also puts each new text in a duplicate group (`find_groups` first; an empty index starts
        groups at its threshold) and returns, per text, `{"id", "group", "canonical_id", "canonical_text", "score"
        (cosine to the canonical), "new_group"}`: the question to link it to (see `hfsiamese.search.groups.assignment`).
        """
        texts = check_texts(texts)
        if not texts:
            return [] if assign_groups else None
        new_ids = check_new_ids(self, ids, len(texts))  # before the (long) encoding
        groups = self._groups.to_assign(self) if assign_groups else None  # refused before any row is written
        embeddings = self._encode(texts, show_progress_bar=show_progress_bar)
        self.add_embeddings(texts, embeddings, new_ids, metadata=metadata)
        return self._groups.assign(self, groups, new_ids, embeddings) if groups is not None else None

    def add_embeddings(
        self,
        texts: Sequence[str],
        embeddings: torch.Tensor | np.ndarray | Any,
        ids: Sequence[int | str] | None = None,
        *,
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        """`add` for texts embedded already (by this index's model: e.g. `EmbeddingShards` of a sharded encoding,
        which are added shard by shard, never all in memory at once)."""
        kind, pieces = rows_to_add(self, texts, embeddings, ids, metadata)
        for piece in pieces:
            self._store.add(*piece)
        self._id_type = kind

    def build_vector_index(self, **options: Any) -> Any:
        """
        An approximate vector index inside a LanceDB database, tuned to `recall_target` (the options and what comes
        back: `hfsiamese.search.stores.lancedb_vector_index.build_vector_index`): unfiltered searches, in every process
        that opens the database (`hfsiamese serve` too), go through it from then on. Any other store is refused: a
        FAISS index is tuned to `recall_target` when it is built, and Qdrant indexes its collections itself.
        """
        build = getattr(self._store, "build_vector_index", None)
        if build is None:
            raise ValueError(
                f'a vector index is built inside a LanceDB database (store="lancedb"), not store={self.store_name!r}'
            )
        return build(**options)

    def delete(self, ids: Sequence[int | str]) -> int:
        """Remove the texts with these ids (ids not in the index are ignored; ids of the other kind than the index's, a
        string where its ids are integers or the reverse, are refused); returns how many were removed. A database
        deletes in place; an in-process index is compacted (the kept rows copied into memory, a FAISS index rebuilt at
        the next search), so for a large corpus that changes every day prefer a database."""
        ids = check_ids_to_delete(self, ids)  # "0" never finds 0: refused, not 0 removed
        self._groups.current(self)  # a database's stored groups read (or refused as damaged) before any row goes
        removed = self._store.delete(ids)
        if not self._store.database and not len(self._store):
            self._id_type = None
        if removed:
            self._groups.after_delete(self, ids)  # a deleted canonical's group promotes another member
        return removed


__all__ = [
    "IndexWrites",
    "check_empty_store",
    "check_id_kind",
    "check_ids_to_delete",
    "check_new_ids",
    "fill_from_shards",
    "rows_to_add",
]
