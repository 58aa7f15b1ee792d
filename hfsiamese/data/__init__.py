"""
Data: loading pair files into one shape, duplicate groups, leak-free splits, batch sampling,
tokenisation and collation.
"""

from .cleaning import NORMALIZATIONS, DeduplicationReport, deduplicate_pairs, normalize_texts
from .collator import SiamesePairCollator
from .groups import assign_duplicate_groups, split_by_group, split_report
from .loading import PAIR_FORMATS, HubUnreachableError, load_pairs
from .preprocessing import tokenize_pairs
from .sampler import NoDuplicateGroupSampler
from .views import duplicate_pairs, group_pairs, labelled_pairs, triplets, view_sizes

__all__ = [
    "NORMALIZATIONS",
    "DeduplicationReport",
    "deduplicate_pairs",
    "normalize_texts",
    "PAIR_FORMATS",
    "HubUnreachableError",
    "NoDuplicateGroupSampler",
    "SiamesePairCollator",
    "assign_duplicate_groups",
    "duplicate_pairs",
    "group_pairs",
    "labelled_pairs",
    "load_pairs",
    "split_by_group",
    "split_report",
    "tokenize_pairs",
    "triplets",
    "view_sizes",
]
