"""
The `"faiss"` store of a `DuplicateIndex`: the rows of `InMemoryStore` (in memory or memory-mapped), searched
through a FAISS index (`ann_index.FaissAnnIndex`) that keeps only small codes in memory (int8, binary, IVF,
HNSW); a quantised index's candidates are rescored exactly against the full embeddings, so scores are always
exact cosines. The FAISS index is built on first need, tuned and measured against `recall_target`
(`faiss_tuning`); new rows are appended to it without a rebuild, a delete drops it (rebuilt at the next need).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from hfsiamese.search.stores import faiss_tuning
from hfsiamese.search.stores.ann_index import AnnSpec, FaissAnnIndex
from hfsiamese.search.stores.embedding_table import EmbeddingTable
from hfsiamese.search.stores.in_memory import InMemoryStore, NeighbourSearch
from hfsiamese.search.stores.index_files import write_index_folder
from hfsiamese.search.stores.prefix_search import AnnPrefixSearch, PrefixSearch
from hfsiamese.search.stores.recall_tuning import RecallReport


class FaissStore(InMemoryStore):
    """Rows searched through a FAISS index of the settings `spec` asks for (`"auto"` tuned to `recall_target`)."""

    def __init__(
        self,
        embedding_dim: int | None,
        spec: AnnSpec,
        recall_target: float | None,
        *,
        query_chunk_size: int = 1024,
        corpus_chunk_size: int = 65536,
    ) -> None:
        super().__init__(embedding_dim, query_chunk_size=query_chunk_size, corpus_chunk_size=corpus_chunk_size)
        self.spec = spec  # what was asked: a rebuild starts from it ("auto" is tuned again)
        self.recall_target = recall_target
        self.ann: FaissAnnIndex | None = None
        self.recall: RecallReport | None = None  # what `ann` was measured to find

    # --- rows ------------------------------------------------------------------------------------

    def adopt(self, ids: list[Any], texts: list[str], table: EmbeddingTable) -> None:
        super().adopt(ids, texts, table)
        self.ann, self.recall = None, None

    def _appended(self, chunk: torch.Tensor) -> None:
        """New rows go to the FAISS index too (no rebuild: FAISS appends in row order)."""
        if self.ann is not None:
            self.ann.add(chunk.numpy())

    def _added(self) -> None:
        """The index measured again once it has grown enough (`faiss_tuning.remeasure_after_growth`)."""
        faiss_tuning.remeasure_after_growth(self)

    def delete(self, ids: Sequence[int | str]) -> int:
        """Compact the rows and drop the FAISS index (rebuilt at the next search)."""
        removed = super().delete(ids)
        if removed:
            self.ann, self.recall = None, None
        return removed

    # --- search ----------------------------------------------------------------------------------

    def topk(self, queries: torch.Tensor, k: int, *, exact: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """Through the FAISS index (built on first need), or exactly with `exact`."""
        if exact:
            return self.exact_topk(queries, k)
        return self.ann_topk(self.ensure_ann(), queries.numpy(), k)

    def ann_topk(
        self, ann: FaissAnnIndex, queries: np.ndarray, k: int, *, own_row: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The top k through a FAISS index, quantised candidates rescored exactly. `own_row`: the queries are rows
        of the index, so one more is returned (and one more candidate rescored): the query's own row takes that
        place rather than a share of the rescoring."""
        n = min(k + own_row, len(self))
        if not ann.spec.quantized:
            scores, rows = ann.search(queries, n)
            return torch.from_numpy(scores), torch.from_numpy(rows)
        _, candidates = ann.search(queries, min(k * ann.spec.rescore_multiplier + own_row, len(self)))
        return self._rescore(queries, candidates, n)

    def _rescore(self, queries: np.ndarray, candidates: np.ndarray, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact cosines of each query's candidate rows (read from the full embeddings), best `k` first."""
        found = candidates >= 0
        vectors = self.table.gather(np.where(found, candidates, 0))
        scores = np.einsum("qd,qnd->qn", queries, vectors)
        scores[~found] = -np.inf
        order = np.argsort(-scores, axis=1, kind="stable")[:, : min(k, scores.shape[1])]
        best = np.take_along_axis(scores, order, axis=1)
        rows = np.where(np.isfinite(best), np.take_along_axis(candidates, order, axis=1), -1)
        return torch.from_numpy(best.astype(np.float32)), torch.from_numpy(rows.astype(np.int64))

    def prefix_search(self) -> PrefixSearch:
        """A search among the first rows (`prefix_search`): exact where the FAISS index is, else through an empty
        copy of it filled in row order."""
        ann = self.ensure_ann()
        if ann.spec.is_exact:
            return super().prefix_search()
        return AnnPrefixSearch(self.table, ann.empty_copy(), self.ann_topk)

    def neighbour_search(self) -> NeighbourSearch:
        """Each row's nearest other rows, through the FAISS index (its own row dropped from the answer)."""

        def neighbours(start: int, stop: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
            own = torch.arange(start, stop)
            queries = torch.from_numpy(self.table.gather(own.numpy()))
            scores, rows = self.topk(queries, min(k + 1, len(self)))
            scores = scores.masked_fill(rows == own[:, None], float("-inf"))
            scores, order = scores.sort(dim=1, descending=True, stable=True)
            rows = rows.gather(1, order)[:, :k]
            scores = scores[:, :k]
            return scores, rows.masked_fill(~torch.isfinite(scores), -1)

        return neighbours

    # --- the FAISS index -------------------------------------------------------------------------

    def finish_build(self) -> None:
        """Build (tune and measure) the FAISS index now, at the end of `DuplicateIndex.build`."""
        self.ensure_ann()

    def ensure_ann(self) -> FaissAnnIndex:
        """The FAISS index over every row, built (tuned and measured: `faiss_tuning.build_ann`) on first need."""
        if self.ann is None:
            self.ann, self.recall = faiss_tuning.build_ann(self)
        return self.ann

    def rebuild_ann(self) -> RecallReport | None:
        """A new FAISS index over every row, `"auto"` settings tuned again; its measurement."""
        self.ann, self.recall = None, None
        self.ensure_ann()
        return self.recall

    def measure_recall(self) -> RecallReport:
        """Measure the FAISS index as it is (nothing rebuilt or re-tuned) and keep the figures."""
        ann, previous = self.ensure_ann(), self.recall
        self.recall = faiss_tuning.measured(
            self,
            ann,
            faiss_tuning.recall_probe(self),
            tuned=previous is not None and previous.tuned,
            reason="measured on request",
            trials=() if previous is None else previous.trials,
        )
        return self.recall

    def take_saved(self, ann_file: Path, saved: AnnSpec, asked: AnnSpec | None, recall: RecallReport | None) -> None:
        """Use the FAISS index saved with the rows (`saved` settings; a rebuild starts from `asked`, else `saved`)."""
        self.spec = asked or saved
        self.ann = FaissAnnIndex.read(ann_file, saved, self.embedding_dim)
        self.recall = recall

    # --- lifecycle -------------------------------------------------------------------------------

    def save(self, directory: str | os.PathLike, config: dict[str, Any], *, overwrite: bool = False) -> None:
        """The rows as `InMemoryStore` saves them, and the FAISS index (so loading does not rebuild it) with its
        settings, what was asked ("auto" is tuned again by a rebuild after loading) and its measurement."""
        ann = self.ensure_ann()
        config = {**config, "ann": ann.spec.to_dict(), "ann_asked": self.spec.to_dict()}
        if self.recall is not None:
            config["recall"] = self.recall.to_dict()
        write_index_folder(Path(directory), self.table, self.corpus, config, overwrite=overwrite, ann=ann)


__all__ = ["FaissStore"]
