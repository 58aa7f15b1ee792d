"""The views a `DuplicateIndex` gives of its store (its rows, its size, its FAISS index and how well it was measured
to search), kept apart from what the index does (embed, search, mine, save) so that each file says one thing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import datasets
import numpy as np
import torch

from hfsiamese.search.ann_index import AnnSpec, FaissAnnIndex
from hfsiamese.search.input_checks import id_type
from hfsiamese.search.recall_tuning import RecallReport
from hfsiamese.search.stores.base import DatabaseStore
from hfsiamese.search.stores.faiss_store import FaissStore
from hfsiamese.search.stores.in_memory import InMemoryStore


class IndexViews:
    """The read side of `DuplicateIndex` over its `_store`, and its FAISS index's measurement and rebuild."""

    _store: Any
    _spec: AnnSpec
    _recall_target: float | None
    backend: str
    embedding_dim: int | None
    model_name_or_path: str | None
    threshold: float | None
    database: str
    collection: str
    # What `DuplicateIndex` sets and defines, declared here so that the modules doing its work (index_building,
    # index_rows, index_saving, index_searching, duplicate_finding) take this base and never import the index.
    model: Any
    tokenizer: Any
    calibrator: Any
    cross_encoder: Any
    batch_size: int
    max_length: int | None
    truncate_dim: int | None
    query_chunk_size: int
    corpus_chunk_size: int
    _id_type: Any
    _model_fingerprint: Any
    _hybrid: Any  # lexical.hybrid_settings.HybridSpec, or None: dense search only
    _lexical: Any  # lexical.hybrid_search.LexicalSide, or None
    _groups: Any  # the `DuplicateGroups` (`hfsiamese.search.groups.index_groups`)
    _encode: Callable[..., torch.Tensor]
    add_embeddings: Callable[..., Any]

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
        URL, is turned into. Known once rows were added or loaded, else read from the first stored row (a database
        collection opened by the constructor)."""
        if self._id_type is None and len(self):
            first = next(iter(self._store.iter_rows(1, with_vectors=False)), None)
            if first is not None and first[0]:
                self._id_type = id_type(list(first[0][:1]))
        return self._id_type

    def __repr__(self) -> str:
        database = not isinstance(self._store, InMemoryStore)
        where = f", database={self.database!r}, collection={self.collection!r}" if database else ""
        faiss = f", ann={self._ann.spec if self._ann is not None else self.ann_spec}" if self.backend == "faiss" else ""
        hybrid = f", hybrid={self._hybrid.method!r}" if getattr(self, "_hybrid", None) is not None else ""
        return (
            f"{type(self).__name__}(num_texts={len(self)}, embedding_dim={self.embedding_dim}, "
            f"backend={self.backend!r}{where}{faiss}{hybrid}, model={self.model_name_or_path!r}, "
            f"threshold={self.threshold})"
        )

    @property
    def database_store(self) -> DatabaseStore | None:
        """The store when the index lives in a database (LanceDB, Qdrant), None for an in-process one: what the
        index's duplicate groups are written to beside its rows."""
        return self._store if isinstance(self._store, DatabaseStore) else None

    @property
    def embeddings(self) -> torch.Tensor:
        """The `(num_texts, dim)` float32 embeddings, in row order (a copy in memory if they are memory-mapped)."""
        return self._store.all_embeddings()

    @property
    def memory_mapped(self) -> bool:
        """Whether the embeddings are read from the saved folder's file rather than held in memory."""
        return isinstance(self._store, InMemoryStore) and self._store.table.memory_mapped

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

    # --- the FAISS index (backend="faiss") --------------------------------------------------------

    @property
    def _faiss(self) -> FaissStore | None:
        return self._store if isinstance(self._store, FaissStore) else None

    @property
    def ann_spec(self) -> AnnSpec:
        """The FAISS settings asked for (what a rebuild starts from)."""
        return self._faiss.spec if self._faiss is not None else self._spec

    @property
    def recall_target(self) -> float | None:
        return self._faiss.recall_target if self._faiss is not None else self._recall_target

    @property
    def _ann(self) -> FaissAnnIndex | None:
        return self._faiss.ann if self._faiss is not None else None

    def _ensure_ann(self) -> FaissAnnIndex:
        return self._faiss.ensure_ann()

    @property
    def recall_report(self) -> RecallReport | None:
        """What the FAISS index was measured to find (`recall_tuning.RecallReport`: recall@10 against exact search,
        per-query latency, the settings and why); saved with the index. None before the FAISS index is built (at
        `build`, the first search or `save`), without `backend="faiss"`, with `recall_target=None`, and for an index
        saved by a release that did not measure (`measure_recall` measures it)."""
        return self._faiss.recall if self._faiss is not None else None

    def rebuild_ann(self) -> RecallReport | None:
        """
        Build the FAISS index anew over every row (IVF lists and int8 ranges fitted on the corpus as it is now,
        `"auto"` settings tuned again to `recall_target`) and return its measurement. What the warning after a
        large `add` suggests; the rows and ids are unchanged.
        """
        return self._checked_faiss().rebuild_ann()

    def measure_recall(self) -> RecallReport:
        """Measure the FAISS index as it is (nothing rebuilt or re-tuned) against `recall_target`, and keep the
        figures (saved with the index): e.g. for an index saved by a release that did not measure."""
        return self._checked_faiss().measure_recall()

    def _checked_faiss(self) -> FaissStore:
        if self.backend != "faiss":
            raise ValueError(
                f'only a backend="faiss" index has a FAISS index to measure or rebuild, this one is {self.backend!r}'
            )
        self._check_not_empty()
        return self._faiss

    def _check_not_empty(self) -> None:
        if len(self) == 0:
            raise ValueError("the index is empty: add texts first (DuplicateIndex.build or index.add)")


__all__ = ["IndexViews"]
