"""
Building the FAISS index of a `FaissStore`: trained on a seeded sample, filled chunk by chunk, and measured
against the store's recall target on a sample of its own corpus (`recall_tuning`): `"auto"` settings tuned to
the target (the cheapest of `auto_ladder` that reaches it), settings asked for built as asked and warned about
below it; measured again once the corpus has grown `REMEASURE_GROWTH` times.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
import torch

from hfsiamese.search.stores.ann_index import AnnSpec, FaissAnnIndex, training_sample
from hfsiamese.search.stores.embedding_table import EmbeddingTable
from hfsiamese.search.stores.recall_tuning import (
    RECALL_CONFIDENCE,
    RECALL_K,
    REMEASURE_GROWTH,
    Candidate,
    RecallProbe,
    RecallReport,
    auto_ladder,
    between_queries,
    between_rows,
    check_budget,
    describe,
    latencies_ms,
    sample_rows,
    tunable,
)


class TunableStore(Protocol):
    """What building and measuring a FAISS index needs of its store (`stores/faiss_store.py`'s `FaissStore`
    fulfils it): declared here so that the store imports its tuning, never the other way round."""

    ann: FaissAnnIndex | None
    recall: RecallReport | None
    recall_target: float | None
    spec: AnnSpec
    embedding_dim: int
    table: EmbeddingTable

    def __len__(self) -> int: ...

    def ann_topk(
        self, ann: FaissAnnIndex, queries: np.ndarray, k: int, *, own_row: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    def exact_topk(
        self, queries: torch.Tensor, k: int, exclude_indices: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]: ...


logger = logging.getLogger("hfsiamese.search.duplicate_index")  # the logger these lines have always come from


def new_ann(store: TunableStore, spec: AnnSpec) -> FaissAnnIndex:
    """A FAISS index of these settings over every row: trained on a seeded sample, then filled chunk by chunk."""
    ann = FaissAnnIndex(spec, store.embedding_dim)
    sample = training_sample(len(store), spec)
    if sample is not None:
        ann.train(store.table.gather(sample, pread=True))
    for _, chunk in store.table.chunks():
        ann.add(chunk.numpy())
    return ann


def build_ann(store: TunableStore) -> tuple[FaissAnnIndex, RecallReport | None]:
    """The FAISS index and what it was measured to find: `"auto"` settings tuned to the recall target, settings
    asked for built as asked (and warned about below the target); nothing measured without a target."""
    asked, target, num_texts = store.spec, store.recall_target, len(store)
    if target is None or not tunable(asked):
        check_budget(asked, num_texts, store.embedding_dim)
    if target is None:
        ann = new_ann(store, asked.resolved(num_texts, store.embedding_dim))
        logger.info(
            f"FAISS index over {num_texts} texts: {describe(ann.spec)} (recall not measured: recall_target=None)"
        )
        return ann, None
    if tunable(asked):
        ann, report = _tuned_ann(store, asked, target)
    else:
        ann = new_ann(store, asked.resolved(num_texts, store.embedding_dim))
        report = measured(store, ann, recall_probe(store), tuned=False, reason="the settings asked for")
    logger.info(f"FAISS index over {num_texts} texts: {report.summary()}")
    if not report.meets_target:
        advice = (
            f"raise max_memory_bytes (now {asked.max_memory_bytes}) or lower recall_target" if report.tuned else
            'leave quantization and structure "auto" to have them tuned to the target, ask for wider settings '
            "(more nprobe, a larger rescore_multiplier, int8 codes), or lower recall_target"
        )  # fmt: skip
        warnings.warn(
            f"the FAISS index ({report.settings}) finds {report.recall:.3f} of the exact top {report.k} (a 95% lower "
            f"bound; {report.recall_sample:.3f} on the sample of "
            f"{report.num_queries} queries drawn from its corpus), below the recall target {target}: {advice}",
            UserWarning,
            stacklevel=5,
        )
    return ann, report


def _tuned_ann(store: TunableStore, asked: AnnSpec, target: float) -> tuple[FaissAnnIndex, RecallReport]:
    """The first settings of `auto_ladder` (cheapest first) that reach `target` on a sample of the corpus; each
    built index is tried at its search-time settings (lists probed, HNSW candidates, rescoring depth) before the
    next is built. Where `max_memory_bytes` leaves exact search out and nothing reaches the target, the setting
    that came closest is kept (below the target: `build_ann` warns)."""
    probe: RecallProbe | None = None
    trials: list[dict[str, Any]] = []
    best: tuple[tuple[float, Figures], Candidate, AnnSpec] | None = None
    ann: FaissAnnIndex | None = None
    ladder = auto_ladder(asked, len(store), store.embedding_dim)
    for position, candidate in enumerate(ladder):
        ann = None  # the last one's memory back before the next is built
        binary_ivf = candidate.build.quantization == "binary" and candidate.build.structure == "ivf"
        if binary_ivf and position < len(ladder) - 1:  # the last one left is built whatever the screen says
            probe = probe or recall_probe(store)
            screened = probe is not None and _binary_screen(store, candidate, probe, target)
            if screened:
                trials.append(screened)
                continue
        ann = new_ann(store, candidate.build)
        if candidate.build.is_exact:
            if trials:
                reason = (
                    f"auto: none of {len(trials)} cheaper settings reached {target} (best {best_recall(trials):.3f})"
                )
            else:
                reason = f"auto: exact float32 search up to {asked.exact_up_to} texts"
            return ann, measured(store, ann, None, tuned=True, reason=reason, trials=trials)
        probe = probe or recall_probe(store)
        if probe is None:  # a single text: nothing to measure, nothing to tune
            return ann, measured(store, ann, None, tuned=True, reason="auto: the size-based choice")
        for search in candidate.searches:
            ann.set_search_settings(search.nprobe, search.rescore_multiplier, search.ef_search)
            figures = _probe_recall(store, ann, probe)
            trials.append(_trial(search, figures))
            recall = figures.bound
            if best is None or recall > best[0][0]:
                best = ((recall, figures), candidate, search)
            if recall >= target:
                reason = (
                    f"auto: the first setting tried reached {target}" if len(trials) == 1
                    else f"auto: the cheapest of {len(trials)} settings tried to reach {target}"
                )  # fmt: skip
                return ann, measured(store, ann, probe, tuned=True, reason=reason, trials=trials, figures=figures)
    assert best is not None and probe is not None and ann is not None  # the ladder is never empty
    (_, figures), candidate, search = best
    if ann.spec.quantization != candidate.build.quantization or ann.spec.structure != candidate.build.structure:
        ann = None
        ann = new_ann(store, candidate.build)  # the closest was an earlier index: built again
    ann.set_search_settings(search.nprobe, search.rescore_multiplier, search.ef_search)
    reason = (
        f"auto: none of {len(trials)} settings within max_memory_bytes={asked.max_memory_bytes} reached {target}; "
        "the closest kept"
    )
    return ann, measured(store, ann, probe, tuned=True, reason=reason, trials=trials, figures=figures)


def _binary_screen(
    store: TunableStore, candidate: Candidate, probe: RecallProbe, target: float
) -> dict[str, Any] | None:
    """
    The trial that rules binary IVF out before it is built, or None. Binary codes searched exhaustively at the
    deepest rescoring the candidate would try find at least what its IVF lists can (the lists only hide codes), and
    cost no training: a few seconds over 1M rows, against half a minute for clustering them into lists. Below the
    target, the lists are never built (the LSTM recipe's 256 dimensions over 1.2M near-copy questions: every
    binary IVF setting fell short, and building it doubled the build time).
    """
    deepest = max(search.rescore_multiplier for search in candidate.searches)
    flat = replace(candidate.build, structure="flat", nlist=None, rescore_multiplier=deepest)
    figures = _probe_recall(store, new_ann(store, flat), probe)
    if figures.bound >= target:
        return None
    return _trial(flat, figures) | {"screened_out": describe(candidate.build)}


def best_recall(trials: Sequence[dict[str, Any]]) -> float:
    return max(trial["recall"] for trial in trials)


def recall_probe(store: TunableStore, k: int = RECALL_K) -> RecallProbe | None:
    """Seeded sample rows of the corpus and as many between-row queries (`recall_tuning`), with their exact top k
    (own rows left out); None under two texts."""
    k = min(k, len(store) - 1)
    if k < 1:
        return None
    own = sample_rows(len(store))
    first, second = between_rows(len(store))
    between = between_queries(store.table.gather(first, pread=True), store.table.gather(second, pread=True))
    queries = np.concatenate([store.table.gather(own, pread=True), between])
    own_rows = np.concatenate([own, np.full(len(between), -1, dtype=np.int64)])
    _, exact_rows = store.exact_topk(torch.from_numpy(queries), k, exclude_indices=torch.from_numpy(own_rows))
    return RecallProbe(own_rows, queries, exact_rows.numpy(), store.table.gather)


@dataclass(frozen=True)
class Figures:
    """What one search of a probe found: recall by kind of query, and the lower confidence bound of the lower kind."""

    by_kind: dict[str, float]
    bound: float

    @property
    def sample(self) -> float:
        return min(self.by_kind.values())


def _probe_recall(store: TunableStore, ann: FaissAnnIndex, probe: RecallProbe) -> Figures:
    """Recall of `ann` on `probe`, by kind of query (`RecallProbe.recall_by_kind`), and its bound (`recall_bound`)."""
    _, rows = store.ann_topk(ann, probe.queries, probe.k, own_row=True)
    found = rows.numpy()
    return Figures(probe.recall_by_kind(found), probe.recall_bound(found))


def _trial(search: AnnSpec, figures: Figures) -> dict[str, Any]:
    """One line of a tuning's trials: the settings, their recall (the bound of the lower kind), the sample's, each
    kind's."""
    return {
        "settings": describe(search),
        "recall": round(figures.bound, 4),
        "recall_sample": round(figures.sample, 4),
    } | {f"recall_{kind}": round(value, 4) for kind, value in figures.by_kind.items()}


def measured(
    store: TunableStore,
    ann: FaissAnnIndex,
    probe: RecallProbe | None,
    *,
    tuned: bool,
    reason: str,
    trials: Sequence[dict[str, Any]] = (),
    figures: Figures | None = None,
) -> RecallReport:
    """The report of `ann` on `probe` (its recall by kind of query measured unless given; latency timed query by
    query). Exact search, or a probe of None (under two texts), is not measured: it finds the exact top k."""
    common = {"num_texts": len(store), "target": store.recall_target, "settings": describe(ann.spec), "tuned": tuned,
              "reason": reason, "trials": tuple(trials)}  # fmt: skip
    if probe is None or ann.spec.is_exact:
        return RecallReport(recall=1.0, k=RECALL_K, num_queries=0, p50_ms=None, p99_ms=None, **common)
    if figures is None:
        figures = _probe_recall(store, ann, probe)
    p50, p99, timed = latencies_ms(lambda query: store.ann_topk(ann, query, probe.k), probe.queries)
    by_kind = {f"recall_{kind}": round(value, 4) for kind, value in figures.by_kind.items()}
    return RecallReport(
        recall=round(figures.bound, 4), k=probe.k, num_queries=len(probe.own_rows), p50_ms=p50,
        p99_ms=p99, timed_queries=timed, recall_sample=round(figures.sample, 4), confidence=RECALL_CONFIDENCE,
        **by_kind, **common,
    )  # fmt: skip


def remeasure_after_growth(store: TunableStore) -> None:
    """Measure the FAISS index again once it holds `REMEASURE_GROWTH` times the rows it was measured at (its IVF
    lists and int8 ranges were fitted on the smaller corpus); below the target, warn and suggest `rebuild_ann`."""
    ann, report, target = store.ann, store.recall, store.recall_target
    if ann is None or report is None or target is None or ann.spec.is_exact:
        return
    if len(store) < REMEASURE_GROWTH * max(report.num_texts, 1):
        return
    grown = f"re-measured after the index grew from {report.num_texts} to {len(store)} texts"
    store.recall = now = measured(
        store, ann, recall_probe(store), tuned=report.tuned, reason=grown, trials=report.trials
    )
    logger.info(f"FAISS index over {len(store)} texts: {now.summary()}")
    if not now.meets_target:
        retune = " and re-tune its settings" if tunable(store.spec) else ""
        warnings.warn(
            f"the FAISS index ({now.settings}) now finds {now.recall:.3f} of the exact top {now.k}, below the recall "
            f"target {target}, after growing from {report.num_texts} to {len(store)} texts (its lists and code ranges "
            f"were fitted on the smaller corpus): call index.rebuild_ann() to fit it on every row{retune}",
            UserWarning,
            stacklevel=5,
        )


__all__ = ["build_ann", "measured", "new_ann", "recall_probe", "remeasure_after_growth"]
