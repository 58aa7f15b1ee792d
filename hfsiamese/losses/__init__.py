"""Losses for Siamese training, one per module, selected by name in `SiameseTrainingArguments.loss`."""

from __future__ import annotations

from typing import Any

from torch import nn

from .hard_negative_triplet import HardNegativeTripletLoss

LOSSES: dict[str, type[nn.Module]] = {
    "hard_negative_triplet": HardNegativeTripletLoss,
}


def get_loss(name: str, **kwargs: Any) -> nn.Module:
    """Build the loss registered under `name` with its keyword arguments."""
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; available: {sorted(LOSSES)}")
    return LOSSES[name](**kwargs)


__all__ = ["HardNegativeTripletLoss", "LOSSES", "get_loss"]
