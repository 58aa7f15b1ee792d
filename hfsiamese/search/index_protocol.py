"""
`SearchIndex`: a `DuplicateIndex` as the modules doing its work see it (building, rows, searching, mining, saving,
groups, the lexical side), so that they are typed against the index without importing it (it imports them). Public
members only, but for the two fields the saving code restores; the index fulfils it (mypy checks every call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import torch

    from hfsiamese.search.stores.base import DatabaseStore, VectorStore


class SearchIndex(Protocol):
    """What the index's helpers read and call: its settings, its store and lexical side, and its public methods."""

    model: Any
    tokenizer: Any
    calibrator: Any
    cross_encoder: Any
    threshold: float | None
    store_name: str
    database: str
    collection: str
    model_name_or_path: str | None
    embedding_dim: int | None
    batch_size: int
    max_length: int | None
    truncate_dim: int | None
    query_chunk_size: int
    corpus_chunk_size: int
    # restored by the saving code (`index_saving.load_index`), which belongs to the index
    _id_type: str | None
    _model_fingerprint: dict[str, Any] | None

    @property
    def store(self) -> VectorStore: ...

    @property
    def lexical(self) -> Any: ...  # a `lexical.hybrid_search.LexicalSide` or None (which types against this protocol)

    @property
    def id_type(self) -> str | None: ...

    @property
    def database_store(self) -> DatabaseStore | None: ...

    def __len__(self) -> int: ...

    def contains(self, ids: list[Any]) -> list[bool]: ...

    def rows_by_id(self, ids: list[Any]) -> tuple[list[str], np.ndarray]: ...

    def encode(self, texts: list[str], *, show_progress_bar: bool = False) -> torch.Tensor: ...

    def check_not_empty(self) -> None: ...

    def search_embeddings(
        self, query_embeddings: torch.Tensor, k: int = 10, *, store: Any = None
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    def add_embeddings(self, texts: Any, embeddings: Any, ids: Any = None, *, metadata: Any = None) -> None: ...


__all__ = ["SearchIndex"]
