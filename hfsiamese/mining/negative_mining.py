"""
Hard negatives mined from a pair data set with any bi-encoder, searched exactly or with FAISS (`DuplicateIndex`).

Unlike the training recipe's miner (`hfsiamese.bi_encoder.mining`, the model being trained, between epochs), this is
a data-preparation step before training: a (usually stronger) model finds each duplicate pair's nearest
non-duplicates once, an optional cross-encoder drops the candidates it calls duplicates (false negatives), and the
result is written in the layout a loss reads (`mined_formats`), optionally scored by a teacher (`teacher_scoring`).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import datasets
import numpy as np
import pyarrow as pa
import torch

from hfsiamese.data.negative_filters import NegativeFilters, allowed_candidates
from hfsiamese.data.question_identity import column_numpy, identity_name, question_groups, question_keys, question_texts
from hfsiamese.mining.held_out import HeldOutQuestions, held_out_mask
from hfsiamese.mining.mined_formats import MinedNegatives
from hfsiamese.mining.mining_shards import MiningFolder, codes_fingerprint
from hfsiamese.search.backends import store_and_runtime
from hfsiamese.search.reranking import (
    NO_CROSS_ENCODER_THRESHOLD,
    cross_encoder_scores,
    cross_encoder_threshold,
    resolve_cross_encoder,
)
from hfsiamese.search.shards.manifest import corpus_fingerprint

if TYPE_CHECKING:
    from hfsiamese.models.siamese.modeling_siamese import SiameseModel
    from hfsiamese.search.duplicate_index import DuplicateIndex

__all__ = ["MINING_BACKENDS", "MinedNegatives", "mine_negatives", "pairs_with_labels"]

MINING_BACKENDS = ("exact", "faiss")


def pairs_with_labels(pairs: datasets.Dataset) -> datasets.Dataset:
    """`pairs` with `question1`, `question2` and `label` (an `is_duplicate` column is read as the label)."""
    if "label" not in pairs.column_names and "is_duplicate" in pairs.column_names:
        pairs = pairs.rename_column("is_duplicate", "label")
    missing = [name for name in ("question1", "question2", "label") if name not in pairs.column_names]
    if missing:
        raise ValueError(f"the pairs lack {missing} (columns: {pairs.column_names})")
    return pairs


def mine_negatives(
    pairs: datasets.Dataset,
    model: SiameseModel | str,
    tokenizer: Any | None = None,
    *,
    filters: NegativeFilters | None = None,
    held_out: HeldOutQuestions | None = None,
    cross_encoder: Any | None = None,
    cross_encoder_threshold: float | None = None,
    cross_encoder_dtype: torch.dtype | None = None,
    store: str | None = None,
    index_options: dict[str, Any] | None = None,
    batch_size: int = 64,
    query_chunk_size: int = 1024,
    shards_dir: str | os.PathLike | None = None,
    shard_size: int = 10_000,
    show_progress_bar: bool = False,
    backend: str | None = None,
) -> MinedNegatives:
    """
    Hard negatives for each duplicate pair of `pairs`: its question1 (the query) against all questions of `pairs`.

    The questions (identified as everywhere in hfsiamese: ids, else folded text) are embedded once with `model` and
    indexed (`DuplicateIndex`, `store` "exact" (default) or "faiss"; `index_options` are its other options;
    `backend=` for the store is deprecated, as on `DuplicateIndex`); each query's
    nearest questions are searched in chunks of `query_chunk_size` queries, so memory is `query_chunk_size` x
    (`filters.max_rank` + the largest duplicate group) candidates, never queries x corpus. A candidate is never of
    the query's duplicate group (the transitive closure of the label-1 pairs, `hfsiamese.data.groups`) and never a
    `held_out` question (a pair holding a held-out question gives no query either); `filters` say which of the rest
    qualify (`NegativeFilters`: rank window, margins, ceiling, how many).

    With `cross_encoder` (a `CrossEncoder` or its folder), every candidate that passes the filters is scored by it
    and dropped where it scores at least `cross_encoder_threshold` (default: its calibrated `config.threshold`): the
    cross-encoder calls it a duplicate. Its scores are kept (`MinedNegatives.cross_encoder_scores`).
    `cross_encoder_dtype` (e.g. `torch.bfloat16`) runs it in that precision (autocast; float32 when None).

    With `shards_dir`, the run is resumable (`mining_shards`): the questions are embedded in shards of `shard_size`
    and each chunk's result is written there as it is found, so a run stopped anywhere and started again with the
    same arguments skips the work it finished and returns what an unstopped run returns; a folder of another run is
    refused before any work. The folder is left in place (`MiningFolder(shards_dir).remove()`).
    """
    filters = filters or NegativeFilters()
    named, runtime = store_and_runtime(store, backend)
    if runtime is not None:
        raise ValueError(f"mining takes a store (store=), one of {MINING_BACKENDS}, not the model runtime {runtime!r}")
    backend = named or "exact"  # the store; kept as "backend" in a shards folder's settings (folders resume alike)
    if backend not in MINING_BACKENDS:
        raise ValueError(f"store must be one of {MINING_BACKENDS}, got {backend!r}")
    if isinstance(query_chunk_size, bool) or not isinstance(query_chunk_size, int) or query_chunk_size < 1:
        raise ValueError(f"query_chunk_size must be a positive integer, got {query_chunk_size!r}")
    if isinstance(shard_size, bool) or not isinstance(shard_size, int) or shard_size < 1:
        raise ValueError(f"shard_size must be a positive integer, got {shard_size!r}")
    reranker, threshold = _checked_cross_encoder(cross_encoder, cross_encoder_threshold)
    if cross_encoder_dtype is not None and reranker is None:
        raise ValueError("cross_encoder_dtype applies only with a cross_encoder")
    pairs = pairs_with_labels(pairs)
    codes1, codes2, group_of, first = question_groups(pairs)
    texts = question_texts(pairs, first).to_pylist()
    held = held_out_mask(held_out, texts, _question_ids(pairs, first))
    queries, positives = _queries(pairs, codes1, codes2, held)
    corpus_codes = np.flatnonzero(~held)
    search_options = {"batch_size": batch_size, "dtype": cross_encoder_dtype}
    folder, settings = None, {}
    if shards_dir is not None:
        folder = MiningFolder(shards_dir)
        settings = _run_settings(texts, queries, positives, held, filters, backend, index_options, query_chunk_size)
        settings["cross_encoder"] = _cross_encoder_record(reranker, threshold, search_options)
        folder.check_settings(settings)  # before any encoding
    index = _build_index(
        texts, corpus_codes, model, tokenizer, backend, index_options, batch_size, show_progress_bar,
        folder.embeddings_dir if folder is not None else None, shard_size,
    )  # fmt: skip
    if folder is not None:
        folder.start_search(settings)
    search = _ChunkSearch(
        index, corpus_codes, group_of, len(texts), filters, reranker, threshold, batch_size, cross_encoder_dtype
    )
    parts = _searched_chunks(search, texts, queries, positives, query_chunk_size, folder, show_progress_bar)
    negative_codes, positive_scores, negative_scores = (np.concatenate([part[i] for part in parts]) for i in range(3))
    rescored = np.concatenate([part[3] for part in parts]) if reranker is not None else None
    return MinedNegatives(
        texts, queries, positives, positive_scores, negative_codes, negative_scores, rescored, int(held.sum())
    )


def _checked_cross_encoder(cross_encoder: Any | None, threshold: float | None) -> tuple[Any | None, float | None]:
    """The reranker and its decision threshold, checked before any encoding."""
    if cross_encoder is None:
        if threshold is not None:
            raise ValueError("cross_encoder_threshold applies only with a cross_encoder")
        return None, None
    reranker = resolve_cross_encoder(cross_encoder)
    decision = cross_encoder_threshold(reranker, threshold)
    if decision is None:
        raise ValueError(NO_CROSS_ENCODER_THRESHOLD.replace("threshold=", "cross_encoder_threshold="))
    return reranker, decision


def _question_ids(pairs: datasets.Dataset, first: np.ndarray) -> list[str] | None:
    """Each question's id (a string), where the pairs carry ids."""
    if identity_name(pairs) != "question ids":
        return None
    key1, key2 = question_keys(pairs)
    return pa.chunked_array(key1.chunks + key2.chunks, type=pa.string()).take(pa.array(first)).to_pylist()


def _queries(
    pairs: datasets.Dataset, codes1: np.ndarray, codes2: np.ndarray, held: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(query, positive) codes of the duplicate pairs: neither question held out, not a question with itself."""
    duplicate = column_numpy(pairs, "label") == 1
    keep = duplicate & ~held[codes1] & ~held[codes2] & (codes1 != codes2)
    if not keep.any():
        why = " without a held-out question" if (duplicate & (codes1 != codes2)).any() else ""
        raise ValueError(f"the pairs hold no duplicate pair (label 1){why} to mine negatives for")
    return codes1[keep], codes2[keep]


def _build_index(
    texts: list[str],
    corpus_codes: np.ndarray,
    model: Any,
    tokenizer: Any,
    backend: str,
    index_options: dict[str, Any] | None,
    batch_size: int,
    show_progress_bar: bool,
    shards_dir: Path | None = None,
    shard_size: int = 10_000,
) -> DuplicateIndex:
    """Every question that may be a negative (none held out), embedded once (in resumable shards in `shards_dir`,
    where given); ids are the question codes."""
    from hfsiamese.search.duplicate_index import DuplicateIndex

    options: dict[str, Any] = {"batch_size": batch_size, **(index_options or {})}
    if shards_dir is not None:
        options.update(shards_dir=shards_dir, shard_size=shard_size)
    corpus = [texts[code] for code in corpus_codes]
    return DuplicateIndex.build(
        corpus, model, tokenizer, ids=corpus_codes.tolist(), store=backend,
        show_progress_bar=show_progress_bar, **options,
    )  # fmt: skip


def _run_settings(
    texts: list[str],
    queries: np.ndarray,
    positives: np.ndarray,
    held: np.ndarray,
    filters: NegativeFilters,
    backend: str,
    index_options: dict[str, Any] | None,
    query_chunk_size: int,
) -> dict[str, Any]:
    """What a resumed run must share with the run whose chunks it reuses (the model is the embeddings folder's)."""
    return {
        "questions_sha256": corpus_fingerprint(texts),
        "queries_sha256": codes_fingerprint(queries, positives, held),
        "filters": dataclasses.asdict(filters),
        "backend": backend,
        "index_options": {key: repr(value) for key, value in sorted((index_options or {}).items())},
        "query_chunk_size": query_chunk_size,
    }


def _cross_encoder_record(reranker: Any | None, threshold: float | None, options: dict[str, Any]) -> Any:
    """The cross-encoder as the manifest records it: its threshold, precision and scores of probe pairs."""
    if reranker is None:
        return None
    from hfsiamese.mining.teacher_scoring import PROBE_PAIRS

    dtype = options["dtype"]
    scores = cross_encoder_scores(
        reranker, [a for a, _ in PROBE_PAIRS], [b for _, b in PROBE_PAIRS], batch_size=options["batch_size"],
        **({} if dtype is None else {"dtype": dtype}),
    )  # fmt: skip
    return {
        "threshold": float(threshold) if threshold is not None else None,
        "dtype": None if dtype is None else str(dtype).removeprefix("torch."),
        "probe_scores": [float(score) for score in scores],
    }


def _searched_chunks(
    search: _ChunkSearch,
    texts: list[str],
    queries: np.ndarray,
    positives: np.ndarray,
    query_chunk_size: int,
    folder: MiningFolder | None,
    show_progress_bar: bool,
) -> list[tuple[Any, ...]]:
    """Each chunk of `query_chunk_size` queries searched, or read from `folder` where a run finished it already."""
    starts = range(0, len(queries), query_chunk_size)
    num_negatives, rescored = search.filters.num_negatives, search.reranker is not None
    finished = 0 if folder is None else folder.count_finished(len(starts))
    progress = _progress(len(starts), finished, show_progress_bar)
    parts = []
    try:
        for chunk, start in enumerate(starts):
            stop = min(start + query_chunk_size, len(queries))
            if folder is not None and folder.finished(chunk):
                parts.append(folder.read_chunk(chunk, stop - start, num_negatives, rescored))
                continue
            part = search.chunk(texts, queries[start:stop], positives[start:stop])
            if folder is not None:
                folder.write_chunk(chunk, part)
            parts.append(part)
            if progress is not None:
                progress.update(1)
    finally:
        if progress is not None:
            progress.close()
    return parts


class _ChunkSearch:
    """One chunk of queries: searched, filtered, optionally rescored, packed into `num_negatives` columns."""

    def __init__(
        self,
        index: DuplicateIndex,
        corpus_codes: np.ndarray,
        group_of: np.ndarray,
        num_questions: int,
        filters: NegativeFilters,
        reranker: Any | None,
        threshold: float | None,
        batch_size: int,
        dtype: torch.dtype | None = None,
    ) -> None:
        self.index, self.filters, self.reranker, self.threshold = index, filters, reranker, threshold
        self.score_options: dict[str, Any] = {"batch_size": batch_size, **({} if dtype is None else {"dtype": dtype})}
        self.corpus_codes = torch.from_numpy(corpus_codes)
        self.group_of = torch.from_numpy(group_of)
        self.embeddings = index.embeddings
        self.row_of = np.full(num_questions, -1, dtype=np.int64)  # question code -> row of the index
        self.row_of[corpus_codes] = np.arange(len(corpus_codes))
        self.group_sizes = np.bincount(group_of[corpus_codes], minlength=int(group_of.max()) + 1)

    def chunk(self, texts: list[str], queries: np.ndarray, positives: np.ndarray) -> tuple[Any, ...]:
        """(negative codes, positive scores, negative scores, cross-encoder scores or None) of these queries."""
        query_vectors = self.embeddings[self.row_of[queries]]
        positive_scores = (query_vectors * self.embeddings[self.row_of[positives]]).sum(dim=1)
        # Enough candidates that `max_rank` remain once the query's own group is dropped.
        fetch = min(len(self.index), self.filters.max_rank + int(self.group_sizes[self.group_of[queries]].max()))
        scores, rows = self.index.search_embeddings(query_vectors, fetch)
        found = rows >= 0
        codes = torch.where(found, self.corpus_codes[rows.clamp(min=0)], -1)
        own_group = self.group_of[codes.clamp(min=0)] == self.group_of[torch.from_numpy(queries)].unsqueeze(1)
        allowed = allowed_candidates(scores, found & ~own_group, positive_scores, self.filters)
        rescored = None
        if self.reranker is not None:
            allowed, rescored = self._rescored(texts, queries, positives, codes, allowed)
        return self._packed(codes, scores, positive_scores, allowed, rescored)

    def _rescored(
        self, texts: list[str], queries: np.ndarray, positives: np.ndarray, codes: torch.Tensor, allowed: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`allowed` less what the cross-encoder calls duplicates; its scores (positive first, then candidates)."""
        row, column = allowed.nonzero(as_tuple=True)
        candidates = codes[row, column].numpy()
        texts_a = [texts[code] for code in queries[row.numpy()]] + [texts[code] for code in queries]
        texts_b = [texts[code] for code in candidates] + [texts[code] for code in positives]
        scored = cross_encoder_scores(self.reranker, texts_a, texts_b, **self.score_options)
        candidate_scores = torch.full(codes.shape, float("nan"))
        candidate_scores[row, column] = scored[: len(row)]
        allowed = allowed.clone()
        allowed[row, column] = scored[: len(row)] < self.threshold
        return allowed, torch.cat([scored[len(row) :].unsqueeze(1), candidate_scores], dim=1)

    def _packed(
        self,
        codes: torch.Tensor,
        scores: torch.Tensor,
        positive_scores: torch.Tensor,
        allowed: torch.Tensor,
        rescored: torch.Tensor | None,
    ) -> tuple[Any, ...]:
        n = self.filters.num_negatives
        slot = allowed.cumsum(dim=1) - 1
        chosen = allowed & (slot < n)
        row, column = chosen.nonzero(as_tuple=True)
        negative_codes = torch.full((len(codes), n), -1, dtype=torch.long)
        negative_scores = torch.full((len(codes), n), float("nan"))
        negative_codes[row, slot[row, column]] = codes[row, column]
        negative_scores[row, slot[row, column]] = scores[row, column].float()
        packed = (negative_codes.numpy(), positive_scores.float().numpy(), negative_scores.numpy())
        if rescored is None:
            return (*packed, None)
        cross = torch.full((len(codes), 1 + n), float("nan"))
        cross[:, 0] = rescored[:, 0]
        cross[row, 1 + slot[row, column]] = rescored[row, 1 + column]
        return (*packed, cross.numpy())


def _progress(total: int, done: int, show: bool) -> Any:
    if not show:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=done, desc="Mining negatives", unit="chunk")
