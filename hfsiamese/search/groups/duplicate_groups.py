"""
`DuplicateGroups`: which group each indexed question belongs to, each group's canonical question and each member's
cosine to it, as `DuplicateIndex.find_groups` found them and `add(..., assign_groups=True)` / `delete` keep them.
Saved with the index (`group_storage`); given out as a `datasets.Dataset` or a Parquet file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import datasets
import pyarrow as pa

from hfsiamese.search.groups.canonical import check_canonical_rule
from hfsiamese.search.groups.guards import check_guard, uses_cross_encoder

# The columns of `to_dataset` (and of the saved table, which has `is_canonical` in place of `canonical_id`).
DATASET_COLUMNS = ("id", "group", "canonical_id", "score", "group_size")


@dataclass(frozen=True)
class GroupSettings:
    """How the groups were made: the cosine threshold, the guard against chaining, the canonical rule, the `k`
    nearest neighbours searched per question; with `guard="cross_encoder"`, the cross-encoder score that accepts a
    borderline link, the cross-encoder calls allowed per 1,000 questions grouped, and the group size from which
    every joining member is checked (`cross_encoder_guard`); `group_threshold`, the bar of the guard (a question's
    mean cosine to a group, or its cosine to the canonical) where it differs from the pair threshold, as
    `threshold_fitting` calibrates it. Groups saved before those fields read them as None."""

    threshold: float
    guard: str
    canonical: str
    k: int
    cross_encoder_threshold: float | None = None
    cross_encoder_budget: float | None = None
    check_size: int | None = None
    group_threshold: float | None = None

    def __post_init__(self) -> None:
        check_guard(self.guard)
        check_canonical_rule(self.canonical)
        check_group_threshold(self.group_threshold)
        if uses_cross_encoder(self.guard):
            check_cross_encoder_options(self.cross_encoder_threshold, self.cross_encoder_budget, self.check_size)

    @property
    def bar(self) -> float:
        """The cosine the guard compares with: `group_threshold`, else the pair threshold."""
        return self.threshold if self.group_threshold is None else self.group_threshold

    def to_dict(self) -> dict[str, Any]:
        """The settings as saved; the optional fields only where set (groups of the earlier guards save as before)."""
        values = asdict(self)
        return {name: value for name, value in values.items() if value is not None or name in _REQUIRED}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> GroupSettings:
        optional = lambda name, kind: None if values.get(name) is None else kind(values[name])  # noqa: E731
        return cls(
            float(values["threshold"]), str(values["guard"]), str(values["canonical"]), int(values["k"]),
            optional("cross_encoder_threshold", float), optional("cross_encoder_budget", float),
            optional("check_size", int), optional("group_threshold", float),
        )  # fmt: skip


_REQUIRED = ("threshold", "guard", "canonical", "k")


def check_group_threshold(group_threshold: float | None) -> None:
    """Refuse a guard's bar that is no cosine (None: the pair threshold is the bar)."""
    if group_threshold is not None and not -1.0 <= group_threshold <= 1.0:
        raise ValueError(f"group_threshold is a cosine in [-1, 1], got {group_threshold!r}")


def check_cross_encoder_options(threshold: float | None, budget: float | None, check_size: int | None) -> None:
    """Refuse settings the cross-encoder guard cannot work with, naming the option."""
    if threshold is None or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"the cross_encoder guard needs a cross_encoder_threshold in [0, 1], got {threshold!r}")
    if budget is None or budget < 0:
        raise ValueError(f"cross_encoder_budget (calls per 1,000 questions) must be 0 or more, got {budget!r}")
    if check_size is not None and (isinstance(check_size, bool) or check_size < 2):
        raise ValueError(f"check_size must be an integer of at least 2 (or None), got {check_size!r}")


class DuplicateGroups:
    """
    Groups of duplicate questions of one index. `group_of(id)`, `canonical_of(group)`, `members(group)`,
    `score_of(id)` (cosine to the canonical; 1 for the canonical), `largest(n)`; `to_dataset()` / `to_parquet(path)`.
    Members of a group are kept in the order they joined (the index's row order for a rebuilt group).
    """

    def __init__(self, settings: GroupSettings) -> None:
        self.settings = settings
        self._group_of: dict[Any, int] = {}
        self._score: dict[Any, float] = {}
        # Members as tuples, not lists: a tuple of ids is left alone by Python's garbage collector, where a list is
        # traversed by every full collection (at 1M questions the lists of ~900k groups added ~50 ms to each).
        self._members: dict[int, tuple[Any, ...]] = {}
        self._canonical: dict[int, Any] = {}
        self._next_group = 0
        # Each member's place in the order questions were first grouped (the index's row order: a rebuild groups its
        # rows in that order and an add appends), which decides "earliest" across groups that merge.
        self._arrival: dict[Any, int] = {}
        self._next_arrival = 0
        self.cross_encoder_calls = 0  # pairs the cross-encoder guard scored for these groups in this process
        self.changed: set[Any] = set()  # ids whose row changed since a database last took them (`group_storage`)
        self.removed: set[Any] = set()

    @classmethod
    def from_columns(
        cls, settings: GroupSettings, ids: list[Any], groups: Iterable[int], scores: Iterable[float],
        canonical: Iterable[bool],
    ) -> DuplicateGroups:  # fmt: skip
        """Groups from one row per member (in joining order); the canonical rows flagged."""
        made = cls(settings)
        members: dict[int, list[Any]] = {}
        for member, group, score, is_canonical in zip(ids, groups, scores, canonical):
            group = int(group)
            made._group_of[member] = group
            made._score[member] = float(score)
            made._arrival[member] = len(made._arrival)
            members.setdefault(group, []).append(member)
            if is_canonical:
                made._canonical[group] = member
        made._members = {group: tuple(these) for group, these in members.items()}
        del members
        made._next_group = max(made._members, default=-1) + 1
        made._next_arrival = len(made._arrival)
        missing = [group for group in made._members if group not in made._canonical]
        if missing:
            raise ValueError(f"saved duplicate groups {missing[:5]} have no canonical question: find_groups again")
        return made

    # --- reading -------------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The number of groups (a question without duplicates is a group of one)."""
        return len(self._members)

    def __contains__(self, member: Any) -> bool:
        return member in self._group_of

    def __repr__(self) -> str:
        duplicated = sum(1 for members in self._members.values() if len(members) > 1)
        return (
            f"DuplicateGroups(num_questions={len(self._group_of)}, num_groups={len(self)}, "
            f"with_duplicates={duplicated}, guard={self.settings.guard!r}, canonical={self.settings.canonical!r})"
        )

    @property
    def num_questions(self) -> int:
        return len(self._group_of)

    def group_of(self, member: Any) -> int | None:
        return self._group_of.get(member)

    def score_of(self, member: Any) -> float | None:
        return self._score.get(member)

    def canonical_of(self, group: int) -> Any:
        return self._canonical[group]

    def members(self, group: int) -> list[Any]:
        return list(self._members[group])

    def arrival_order(self, members: Iterable[Any]) -> list[int]:
        """Where each of these grouped members came in the order questions were grouped (the index's row order)."""
        return [self._arrival[member] for member in members]

    def groups(self) -> list[int]:
        return list(self._members)

    def questions(self) -> list[Any]:
        """Every grouped question's id, in the order they were grouped."""
        return list(self._group_of)

    def largest(self, n: int = 10, *, min_size: int = 2) -> list[tuple[int, Any, int]]:
        """`(group, canonical id, size)` of the `n` largest groups of at least `min_size` members (ties: lower group
        first)."""
        sized = [(len(members), group) for group, members in self._members.items() if len(members) >= min_size]
        sized.sort(key=lambda pair: (-pair[0], pair[1]))
        return [(group, self._canonical[group], size) for size, group in sized[:n]]

    def partition(self) -> set[frozenset[Any]]:
        """The groups as sets of ids (what two groupings are compared by)."""
        return {frozenset(members) for members in self._members.values()}

    def to_dataset(self) -> datasets.Dataset:
        """One row per question: `id`, `group`, `canonical_id`, `score` (cosine to the canonical), `group_size`."""
        ids = list(self._group_of)
        groups = [self._group_of[i] for i in ids]
        return datasets.Dataset.from_dict(
            {
                "id": ids,
                "group": groups,
                "canonical_id": [self._canonical[g] for g in groups],
                "score": [self._score[i] for i in ids],
                "group_size": [len(self._members[g]) for g in groups],
            }
        )

    def to_parquet(self, path: str | os.PathLike) -> None:
        """`to_dataset()` as a Parquet file (an existing file is refused: the caller removes it deliberately)."""
        if os.path.exists(path):
            raise FileExistsError(f"{path} exists: choose another file, or remove it first")
        self.to_dataset().to_parquet(os.fspath(path))

    def table_rows(self, ids: Iterable[Any] | None = None) -> dict[str, list[Any]]:
        """The saved form of these members (all by default): `id`, `group`, `score`, `is_canonical`."""
        ids = list(self._group_of) if ids is None else [i for i in ids if i in self._group_of]
        return {
            "id": ids,
            "group": [self._group_of[i] for i in ids],
            "score": [self._score[i] for i in ids],
            "is_canonical": [self._canonical[self._group_of[i]] == i for i in ids],
        }

    def to_arrow(self) -> pa.Table:
        return pa.table(self.table_rows())

    # --- changing ------------------------------------------------------------------------------------

    def new_group(self, member: Any) -> int:
        """Start a group with `member` as its canonical."""
        group = self._next_group
        self._next_group += 1
        self._members[group] = ()
        self._canonical[group] = member
        self.join(member, group, 1.0)
        return group

    def join(self, member: Any, group: int, score: float) -> None:
        if member not in self._arrival:
            self._arrival[member] = self._next_arrival
            self._next_arrival += 1
        self._group_of[member] = group
        self._score[member] = float(score)
        if member not in self._members[group]:
            self._members[group] += (member,)
        self.changed.add(member)
        self.removed.discard(member)

    def set_canonical(self, group: int, member: Any, scores: dict[Any, float]) -> None:
        """Make `member` the canonical of `group`, with every member's new cosine to it."""
        self._canonical[group] = member
        for other in self._members[group]:
            self._score[other] = 1.0 if other == member else float(scores[other])
            self.changed.add(other)

    def leave(self, member: Any) -> int | None:
        """Take `member` out of its group (the group dropped when it empties); its group, or None if it had none.
        The caller promotes a new canonical when it was one."""
        group = self._group_of.pop(member, None)
        if group is None:
            return None
        del self._score[member], self._arrival[member]
        self._members[group] = tuple(other for other in self._members[group] if other != member)
        if not self._members[group]:
            del self._members[group], self._canonical[group]
        self.changed.discard(member)
        self.removed.add(member)
        return group

    def merge(self, groups: list[int]) -> int:
        """Make these groups one (a question linked them): the group holding the earliest member keeps its number,
        the others' numbers are retired, never reused; members stay in arrival order. The caller then sets the
        canonical (`set_canonical`), as its rule decides over the joined members."""
        first = lambda group: self._arrival[self._members[group][0]]  # noqa: E731
        kept = min(groups, key=first)
        joined = [member for group in groups for member in self._members[group]]
        for group in groups:
            if group != kept:
                del self._members[group], self._canonical[group]
        for member in joined:
            self._group_of[member] = kept
            self.changed.add(member)
        self._members[kept] = tuple(sorted(joined, key=self._arrival.__getitem__))
        return kept

    def move(self, members: list[Any], canonical: Any, scores: dict[Any, float]) -> int:
        """Move `members` (of one group, not all of it) into a new group led by `canonical`; the new group."""
        moving = set(members)
        for old in {self._group_of[member] for member in members}:
            self._members[old] = tuple(other for other in self._members[old] if other not in moving)
        group = self._next_group
        self._next_group += 1
        self._members[group], self._canonical[group] = (), canonical
        for member in members:
            self.join(member, group, 1.0 if member == canonical else scores[member])
        return group


__all__ = ["DATASET_COLUMNS", "DuplicateGroups", "GroupSettings", "check_cross_encoder_options"]
