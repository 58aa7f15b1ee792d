"""
A pretrained transformer as a Siamese model's encoder: the class that holds its encoder (an encoder–decoder's
encoder alone) and the dropout it trains with.

This file travels with every checkpoint as remote code (the modeling file imports it relatively), so it imports
only transformers.
"""

from __future__ import annotations

from typing import Any

from transformers import AutoModel

__all__ = ["encoder_class", "with_dropout"]

# Dropout probabilities of transformer configs (BERT/RoBERTa/MPNet names, then DistilBERT's and others').
_DROPOUT_ATTRIBUTES = (
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "dropout",
    "attention_dropout",
    "hidden_dropout",
    "activation_dropout",
    "dropout_rate",  # T5
)


def encoder_class(config: Any) -> type[Any]:
    """
    The `AutoModel` class of `config`, or, for an encoder–decoder (T5, mT5, UMT5, ...), its encoder-only
    class (`T5EncoderModel`): a Siamese model embeds with the encoder alone, and the decoder's weights
    would only take memory.
    """
    from transformers.models.auto.modeling_auto import MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES, MODEL_MAPPING

    # By model type, not `config.is_encoder_decoder`: an encoder-only class saves its config with that flag off.
    if getattr(config, "model_type", None) not in MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return AutoModel
    base: Any = MODEL_MAPPING[type(config)]  # one model class per config class (typed as a pair of them)
    name = base.__name__.replace("Model", "EncoderModel")
    module = __import__(base.__module__, fromlist=[name])
    if not hasattr(module, name):
        raise ValueError(
            f"{type(config).__name__} is an encoder-decoder without an encoder-only class ({name}): it cannot be the Siamese encoder"
        )
    return getattr(module, name)


def with_dropout(config: Any, probability: float) -> Any:
    """`config` with every dropout probability it declares set to `probability`."""
    if not 0.0 <= probability < 1.0:
        raise ValueError(f"encoder_dropout is a probability in [0, 1), got {probability}")
    found = [name for name in _DROPOUT_ATTRIBUTES if isinstance(getattr(config, name, None), float)]
    if not found:
        raise ValueError(
            f"encoder_dropout: {type(config).__name__} declares none of the dropout settings {_DROPOUT_ATTRIBUTES}; "
            "set its own dropout fields through its config instead"
        )
    for name in found:
        setattr(config, name, probability)
    return config
