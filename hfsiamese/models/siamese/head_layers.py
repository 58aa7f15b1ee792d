"""
The layers after a Siamese model's encoder: sentence-transformers' Dense layers on the pooled vector, and the pair
classification head that scores two embeddings together.

This file travels with every checkpoint as remote code (the modeling file imports it relatively), so it imports
only torch.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["DenseLayer", "PairClassificationHead"]


class DenseLayer(nn.Module):
    """A linear layer and its activation, applied to the pooled vector (sentence-transformers' `Dense` module)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, activation: str = "Identity") -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=bias)
        # Only argument-free torch.nn activations (checked by SiameseConfig): a config is data, never code to import.
        self.activation = getattr(nn, activation)()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.linear(x))


class PairClassificationHead(nn.Module):
    """Classifies a pair from `[u, v, |u − v|, u * v]` (Conneau et al., 2017, InferSent features).

    `|u − v|` and `u * v` are symmetric in the two texts, so the head sees how they differ and
    agree per dimension, not just one similarity number.
    """

    def __init__(self, embedding_dim: int, hidden_size: int | None) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = 4 * embedding_dim
        if hidden_size:
            layers += [nn.Linear(width, hidden_size), nn.ReLU()]
            width = hidden_size
        layers.append(nn.Linear(width, 2))
        self.layers = nn.Sequential(*layers)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.layers(torch.cat([u, v, (u - v).abs(), u * v], dim=-1))
