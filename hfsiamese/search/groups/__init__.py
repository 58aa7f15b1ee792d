"""Duplicate groups of a corpus: the duplicate pairs' connected components, split where they chain, a canonical
question per group (`DuplicateIndex.find_groups`), kept current as the index changes and saved with it."""

from hfsiamese.search.groups.bcubed import bcubed_scores
from hfsiamese.search.groups.canonical import CANONICAL_RULES
from hfsiamese.search.groups.duplicate_groups import DuplicateGroups, GroupSettings
from hfsiamese.search.groups.guards import DEFAULT_GUARD, GUARDS

__all__ = ["CANONICAL_RULES", "DEFAULT_GUARD", "GUARDS", "DuplicateGroups", "GroupSettings", "bcubed_scores"]
