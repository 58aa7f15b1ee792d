"""
What a Siamese model is built of, read from its config: the encoder (LSTM, static or transformer) with the width it
pools to, and the Dense layers after it; and a pretrained transformer checkpoint loaded as that encoder.

This file travels with every checkpoint as remote code (the modeling file imports it relatively), so it imports
only torch, transformers and its siblings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, PreTrainedModel

from .configuration_siamese import SiameseConfig
from .head_layers import DenseLayer
from .lstm_encoder import LSTMEncoder
from .safe_loading import check_finite, clear_loading_errors, weights_file
from .static_encoder import StaticEncoder
from .transformer_encoder import encoder_class, with_dropout

__all__ = ["build_dense_layers", "build_encoder", "load_dense_weights", "load_pretrained_encoder"]


def build_encoder(config: SiameseConfig) -> tuple[nn.Module, int]:
    """The encoder `config` describes, freshly initialised, and the width of the vectors it pools to."""
    if config.encoder_type == "lstm":
        return LSTMEncoder(config), config.hidden_size * (2 if config.bidirectional else 1)
    if config.encoder_type == "static":
        return StaticEncoder(config), config.embedding_dim
    encoder_config = AutoConfig.for_model(**config.encoder_config)
    kind = encoder_class(encoder_config)
    return (kind.from_config(encoder_config) if kind is AutoModel else kind(encoder_config)), config.pooled_dim


def build_dense_layers(config: SiameseConfig, pooled_dim: int) -> tuple[nn.Sequential | None, int]:
    """The Dense layers of `config.dense_layers` after a pooling of `pooled_dim` (None: none), and their output width."""
    if not config.dense_layers:
        return None, pooled_dim
    if config.dense_layers[0]["in_features"] != pooled_dim:
        raise ValueError(
            f"dense_layers[0] takes {config.dense_layers[0]['in_features']} features but the pooling "
            f"{config.pooling!r} gives {pooled_dim}"
        )
    layers = nn.Sequential(*(DenseLayer(**layer) for layer in config.dense_layers))
    return layers, config.dense_layers[-1]["out_features"]


def load_pretrained_encoder(
    encoder_name_or_path: str, encoder_kwargs: dict[str, Any], encoder_dropout: float | None = None
) -> PreTrainedModel:
    """
    A pretrained `AutoModel` checkpoint as a Siamese encoder (an encoder–decoder's encoder alone), from its safetensors
    weights only; `encoder_dropout` overrides every dropout its config declares. `encoder_kwargs` go to
    `from_pretrained` (its `config` replaced when `encoder_dropout` is given); a file that does not load is named.
    """
    source = str(encoder_name_or_path)
    weights = weights_file(source, encoder_kwargs)
    with clear_loading_errors(source, weights, what="encoder"):
        subfolder = {"subfolder": encoder_kwargs["subfolder"]} if "subfolder" in encoder_kwargs else {}
        encoder_config = encoder_kwargs.get("config") or AutoConfig.from_pretrained(encoder_name_or_path, **subfolder)
        if encoder_dropout is not None:
            encoder_kwargs["config"] = with_dropout(encoder_config, encoder_dropout)
        encoder = encoder_class(encoder_config).from_pretrained(
            encoder_name_or_path, use_safetensors=True, **encoder_kwargs
        )
    check_finite(encoder, weights)
    return encoder


def load_dense_weights(
    dense: nn.Sequential | None,
    dense_weights: Sequence[dict[str, torch.Tensor]] | None,
    dense_layers: Sequence[dict[str, Any]] | None,
) -> None:
    """Load one state dict into each Dense layer, in order; a count that does not match the layers is refused."""
    if dense is None and not dense_weights:
        return
    if dense is None or len(dense_weights or ()) != len(dense):
        raise ValueError(
            f"dense_weights holds {len(dense_weights or ())} state dicts for {len(dense_layers or ())} dense_layers"
        )
    for layer, state in zip(dense, dense_weights or (), strict=True):
        layer.load_state_dict(state)
