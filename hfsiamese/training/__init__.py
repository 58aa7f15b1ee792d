"""
One training run from what the user asked, the same for either family: its arguments, its data (loaded,
de-duplicated, split by duplicate group, viewed as the loss needs; several data sets: `several_datasets`), its start (seeds, threads, model: built by the
family's `model_building`), train/evaluate/save (`run_training`), and its end (saving, the summary).
"""

from hfsiamese.training.arguments import ARCHITECTURES, DataArguments, ModelArguments, model_card_kwargs
from hfsiamese.training.preparation import load_splits, training_view
from hfsiamese.training.several_datasets import TrainingDataset, training_datasets

__all__ = [
    "ARCHITECTURES",
    "DataArguments",
    "ModelArguments",
    "TrainingDataset",
    "load_splits",
    "model_card_kwargs",
    "training_datasets",
    "training_view",
]
