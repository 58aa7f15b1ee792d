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

from hfsiamese.utils.lazy_exports import lazy_package

__getattr__, __dir__, __all__ = lazy_package(
    __name__,
    {
        ".held_out": ("HeldOutQuestions",),
        "hfsiamese.data.negative_filters": ("NegativeFilters",),
        ".mined_formats": ("MinedNegatives", "OUTPUT_FORMATS", "TEACHER_SCORES_COLUMN", "mined_dataset"),
        ".mining_shards": ("MiningFolder",),
        ".negative_mining": ("mine_negatives",),
        ".dataset_files": ("load_dataset_file", "save_dataset_file"),
        ".teacher_scoring": ("PairScorer", "pair_scorer", "score_groups"),
    },
)
