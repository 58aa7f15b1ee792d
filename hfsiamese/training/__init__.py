"""
One training run from what the user asked, the same for either family: its arguments, its data (loaded,
de-duplicated, split by duplicate group, viewed as the loss needs), its start (seeds, threads, model: built by the
family's `model_building`), train/evaluate/save (`run_training`), and its end (saving, the summary).
"""

from hfsiamese.training.arguments import ARCHITECTURES, DataArguments, ModelArguments, model_card_kwargs
from hfsiamese.training.preparation import load_splits, training_view

__all__ = [
    "ARCHITECTURES",
    "DataArguments",
    "ModelArguments",
    "load_splits",
    "model_card_kwargs",
    "training_view",
]
