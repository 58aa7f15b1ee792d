"""
A group threshold calibrated on labelled validation pairs, as the pair threshold is (`base.threshold_calibration`):
the guard's bar (`GroupSettings.group_threshold`: a question's mean cosine to a group, or its cosine to the
canonical) chosen among candidates for the accuracy, or F1, of "both questions in one group" against the labels.
The links stay those at the pair threshold (`earlier_links`), so grouping links what the pair decision links; only how
far a group may stretch changes. A mean over a group's members runs below its pairwise cosines, which is why a bar of its own can
give back the duplicates the pair threshold's bar refuses. Fit on validation pairs only; pass the result to
`find_groups(group_threshold=...)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import sklearn.metrics

from hfsiamese.search.duplicate_finding import cosine_threshold, mining_store
from hfsiamese.search.groups.cross_encoder_guard import DEFAULT_BUDGET, DEFAULT_CHECK_SIZE
from hfsiamese.search.groups.earlier_links import group_graph
from hfsiamese.search.groups.group_finding import group_settings, judged_groups, row_judge
from hfsiamese.search.groups.guards import DEFAULT_GUARD, uses_cross_encoder

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex

CALIBRATE_FOR = ("accuracy", "f1")
# Default candidates: the pair threshold moved by these steps (a mean runs below pairwise cosines: mostly down).
DEFAULT_OFFSETS = tuple(np.round(np.arange(-0.20, 0.0501, 0.025), 3).tolist())


@dataclass
class GroupThresholdFit:
    """The chosen bar and what each candidate scored (`{"group_threshold", "accuracy", "f1", "largest_group"}`)."""

    group_threshold: float
    calibrate_for: str
    candidates: list[dict[str, float]] = field(default_factory=list)


def fit_group_threshold(
    index: SearchIndex,
    ids_a: Sequence[Any],
    ids_b: Sequence[Any],
    labels: Sequence[int],
    *,
    guard: str = DEFAULT_GUARD,
    k: int = 10,
    threshold: float | None = None,
    candidates: Sequence[float] | None = None,
    calibrate_for: str = "accuracy",
    max_group_size: int | None = None,
    cross_encoder: Any | None = None,
    cross_encoder_threshold: float | None = None,
    cross_encoder_budget: float = DEFAULT_BUDGET,
    check_size: int | None = DEFAULT_CHECK_SIZE,
) -> GroupThresholdFit:
    """
    The bar of `guard` that best decides the labelled pairs `(ids_a[i], ids_b[i], labels[i])` (1 = duplicate; ids of
    `index`, which holds the validation questions) by "same group", among `candidates` (default: the pair threshold
    plus `DEFAULT_OFFSETS`), grouping at pair threshold `threshold` (default the index's) with `k` neighbours.
    Candidates whose largest group exceeds `max_group_size` are passed over. Ties go to the bar nearest the pair
    threshold.
    """
    labels_ = _checked_labels(ids_a, ids_b, labels)
    if calibrate_for not in CALIBRATE_FOR:
        raise ValueError(f"calibrate_for must be one of {CALIBRATE_FOR}, got {calibrate_for!r}")
    index.check_not_empty()
    cosine = cosine_threshold(index, threshold, None)
    bars = [float(np.clip(cosine + step, -1.0, 1.0)) for step in DEFAULT_OFFSETS] if candidates is None else candidates
    ce = dict(cross_encoder_threshold_=cross_encoder_threshold, cross_encoder_budget=cross_encoder_budget)
    for bar in bars:  # every candidate's settings refused now, before any mining
        group_settings(cosine, guard, "earliest", k, cross_encoder, check_size=check_size, group_threshold=bar, **ce)
    store = mining_store(index)
    row_of = {member: row for row, member in enumerate(store.all_ids())}
    missing = [member for member in [*ids_a, *ids_b] if member not in row_of]
    if missing:
        raise ValueError(f"{len(missing)} id(s) of the labelled pairs are not in the index, e.g. {missing[0]!r}")
    rows_a = np.array([row_of[member] for member in ids_a])
    rows_b = np.array([row_of[member] for member in ids_b])
    graph = group_graph(index, store, cosine, k)
    texts = store.all_texts() if uses_cross_encoder(guard) else []
    scored = []
    for bar in bars:
        settings = group_settings(
            cosine, guard, "earliest", k, cross_encoder, check_size=check_size, group_threshold=bar, **ce
        )
        judge = None
        if uses_cross_encoder(guard):
            judge = row_judge(settings, cross_encoder, len(store), lambda rows: [texts[row] for row in rows])
        group_of, _, _ = judged_groups(graph, store.table.gather, settings, judge)
        same = group_of[rows_a] == group_of[rows_b]
        scored.append(
            {
                "group_threshold": float(bar),
                "accuracy": float(sklearn.metrics.accuracy_score(labels_, same)),
                "f1": float(sklearn.metrics.f1_score(labels_, same, zero_division=0.0)),
                "largest_group": int(np.bincount(group_of).max()),
            }
        )
    allowed = [row for row in scored if max_group_size is None or row["largest_group"] <= max_group_size]
    if not allowed:
        raise ValueError(f"every candidate bar made a group larger than max_group_size={max_group_size}")
    best = max(allowed, key=lambda row: (row[calibrate_for], -abs(row["group_threshold"] - cosine)))
    return GroupThresholdFit(best["group_threshold"], calibrate_for, scored)


def _checked_labels(ids_a: Sequence[Any], ids_b: Sequence[Any], labels: Sequence[int]) -> np.ndarray:
    if not len(ids_a) == len(ids_b) == len(labels):
        raise ValueError(f"got {len(ids_a)} first ids, {len(ids_b)} second ids and {len(labels)} labels: one each")
    values = np.asarray(labels)
    if not set(np.unique(values).tolist()) == {0, 1}:
        raise ValueError("the labels must be 0 (not duplicate) and 1 (duplicate), with some of each")
    return values.astype(bool)


__all__ = ["CALIBRATE_FOR", "DEFAULT_OFFSETS", "GroupThresholdFit", "fit_group_threshold"]
