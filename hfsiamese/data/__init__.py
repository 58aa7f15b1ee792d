"""
Data: loading pair files into one shape, question identity, duplicate groups, leak-free splits,
training views, batch sampling, tokenisation and collation. (`hfsiamese.training.preparation` chains
them for a training run; it is not imported here, since its mined view needs `hfsiamese.bi_encoder.mining`.)
"""

from hfsiamese.data.arrow_batches import ArrowBatchDataset, arrow_batch_dataset
from hfsiamese.data.collator import SiamesePairCollator
from hfsiamese.data.multi_dataset_sampler import MultiDatasetSampler
from hfsiamese.data.pair_loading import PAIR_FORMATS, HubUnreachableError, load_pairs
from hfsiamese.data.preprocessing import tokenize_pairs
from hfsiamese.data.question_identity import (
    DeduplicationReport,
    assign_duplicate_groups,
    deduplicate_pairs,
    distinct_questions,
    split_report,
    with_question_keys,
)
from hfsiamese.data.sampler import NoDuplicateGroupSampler
from hfsiamese.data.splits import split_by_group
from hfsiamese.data.text_normalization import NORMALIZATIONS, normalize_texts
from hfsiamese.data.views import duplicate_pairs, group_pairs, labelled_pairs, triplets, view_sizes

__all__ = [
    "ArrowBatchDataset",
    "arrow_batch_dataset",
    "NORMALIZATIONS",
    "DeduplicationReport",
    "deduplicate_pairs",
    "normalize_texts",
    "PAIR_FORMATS",
    "HubUnreachableError",
    "MultiDatasetSampler",
    "NoDuplicateGroupSampler",
    "SiamesePairCollator",
    "assign_duplicate_groups",
    "distinct_questions",
    "duplicate_pairs",
    "group_pairs",
    "labelled_pairs",
    "load_pairs",
    "split_by_group",
    "split_report",
    "tokenize_pairs",
    "triplets",
    "view_sizes",
    "with_question_keys",
]
