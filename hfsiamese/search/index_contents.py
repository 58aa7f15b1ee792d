"""
What a `DuplicateIndex` holds, read from its store: its rows (ids, texts, embeddings, a `datasets` view), its size,
the kind of its ids, its keyword side, and the store's lifetime (close, `with`). The index's operations (build, add,
search, save) are in `duplicate_index`; this is the read side they and the index's helpers call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    import datasets
    import numpy as np
    import torch

    from hfsiamese.search.lexical.hybrid_search import LexicalSide
    from hfsiamese.search.stores.base import DatabaseStore, VectorStore


class IndexContents:
    """The rows an index holds, through its store (`DuplicateIndex` is one: it sets `_store`, `_lexical`, `_id_type`)."""

    _store: VectorStore
    _lexical: LexicalSide | None
    _id_type: str | None

    @property
    def store(self) -> VectorStore:
        """The `VectorStore` keeping the rows (`hfsiamese.search.stores`): what the index's helpers hand work to."""
        return self._store

    @property
    def lexical(self) -> LexicalSide | None:
        """The keyword side of a `hybrid=` index (`hfsiamese.search.lexical`), None for a dense one."""
        return self._lexical

    def __len__(self) -> int:
        return len(self._store)

    def rows_by_id(self, ids: list[Any]) -> tuple[list[str], np.ndarray]:
        """The texts and embeddings of these ids, in their order, read from the store without a scan (a KeyError
        names ids not in the index)."""
        return self._store.rows_by_id(list(ids))

    def contains(self, ids: list[Any]) -> list[bool]:
        """Whether each id is in the index, in one query of its store (a service checks new ids before it writes)."""
        return self._store.contains(list(ids))

    @property
    def id_type(self) -> str | None:
        """`"int"` or `"str"`: the kind of the index's ids (None while it holds none); what an id read as text, from a
        URL, is turned into. Known once rows were added or loaded, else asked of the store (a database collection
        opened by the constructor)."""
        if self._id_type is None and len(self):
            self._id_type = self._store.id_type
        return self._id_type

    @property
    def database_store(self) -> DatabaseStore | None:
        """The store when the index lives in a database (LanceDB, Qdrant), None for an in-process one: what the
        index's duplicate groups are written to beside its rows."""
        return self._store if self._store.database else None  # type: ignore[return-value]  # database: a DatabaseStore

    @property
    def embeddings(self) -> torch.Tensor:
        """The `(num_texts, dim)` float32 embeddings, in row order (a copy in memory if they are memory-mapped)."""
        return self._store.all_embeddings()

    @property
    def memory_mapped(self) -> bool:
        """Whether the embeddings are read from the saved folder's file rather than held in memory."""
        return self._store.memory_mapped

    @property
    def corpus(self) -> datasets.Dataset | None:
        """The ids and texts as a `datasets.Dataset` (columns `id`, `text`), in row order."""
        return self._store.dataset()

    @property
    def ids(self) -> list[int | str]:
        return self._store.all_ids()

    @property
    def texts(self) -> list[str]:
        return self._store.all_texts()

    def check_not_empty(self) -> None:
        """Refuse to search, mine or save an index that holds nothing (one message for every caller)."""
        if len(self) == 0:
            raise ValueError("the index is empty: add texts first (DuplicateIndex.build or index.add)")

    _check_not_empty = check_not_empty  # the name of earlier releases

    def close(self) -> None:
        """Release a database collection (an embedded Qdrant folder is locked by the process that opened it)."""
        self._store.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


__all__ = ["IndexContents"]
