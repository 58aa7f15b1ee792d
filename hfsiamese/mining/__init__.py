"""
Training data mined before training: hard negatives for each duplicate pair, and a teacher's scores of them.

A family of its own (not `search/`, not `distillation/`) because it joins them: it searches with a bi-encoder
(`hfsiamese.search.DuplicateIndex`), excludes by the data's duplicate groups and held-out questions
(`hfsiamese.data`), rescores with a cross-encoder, and writes what the losses read.

1. `mine_negatives` (`hfsiamese mine`): each duplicate pair's nearest non-duplicates, filtered by rank, margins and a
   ceiling (`NegativeFilters`), never of the query's duplicate group nor held out (`HeldOutQuestions`), optionally
   without those a cross-encoder calls duplicates; written as triplets, n-tuples, labelled pairs or groups with
   scores (`mined_formats`, `dataset_files`); resumable in a shards folder (`mining_shards`).
2. `score_groups` (`hfsiamese teacher-scores`): the `teacher_scores` of each group by a cross-encoder or a
   bi-encoder, resumably in shards (`score_shards`), for the `margin_mse` / `listwise_kl` losses.
"""

from hfsiamese.utils.lazy_exports import lazy_exports

_LAZY = {
    "HeldOutQuestions": "hfsiamese.mining.held_out",
    "NegativeFilters": "hfsiamese.data.negative_filters",
    "MinedNegatives": "hfsiamese.mining.mined_formats",
    "MiningFolder": "hfsiamese.mining.mining_shards",
    "mine_negatives": "hfsiamese.mining.negative_mining",
    "OUTPUT_FORMATS": "hfsiamese.mining.mined_formats",
    "TEACHER_SCORES_COLUMN": "hfsiamese.mining.mined_formats",
    "mined_dataset": "hfsiamese.mining.mined_formats",
    "load_dataset_file": "hfsiamese.mining.dataset_files",
    "save_dataset_file": "hfsiamese.mining.dataset_files",
    "PairScorer": "hfsiamese.mining.teacher_scoring",
    "pair_scorer": "hfsiamese.mining.teacher_scoring",
    "score_groups": "hfsiamese.mining.teacher_scoring",
}
__getattr__, __dir__ = lazy_exports(__name__, _LAZY)

__all__ = list(_LAZY)
