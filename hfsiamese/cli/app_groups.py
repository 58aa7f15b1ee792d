"""
What the web app shows of an index's duplicate groups (`DuplicateIndex.find_groups`): beside each search result its
group and canonical question, and a "Groups" tab listing the largest groups. Nothing is shown for an index without
groups. Kept apart from `app` so that the page's layout and these cells read on their own.
"""

from __future__ import annotations

import html
from typing import Any

# Largest groups the "Groups" tab lists.
LARGEST_GROUPS = 20


class GroupCells:
    """The group cells of one index (its canonical questions' texts read as needed, by id, and kept)."""

    def __init__(self, index: Any) -> None:
        self.index = index
        self._texts: dict[Any, str] = {}

    @property
    def groups(self) -> Any:
        return self.index.groups

    def canonical_texts(self, ids: list[Any]) -> list[str]:
        missing = [i for i in dict.fromkeys(ids) if i not in self._texts]
        self._texts.update(zip(missing, self.index.rows_by_id(missing)[0]))
        return [self._texts[i] for i in ids]

    def for_matches(self, matches: list[dict[str, Any]]) -> list[list[str]] | None:
        """`[group, canonical question]` cells for each match; None without groups. A match outside the groups
        (added without `assign_groups`) gets empty cells."""
        groups = self.groups
        if groups is None:
            return None
        found = [groups.group_of(match["id"]) for match in matches]
        canonicals = [groups.canonical_of(group) for group in found if group is not None]
        texts = iter(self.canonical_texts(canonicals))
        cells = []
        for group in found:
            if group is None:
                cells.append(["", ""])
                continue
            size = len(groups.members(group))
            cells.append([f"group {group} ({size})", cell(next(texts))])
        return cells

    def largest(self, n: int = LARGEST_GROUPS) -> str:
        """The Markdown of the "Groups" tab: the `n` largest groups, each with its canonical question."""
        groups = self.groups
        if groups is None:
            return "No duplicate groups yet: run `hfsiamese groups` (or `index.find_groups()`) on this index."
        largest = groups.largest(n)
        if not largest:
            return f"No question of the {groups.num_questions:,} has a duplicate at cosine {groups.settings.threshold:.3f}."
        texts = self.canonical_texts([canonical for _, canonical, _ in largest])
        header = f"The {len(largest)} largest of {len(groups):,} groups (guard `{groups.settings.guard}`):"
        rows = ["| group | questions | canonical question | id |", "|---|---|---|---|"]
        rows += [
            f"| {group} | {size} | {cell(text)} | {cell(str(canonical))} |"
            for (group, canonical, size), text in zip(largest, texts)
        ]
        return "\n".join([header, "", *rows])


def cell(text: str) -> str:
    """A text as one Markdown table cell: escaped HTML, no pipes or line breaks."""
    return html.escape(" ".join(text.split())).replace("|", "&#124;")


__all__ = ["LARGEST_GROUPS", "GroupCells", "cell"]
