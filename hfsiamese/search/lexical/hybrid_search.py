"""
Keyword + dense ("hybrid") search over a `DuplicateIndex` kept in this process: each query's dense top list
(`search_embeddings`) and BM25 top list (`bm25_index`) are fused (`fusion`) into one ranking. Every candidate keeps
its exact cosine as `"score"`, so the duplicate decision (threshold, calibrated probability) is the dense model's, as
without fusion: fusion only changes which candidates are looked at and in which order. `find_duplicates` takes each
text's BM25 neighbours as candidate pairs beside its dense ones (`with_lexical_pairs`), decided by the cosine too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np
import torch

from hfsiamese.search.lexical.bm25_index import Bm25Index, remove_saved
from hfsiamese.search.lexical.fusion import reciprocal_rank_fusion, weighted_fusion
from hfsiamese.search.lexical.hybrid_settings import HybridSpec
from hfsiamese.search.paraphrase_pairs import NeighbourSearch, ParaphrasePairs, paraphrase_pairs

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex
    from hfsiamese.search.stores.in_memory import InMemoryStore

# Each side's list is this deep (at least), so that a candidate ranked low by one side and high by the other is seen.
MIN_DEPTH = 20
_NOT_BUILT = object()


class LexicalSide:
    """The keyword side of a `hybrid=` index, which the index hands its store: the BM25 index of an in-process store's
    texts, rebuilt when the store's rows changed (an `add` or `delete` replaces its corpus: the index remembers the
    corpus it was built from), or a LanceDB table's own full-text index; fused with the cosine by `spec`."""

    def __init__(self, spec: HybridSpec) -> None:
        self.spec = spec
        self._bm25: Bm25Index | None = None
        self._built_from: Any = _NOT_BUILT

    def index_of(self, store: InMemoryStore) -> Bm25Index:
        if self._bm25 is None or self._built_from is not store.corpus:
            self._bm25, self._built_from = Bm25Index.build(store.all_texts()), store.corpus
        return self._bm25

    def take_saved(self, store: InMemoryStore, directory: Path) -> None:
        """Take the BM25 index saved in an index folder, where it matches the rows loaded (else built at first need)."""
        saved = Bm25Index.load(directory, len(store))
        if saved is not None:
            self._bm25, self._built_from = saved, store.corpus

    def save(self, store: InMemoryStore, directory: Path) -> None:
        self.index_of(store).save(directory)

    def matches(
        self,
        index: SearchIndex,
        queries: list[str],
        query_embeddings: torch.Tensor,
        k: int,
        store_name: str | None,
        filter: dict[str, Any] | None,
    ) -> list[list[dict[str, Any]]]:
        """`search`'s candidates, fused: in process over numbered rows (`hybrid_matches`), else in the database
        (`database_hybrid_matches`)."""
        if index.store.numbered_rows:
            return hybrid_matches(index, queries, query_embeddings, k, store_name=store_name)
        return database_hybrid_matches(index, queries, query_embeddings, k, filter)


def save_lexical(index: SearchIndex, directory: Path) -> None:
    """Write the index's BM25 index into its saved folder, or remove an older one there (saved without hybrid, or a
    database's folder: its keyword index is in the database)."""
    if index.lexical is None or index.store.database:
        remove_saved(directory)
    else:
        index.lexical.save(cast("InMemoryStore", index.store), directory)


class HybridHits(NamedTuple):
    """`(num_queries, k)` tensors, best fused first: cosines, rows (-1 where fewer found), fused and BM25 scores (BM25:
    0 where the text shares no word with the query)."""

    scores: torch.Tensor
    rows: torch.Tensor
    fused_scores: torch.Tensor
    lexical_scores: torch.Tensor


def hybrid_search_embeddings(
    index: SearchIndex,
    queries: list[str],
    query_embeddings: torch.Tensor,
    k: int,
    *,
    store_name: str | None = None,
    exclude_rows: list[int] | None = None,
) -> HybridHits:
    """
    The fused top `k` of each query (its text for BM25, its L2-normalised embedding for the cosine): the dense and
    BM25 lists, each `max(2 * k, MIN_DEPTH)` deep, fused by the index's `hybrid` rule. `exclude_rows`: one row per
    query left out of both lists before they are fused (a corpus searched with its own texts, as
    `hfsiamese.evaluation.evaluate_retrieval` does).
    """
    if index.lexical is None:
        raise ValueError('hybrid search needs an index built with hybrid="rrf" or "weighted"')
    side, store = index.lexical, cast("InMemoryStore", index.store)  # numbered rows: an in-process store
    excluded = 0 if exclude_rows is None else 1
    depth = min(len(store), max(2 * k, MIN_DEPTH) + excluded)
    dense_scores, dense_rows = index.search_embeddings(query_embeddings, depth, store=store_name)
    lexical_scores, lexical_rows = side.index_of(store).topk(queries, depth)
    embedded = query_embeddings.detach().float().cpu().numpy()
    width = min(k, len(store) - excluded)
    out = HybridHits(*(torch.full((len(queries), width), fill) for fill in (float("-inf"), -1, 0.0, 0.0)))
    for q in range(len(queries)):
        left_out = -1 if exclude_rows is None else exclude_rows[q]
        dense = {r: s for r, s in zip(dense_rows[q].tolist(), dense_scores[q].tolist()) if r >= 0 and r != left_out}
        lexical = {int(r): float(s) for r, s in zip(lexical_rows[q], lexical_scores[q]) if r >= 0 and r != left_out}
        cosines = dict(dense)
        found_by_bm25_only = [r for r in lexical if r not in dense]
        if found_by_bm25_only:  # their exact cosine: the decision stays the dense model's
            vectors = store.table.gather(np.asarray(found_by_bm25_only, dtype=np.int64))
            cosines.update(zip(found_by_bm25_only, (vectors @ embedded[q]).tolist()))
        fused = fuse(side.spec, dense, lexical, cosines)
        for column, (row, score) in enumerate(fused[:width]):
            out.rows[q, column], out.fused_scores[q, column] = row, score
            out.scores[q, column], out.lexical_scores[q, column] = cosines[row], lexical.get(row, 0.0)
    return out


def fuse(
    spec: HybridSpec, dense: dict[Any, float], lexical: dict[Any, float], cosines: dict[Any, float]
) -> list[tuple[Any, float]]:
    """One query's candidates fused, best first: `dense` and `lexical` its two lists (cosine, BM25: best first),
    `cosines` the cosine of every candidate of either."""
    if spec.method == "rrf":
        return reciprocal_rank_fusion([list(dense), list(lexical)], spec.rrf_k)
    dense_range = (min(dense.values()), max(dense.values())) if dense else None
    return weighted_fusion(cosines, lexical, spec.lexical_weight, dense_range=dense_range)


def hybrid_matches(
    index: SearchIndex, queries: list[str], query_embeddings: torch.Tensor, k: int, *, store_name: str | None = None
) -> list[list[dict[str, Any]]]:
    """`search`'s candidates, fused: match dicts whose `"score"` is the cosine, with `"hybrid_score"` (the fused
    score, their order) and `"lexical_score"` (BM25)."""
    hits = hybrid_search_embeddings(index, queries, query_embeddings, k, store_name=store_name)
    results = cast("InMemoryStore", index.store).matches(hits.scores, hits.rows)
    for found, rows, fused, lexical in zip(results, hits.rows, hits.fused_scores, hits.lexical_scores):
        kept = rows >= 0
        for match, fused_score, lexical_score in zip(found, fused[kept].tolist(), lexical[kept].tolist()):
            match["hybrid_score"], match["lexical_score"] = fused_score, lexical_score
    return results


def database_hybrid_matches(
    index: SearchIndex, queries: list[str], query_embeddings: torch.Tensor, k: int, filter: dict[str, Any] | None
) -> list[list[dict[str, Any]]]:
    """`hybrid_matches` in a LanceDB table: its vector search and its own full-text index (`lancedb_full_text`), both
    under the same `filter`, fused by id."""
    from hfsiamese.search.lexical.lancedb_full_text import full_text_search

    store, spec = index.store, cast(LexicalSide, index.lexical).spec
    depth = max(2 * k, MIN_DEPTH)
    vectors = query_embeddings.detach().float().cpu().numpy()
    results = []
    for found, hits in zip(
        store.search(vectors, depth, filter=filter), full_text_search(store, queries, vectors, depth, filter)
    ):
        by_id = {m["id"]: m for m in found}
        dense = {m["id"]: m["score"] for m in found}
        lexical = {}
        for hit, bm25 in hits:
            by_id.setdefault(hit["id"], hit)
            lexical[hit["id"]] = bm25
        fused = fuse(spec, dense, lexical, {i: m["score"] for i, m in by_id.items()})
        results.append(
            [{**by_id[i], "hybrid_score": score, "lexical_score": lexical.get(i, 0.0)} for i, score in fused[:k]]
        )
    return results


def lexical_neighbours(store: InMemoryStore, bm25: Bm25Index) -> NeighbourSearch:
    """Each row's `k` best BM25 matches among the other rows, as `(cosines, rows)` (`paraphrase_pairs`' form; -1 and
    -inf where fewer share a word with it)."""

    def neighbours(start: int, stop: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        _, rows = bm25.topk(store.corpus[start:stop]["text"], k + 1)
        rows = np.where(rows == np.arange(start, stop)[:, None], -1, rows)  # not itself
        rows = np.take_along_axis(rows, np.argsort(rows < 0, axis=1, kind="stable"), axis=1)[:, :k]
        found = rows >= 0
        own = store.table.gather(np.arange(start, stop))
        scores = np.full(rows.shape, -np.inf, dtype=np.float32)
        partners = store.table.gather(rows[found])
        scores[found] = np.einsum("ij,ij->i", np.repeat(own, found.sum(axis=1), axis=0), partners)
        return torch.from_numpy(scores), torch.from_numpy(rows)

    return neighbours


def with_lexical_pairs(
    found: ParaphrasePairs,
    store: InMemoryStore,
    lexical: LexicalSide,
    threshold: float,
    k: int,
    *,
    query_chunk_size: int,
    show_progress_bar: bool,
) -> ParaphrasePairs:
    """The dense pairs `found`, with the pairs among each text's `k` BM25 neighbours whose cosine reaches
    `threshold`: each pair once, best cosine first (ties: row order), `capped` the dense search's."""
    extra = paraphrase_pairs(
        lexical_neighbours(store, lexical.index_of(store)),
        threshold,
        k,
        num_texts=len(store),
        query_chunk_size=query_chunk_size,
        show_progress_bar=show_progress_bar,
    )
    if not extra.scores:
        return found
    num_texts = len(store)
    first = torch.tensor(found.rows_a + extra.rows_a, dtype=torch.int64)
    second = torch.tensor(found.rows_b + extra.rows_b, dtype=torch.int64)
    score = torch.tensor(found.scores + extra.scores, dtype=torch.float32)
    keys, inverse = torch.unique(first * num_texts + second, return_inverse=True)
    best = torch.full((len(keys),), float("-inf")).scatter_reduce(0, inverse, score, reduce="amax")
    order = torch.sort(best, descending=True, stable=True).indices
    keys, best = keys[order], best[order]
    return ParaphrasePairs((keys // num_texts).tolist(), (keys % num_texts).tolist(), best.tolist(), found.capped)


__all__ = [
    "MIN_DEPTH",
    "HybridHits",
    "database_hybrid_matches",
    "fuse",
    "LexicalSide",
    "hybrid_matches",
    "hybrid_search_embeddings",
    "lexical_neighbours",
    "save_lexical",
    "with_lexical_pairs",
]
