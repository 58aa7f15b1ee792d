"""
Losses for Siamese training, one per module, selected by name in `SiameseTrainingArguments.loss`.

Every loss is called as ``loss(embeddings_a, embeddings_b, *, labels=None, group_ids=None,
negatives=None)`` and returns a scalar; its class attributes ``pair_type`` ("duplicates" or
"labelled") and ``uses_negatives`` say what data it trains on, and ``last_stats`` holds the counts
of its last forward (empty for losses that do not choose negatives).
"""

from __future__ import annotations

import inspect
from typing import Any

from torch import nn

from .contrastive import ContrastiveLoss, OnlineContrastiveLoss
from .contrastive_triplet import ContrastiveTripletLoss
from .hard_negative_triplet import HardNegativeTripletLoss
from .multiple_negatives_ranking import MultipleNegativesRankingLoss
from .triplet import TripletLoss
from .verification_identification import VerificationIdentificationLoss

LOSSES: dict[str, type[nn.Module]] = {
    "hard_negative_triplet": HardNegativeTripletLoss,
    "triplet": TripletLoss,
    "contrastive": ContrastiveLoss,
    "online_contrastive": OnlineContrastiveLoss,
    "contrastive_triplet": ContrastiveTripletLoss,
    "multiple_negatives_ranking": MultipleNegativesRankingLoss,
    "verification_identification": VerificationIdentificationLoss,
}


def get_loss(name: str, **kwargs: Any) -> nn.Module:
    """Build the loss registered under `name` with its keyword arguments."""
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; available: {sorted(LOSSES)}")
    return LOSSES[name](**kwargs)


def _init_options(loss_class: type[nn.Module]) -> set[str]:
    parameters = inspect.signature(loss_class.__init__).parameters
    return {name for name in parameters if name != "self"}


def loss_kwargs_for(name: str, **all_options: Any) -> dict[str, Any]:
    """
    The options among ``all_options`` that loss ``name`` takes, for ``get_loss(name, **...)``.

    The trainer holds one flat set of options (margin, temperature, ...) for every loss; each loss
    takes only some. An option that no registered loss takes is a typo and raises, so nothing is
    dropped silently except what the chosen loss does not use.
    """
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; available: {sorted(LOSSES)}")
    known = set().union(*(_init_options(loss_class) for loss_class in LOSSES.values()))
    unknown = sorted(set(all_options) - known)
    if unknown:
        raise ValueError(f"no loss takes the options {unknown}; known options: {sorted(known)}")
    accepted = _init_options(LOSSES[name])
    return {key: value for key, value in all_options.items() if key in accepted}


__all__ = [
    "LOSSES",
    "ContrastiveLoss",
    "ContrastiveTripletLoss",
    "HardNegativeTripletLoss",
    "MultipleNegativesRankingLoss",
    "OnlineContrastiveLoss",
    "TripletLoss",
    "VerificationIdentificationLoss",
    "get_loss",
    "loss_kwargs_for",
]
