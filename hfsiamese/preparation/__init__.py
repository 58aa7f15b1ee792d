"""
Preparation of a pair file as its own, cached step: read, fold, drop empty rows, collapse repeats, split by question
component and draw the duplicate groups once, out of core, into a folder of Arrow shards with a `manifest.json`;
`hfsiamese train --train_file <that folder>` (or `--prepare_data`, which keeps one per file and options in the
datasets cache) trains from it without doing any of it again.
"""

from hfsiamese.preparation.options import PreparationOptions
from hfsiamese.preparation.prepare import prepare_pairs, prepared_cache_folder
from hfsiamese.preparation.reading import is_prepared_folder, load_prepared_splits, prepared_source

__all__ = [
    "PreparationOptions",
    "is_prepared_folder",
    "load_prepared_splits",
    "prepare_pairs",
    "prepared_cache_folder",
    "prepared_source",
]
