"""The losses by name: what `SiameseTrainingArguments.loss` selects, and which options each one takes."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from .base import SiameseLoss
from .contrastive import ContrastiveLoss, OnlineContrastiveLoss
from .contrastive_ranking import ContrastiveRankingLoss
from .embedding_distillation import EmbeddingDistillationLoss
from .hard_negative_triplet import HardNegativeTripletLoss
from .matryoshka import MatryoshkaLoss
from .multiple_negatives_ranking import MultipleNegativesRankingLoss
from .triplet import TripletLoss
from .verification_identification import VerificationIdentificationLoss

LOSSES: dict[str, type[SiameseLoss]] = {
    "hard_negative_triplet": HardNegativeTripletLoss,
    "triplet": TripletLoss,
    "contrastive": ContrastiveLoss,
    "online_contrastive": OnlineContrastiveLoss,
    "contrastive_ranking": ContrastiveRankingLoss,
    "multiple_negatives_ranking": MultipleNegativesRankingLoss,
    "verification_identification": VerificationIdentificationLoss,
    "embedding_distillation": EmbeddingDistillationLoss,
    "matryoshka": MatryoshkaLoss,
}

# Every option any registered loss takes, once each: the training arguments hold one field per name
# and the model card reports them, so a new loss option cannot be forgotten in either.
LOSS_OPTIONS: frozenset[str] = frozenset(name for loss_class in LOSSES.values() for name in loss_class.option_names())


# Names that changed, kept working with a FutureWarning so that configs, scripts and saved training
# arguments written before a rename still run: old name -> current name.
RENAMED_LOSSES: dict[str, str] = {"contrastive_triplet": "contrastive_ranking"}
RENAMED_LOSS_OPTIONS: dict[str, str] = {"triplet_weight": "ranking_weight"}


def current_loss_name(name: str) -> str:
    """`name`, or the name it was renamed to (with a FutureWarning naming both)."""
    if name in RENAMED_LOSSES:
        warnings.warn(
            f"loss {name!r} is now called {RENAMED_LOSSES[name]!r} (the old name will be removed): "
            f"--loss {RENAMED_LOSSES[name]}",
            FutureWarning,
            stacklevel=3,
        )
        return RENAMED_LOSSES[name]
    return name


def current_loss_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` with renamed option names replaced (a FutureWarning for each); an option given twice is an error."""
    current = dict(options)
    for old, new in RENAMED_LOSS_OPTIONS.items():
        if old not in current:
            continue
        if new in current:
            raise ValueError(f"{old} is the old name of {new}: give {new} only")
        warnings.warn(f"loss option {old!r} is now called {new!r} (the old name will be removed)", FutureWarning, stacklevel=3)
        current[new] = current.pop(old)
    return current


def get_loss(name: str, **kwargs: Any) -> SiameseLoss:
    """Build the loss registered under `name` with its keyword arguments (renamed names still accepted)."""
    name, kwargs = current_loss_name(name), current_loss_options(kwargs)
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; available: {sorted(LOSSES)}")
    return LOSSES[name](**kwargs)


def loss_name(loss: SiameseLoss) -> str | None:
    """The name `loss` is registered under (its exact class), or None for a loss built elsewhere."""
    return next((name for name, loss_class in LOSSES.items() if type(loss) is loss_class), None)


def loss_kwargs_for(name: str, **all_options: Any) -> dict[str, Any]:
    """
    The options among ``all_options`` that loss ``name`` takes, for ``get_loss(name, **...)``.

    The trainer holds one flat set of options (margin, temperature, ...) for every loss; each loss
    takes only some (a wrapping loss, `matryoshka`, also those of the loss it wraps). An option that
    no registered loss takes is a typo and raises, so nothing is dropped silently except what the
    chosen loss does not use.
    """
    name, all_options = current_loss_name(name), current_loss_options(all_options)
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; available: {sorted(LOSSES)}")
    unknown = sorted(set(all_options) - LOSS_OPTIONS)
    if unknown:
        raise ValueError(f"no loss takes the options {unknown}; known options: {sorted(LOSS_OPTIONS)}")
    accepted = LOSSES[name].accepted_options(all_options)
    return {key: value for key, value in all_options.items() if key in accepted}


__all__ = [
    "LOSSES",
    "LOSS_OPTIONS",
    "RENAMED_LOSSES",
    "RENAMED_LOSS_OPTIONS",
    "current_loss_name",
    "current_loss_options",
    "get_loss",
    "loss_kwargs_for",
    "loss_name",
]
