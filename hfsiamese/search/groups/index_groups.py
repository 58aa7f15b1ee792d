"""The glue between a `DuplicateIndex` and its `DuplicateGroups`: found, kept, assigned, forgotten, stored."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np

from hfsiamese.search.groups.assignment import CROSS_ENCODER_NEEDED, assign_new, forget
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups, GroupSettings
from hfsiamese.search.groups.group_storage import read_groups, sync_groups, write_groups
from hfsiamese.search.groups.guards import DEFAULT_GUARD, uses_cross_encoder

if TYPE_CHECKING:  # for the annotations only
    from hfsiamese.search.index_protocol import SearchIndex

logger = logging.getLogger(__name__)

# What `IndexGroups` holds before anyone asked (a database's stored groups are read on first need).
NOT_READ = object()


class IndexGroups:
    """
    The duplicate groups of one `DuplicateIndex`, which the index holds and hands itself to (its rows, its store, its
    threshold and cross-encoder): found, kept, assigned, forgotten, stored beside a database's rows. Before anyone
    asks, a database's stored groups are not read (`current` reads them on first need).
    """

    def __init__(self, groups: DuplicateGroups | object | None = NOT_READ) -> None:
        self._groups = groups

    def current(self, index: SearchIndex) -> DuplicateGroups | None:
        """The index's groups (a database's read from it the first time, and made good where a process stopped
        between a `delete`'s two writes: `drop_removed`), None before `find_groups`."""
        if self._groups is NOT_READ:
            groups = read_groups(index)
            if groups is not None and groups.num_questions > len(index):
                drop_removed(index, groups)
            self._groups = groups
        return self._groups  # type: ignore[return-value]  # read: DuplicateGroups or None

    def read_as_replica(self, index: SearchIndex) -> tuple[int, int]:
        """
        A read replica's view: a database's rows held at their version now where it keeps versions (LanceDB), then
        its stored groups read as they are, never repaired or written back; and how far they are from the rows:
        `(rows in no group, grouped questions with no row)`, `(0, 0)` when they agree or there are no groups. A
        writer commits an add's or a delete's rows before its groups, so a read between the two sees one of them off;
        the questions with no row leave their groups in this process only.
        """
        store = index.database_store
        if store is not None:
            store.hold_rows()  # before the groups: rows of one moment, groups of that moment or later
        groups = read_groups(index)
        self._groups = groups
        if groups is None:
            return 0, 0
        stale = without_rows(index, groups)
        if stale:
            forget(index, groups, stale)
        return len(index) - groups.num_questions, len(stale)  # (after the stale ones left)

    def keep(self, index: SearchIndex, groups: DuplicateGroups) -> DuplicateGroups:
        """Make `groups` the index's own (written to a database now; to a folder by `save`)."""
        write_groups(index, groups)
        self._groups = groups
        return groups

    def to_assign(self, index: SearchIndex) -> DuplicateGroups:
        """The groups new rows will join, or the refusal, before any row is written: the index's own groups (a
        database's read and checked now), else new ones with the default settings for an index that holds nothing yet
        (kept by `assign` once the rows are written); otherwise `find_groups` must come first."""
        groups = self.current(index)
        if groups is not None:
            if uses_cross_encoder(groups.settings.guard) and index.cross_encoder is None:
                raise ValueError(CROSS_ENCODER_NEEDED)
            return groups
        if len(index):
            raise ValueError(
                "this index has no duplicate groups yet: call index.find_groups() first, then add with "
                "assign_groups=True to keep them current"
            )
        if index.threshold is None:
            raise ValueError("assign_groups needs a cosine threshold: build the index with threshold=...")
        return DuplicateGroups(GroupSettings(index.threshold, DEFAULT_GUARD, "earliest", 10))

    def assign(self, index: SearchIndex, groups: DuplicateGroups, ids: list[Any], vectors: Any) -> list[dict[str, Any]]:
        """Assign just-added rows to `groups` (what `to_assign` gave before they were written)."""
        if self.current(index) is not groups:
            self.keep(index, groups)
        vectors = vectors.float().cpu().numpy() if hasattr(vectors, "cpu") else np.asarray(vectors, dtype=np.float32)
        assigned = assign_new(index, groups, ids, vectors)
        sync_groups(index, groups)
        return assigned

    def after_delete(self, index: SearchIndex, ids: list[Any]) -> None:
        """The deleted rows leave their groups (a new canonical promoted where one went)."""
        groups = self.current(index)
        if groups is not None:
            forget(index, groups, ids)
            sync_groups(index, groups)


def without_rows(index: SearchIndex, groups: DuplicateGroups) -> list[Any]:
    """The grouped questions the index's rows no longer hold."""
    questions = groups.questions()
    return [member for member, kept in zip(questions, index.contains(questions)) if not kept]


def drop_removed(index: SearchIndex, groups: DuplicateGroups) -> None:
    """
    A database's stored groups holding questions its rows no longer hold (a process stopped after a `delete`'s rows
    were removed, before their group rows were): they leave their groups now, as that `delete` would have had them
    (`forget`: a new canonical promoted where one went), and the change is written back, with a warning. (A stop
    between an `add`'s two writes leaves its rows ungrouped, as a plain `add` does: nothing to make good.)
    """
    removed = without_rows(index, groups)
    if not removed:
        return
    forget(index, groups, removed)
    sync_groups(index, groups)
    logger.warning(
        "%d question(s) of the stored duplicate groups were no longer in the index (a delete stopped between its "
        "rows and its groups): taken out of their groups",
        len(removed),
    )


__all__ = ["NOT_READ", "IndexGroups", "drop_removed"]
