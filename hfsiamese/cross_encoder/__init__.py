"""
The cross-encoder: both questions of a pair read together by one transformer, for what a bi-encoder
cannot do as well: deciding a pair (`CrossEncoder.predict`), reranking a bi-encoder's candidates
(`DuplicateIndex(..., cross_encoder=)`), and labelling silver training pairs (`silver_pairs`).
Its trainer is `hfsiamese.trainer.CrossEncoderTrainer`.
"""

from .cross_encoder import PAIR_ORDERS, CrossEncoder, is_cross_encoder_config, is_cross_encoder_folder
from .pair_inputs import CrossPairCollator, tokenize_cross_pairs
from .silver_pairs import SilverPairsArguments, parse_silver_pairs_command, silver_pairs, silver_threshold

__all__ = [
    "PAIR_ORDERS",
    "CrossEncoder",
    "CrossPairCollator",
    "SilverPairsArguments",
    "is_cross_encoder_config",
    "is_cross_encoder_folder",
    "parse_silver_pairs_command",
    "silver_pairs",
    "silver_threshold",
    "tokenize_cross_pairs",
]
