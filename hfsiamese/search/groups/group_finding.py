"""`DuplicateIndex.find_groups`: each question linked to its `k` nearest earlier duplicates at a calibrated threshold
(`earlier_links`, the rule an add follows too), the links' connected components split where they chain
(`clustering`), a canonical question per group (`canonical`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.sparse import csr_matrix

from hfsiamese.search.duplicate_finding import cosine_threshold, mining_store
from hfsiamese.search.groups.canonical import check_canonical_rule
from hfsiamese.search.groups.clustering import RowVectors, guarded_groups
from hfsiamese.search.groups.cross_encoder_guard import LinkJudge, call_budget
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups, GroupSettings, check_cross_encoder_options
from hfsiamese.search.groups.earlier_links import group_graph
from hfsiamese.search.groups.guards import check_guard, uses_cross_encoder
from hfsiamese.search.input_checks import check_k
from hfsiamese.search.reranking import NO_CROSS_ENCODER_THRESHOLD, cross_encoder_threshold

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex

# Dry passes that collect the cross-encoder guard's borderline links for batched scoring before the pass that
# decides: each pass's accepted links can change the groups, and so the links the next pass meets.
DRY_PASSES = 3


def find_groups(
    index: SearchIndex,
    threshold: float | None,
    k: int,
    probability_threshold: float | None,
    guard: str,
    canonical: str,
    show_progress_bar: bool,
    *,
    cross_encoder: Any | None = None,
    cross_encoder_threshold: float | None = None,
    cross_encoder_budget: float | None = None,
    check_size: int | None = None,
    group_threshold: float | None = None,
) -> DuplicateGroups:
    """The groups `DuplicateIndex.find_groups` describes (not yet kept by the index); `cross_encoder` is the one the
    `"cross_encoder"` guard asks (the call's or the index's)."""
    check_k(k)
    check_guard(guard)
    check_canonical_rule(canonical)
    index.check_not_empty()
    cosine = cosine_threshold(index, threshold, probability_threshold)
    settings = group_settings(
        cosine, guard, canonical, k, cross_encoder, cross_encoder_threshold, cross_encoder_budget, check_size,
        group_threshold,
    )  # refused here, before any mining  # fmt: skip
    store = mining_store(index)
    graph = group_graph(index, store, cosine, k, show_progress_bar)
    judge = None
    if uses_cross_encoder(guard):
        texts = store.all_texts()
        judge = row_judge(settings, cross_encoder, len(store), lambda rows: [texts[row] for row in rows])
    group_of, canonical_rows, scores = judged_groups(graph, store.table.gather, settings, judge, show_progress_bar)
    is_canonical = np.zeros(len(group_of), dtype=bool)
    is_canonical[canonical_rows] = True
    groups = DuplicateGroups.from_columns(
        settings, store.all_ids(), group_of.tolist(), scores.tolist(), is_canonical.tolist()
    )
    groups.cross_encoder_calls = 0 if judge is None else judge.calls
    return groups


def group_settings(
    cosine: float,
    guard: str,
    canonical: str,
    k: int,
    cross_encoder: Any | None = None,
    cross_encoder_threshold_: float | None = None,
    cross_encoder_budget: float | None = None,
    check_size: int | None = None,
    group_threshold: float | None = None,
) -> GroupSettings:
    """The settings of a grouping; the cross-encoder guard's refused without a cross-encoder or its threshold."""
    if not uses_cross_encoder(guard):
        return GroupSettings(threshold=cosine, guard=guard, canonical=canonical, k=k, group_threshold=group_threshold)
    decision = cross_encoder_guard_threshold(cross_encoder, cross_encoder_threshold_, cross_encoder_budget, check_size)
    return GroupSettings(cosine, guard, canonical, k, decision, cross_encoder_budget, check_size, group_threshold)


def cross_encoder_guard_threshold(
    cross_encoder: Any | None, threshold: float | None, budget: float | None, check_size: int | None
) -> float:
    """
    The cross-encoder guard's decision threshold (`threshold`, else the cross-encoder's calibrated one), with its
    budget and check size checked; refused without a cross-encoder or a threshold. It needs no index, so `hfsiamese
    groups` asks it before the corpus is read.
    """
    if cross_encoder is None:
        raise ValueError(
            "guard='cross_encoder' needs a cross-encoder: pass cross_encoder=... (a CrossEncoder or its folder) or "
            "build the index with one"
        )
    decision = cross_encoder_threshold(cross_encoder, threshold)
    if decision is None:
        raise ValueError(NO_CROSS_ENCODER_THRESHOLD.replace("threshold=", "cross_encoder_threshold="))
    check_cross_encoder_options(decision, budget, check_size)
    return decision


def row_judge(
    settings: GroupSettings, cross_encoder: Any, num_questions: int, texts: Any, *, max_calls: int | None = None
) -> LinkJudge:
    """The cross-encoder guard's judge for grouping `num_questions` questions, its budget theirs (or `max_calls`)."""
    assert settings.cross_encoder_threshold is not None and settings.cross_encoder_budget is not None  # checked
    budget = call_budget(settings.cross_encoder_budget, num_questions) if max_calls is None else max_calls
    return LinkJudge(cross_encoder, settings.cross_encoder_threshold, budget, texts)


def judged_groups(
    graph: csr_matrix,
    vectors: RowVectors,
    settings: GroupSettings,
    judge: LinkJudge | None,
    show_progress_bar: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`clustering.guarded_groups` with the settings' guard; with a `judge`, its borderline links first collected
    by dry passes and scored in batches, then decided by a last pass (which scores any it still meets)."""
    options = dict(settings=settings, judge=judge)
    if judge is not None:
        judge.deferring = True
        for _ in range(DRY_PASSES):
            guarded_groups(graph, vectors, settings.threshold, settings.guard, settings.canonical, **options)
            if not judge.score_deferred():
                break
        judge.deferring = False
    return guarded_groups(
        graph, vectors, settings.threshold, settings.guard, settings.canonical, show_progress_bar=show_progress_bar,
        **options,
    )  # fmt: skip


__all__ = ["cross_encoder_guard_threshold", "find_groups", "group_settings", "judged_groups", "row_judge"]
