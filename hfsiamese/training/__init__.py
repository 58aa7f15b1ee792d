"""
Setting up a training run from what the user asked: the training recipes' arguments, the data it trains and validates on (loaded, de-duplicated, split by duplicate group, viewed as
the loss needs, hard negatives mined), and the model and tokenizer it starts from (an LSTM or static
encoder with a word vocabulary trained here, all-MiniLM-L6-v2 by default, any `AutoModel`, or a saved
Siamese checkpoint).
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
