"""
The cross-encoder: both questions of a pair read together by one transformer, for what a bi-encoder
cannot do as well: deciding a pair (`CrossEncoder.predict`), reranking a bi-encoder's candidates
(`DuplicateIndex(..., cross_encoder=)`), and labelling silver training pairs (`hfsiamese.distillation.silver_pairs`).
Its trainer is `hfsiamese.trainer.CrossEncoderTrainer`.
"""

from .cross_encoder import PAIR_ORDERS, CrossEncoder, is_cross_encoder_config, is_cross_encoder_folder, load_pair_model
from .pair_inputs import CrossPairCollator, tokenize_cross_pairs

__all__ = [
    "PAIR_ORDERS",
    "CrossEncoder",
    "CrossPairCollator",
    "is_cross_encoder_config",
    "is_cross_encoder_folder",
    "load_pair_model",
    "tokenize_cross_pairs",
]
