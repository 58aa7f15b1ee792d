"""
A `DuplicateIndex`'s FAISS index, as the index shows it: the settings asked for, the recall target, what the built
index was measured to find, and rebuilding or measuring it. The FAISS store (`stores.faiss_store`) builds and tunes
it (`stores.ann_index`, `stores.recall_tuning`); an index with another store has none and says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hfsiamese.search.index_contents import IndexContents

if TYPE_CHECKING:
    from hfsiamese.search.stores.ann_index import AnnSpec, FaissAnnIndex
    from hfsiamese.search.stores.recall_tuning import RecallReport


class IndexFaiss(IndexContents):
    """The FAISS side of an index (`DuplicateIndex` sets `store_name`, and `_spec`, `_recall_target` until its store
    holds a FAISS index)."""

    store_name: str
    _spec: AnnSpec
    _recall_target: float | None

    @property
    def _faiss(self) -> Any:  # the FaissStore with store="faiss" (what `ann_index`, `recall_tuning` answer for)
        return self._store if self.store_name == "faiss" else None

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
        `build`, the first search or `save`), without `store="faiss"`, with `recall_target=None`, and for an index
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

    def _checked_faiss(self) -> Any:
        if self.store_name != "faiss":
            raise ValueError(
                f'only a store="faiss" index has a FAISS index to measure or rebuild, this one is {self.store_name!r}'
            )
        self.check_not_empty()
        return self._faiss


__all__ = ["IndexFaiss"]
