"""
Setting up a training run from what the user asked: the training recipes' arguments, the data it trains and validates on (loaded, de-duplicated, split by duplicate group, viewed as
the loss needs, hard negatives mined), and the model and tokenizer it starts from (an LSTM or static
encoder with a word vocabulary trained here, all-MiniLM-L6-v2 by default, any `AutoModel`, or a saved
Siamese checkpoint).
"""

from .arguments import ARCHITECTURES, DataArguments, ModelArguments, model_card_kwargs
from .cross_encoder_building import build_cross_encoder
from .model_building import build_model_and_tokenizer, check_same_vocabulary
from .preparation import load_splits, training_view

__all__ = [
    "ARCHITECTURES",
    "DataArguments",
    "ModelArguments",
    "build_cross_encoder",
    "build_model_and_tokenizer",
    "check_same_vocabulary",
    "load_splits",
    "model_card_kwargs",
    "training_view",
]
