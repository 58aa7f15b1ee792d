"""The losses on embeddings by name, and the names that changed: the table a wrapping loss looks its inner loss up in.

`registry` adds the wrapper (`matryoshka`) to this table for `--loss`; the wrapper itself reads only this
one, so the two never import each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hfsiamese.losses.base import SiameseLoss
from hfsiamese.losses.contrastive import ContrastiveLoss, OnlineContrastiveLoss
from hfsiamese.losses.contrastive_ranking import ContrastiveRankingLoss
from hfsiamese.losses.embedding_distillation import EmbeddingDistillationLoss
from hfsiamese.losses.hard_negative_triplet import HardNegativeTripletLoss
from hfsiamese.losses.multiple_negatives_ranking import MultipleNegativesRankingLoss
from hfsiamese.losses.triplet import TripletLoss
from hfsiamese.losses.verification_identification import VerificationIdentificationLoss
from hfsiamese.utils.deprecation import DEPRECATIONS, warn_deprecated

# Every loss on embeddings (or the head's logits) by its name: what a wrapping loss (`matryoshka`) may wrap.
EMBEDDING_LOSSES: dict[str, type[SiameseLoss]] = {
    "hard_negative_triplet": HardNegativeTripletLoss,
    "triplet": TripletLoss,
    "contrastive": ContrastiveLoss,
    "online_contrastive": OnlineContrastiveLoss,
    "contrastive_ranking": ContrastiveRankingLoss,
    "multiple_negatives_ranking": MultipleNegativesRankingLoss,
    "verification_identification": VerificationIdentificationLoss,
    "embedding_distillation": EmbeddingDistillationLoss,
}

# Names that changed, kept working with a FutureWarning so that configs, scripts and saved training
# arguments written before a rename still run: old name -> current name (rows of the deprecation table).
RENAMED_LOSSES: dict[str, str] = {row.old: row.new for row in DEPRECATIONS if row.kind == "loss"}
RENAMED_LOSS_OPTIONS: dict[str, str] = {row.old: row.new for row in DEPRECATIONS if row.kind == "loss option"}


def current_loss_name(name: str) -> str:
    """`name`, or the name it was renamed to (with a FutureWarning naming both)."""
    if name in RENAMED_LOSSES:
        return warn_deprecated("loss", name, stacklevel=4)
    return name


def current_loss_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """`options` with renamed option names replaced (a FutureWarning for each); an option given twice is an error."""
    current = dict(options)
    for old, new in RENAMED_LOSS_OPTIONS.items():
        if old not in current:
            continue
        if new in current:
            raise ValueError(f"{old} is the old name of {new}: give {new} only")
        warn_deprecated("loss option", old, stacklevel=4)
        current[new] = current.pop(old)
    return current


def registered_class(table: Mapping[str, type[SiameseLoss]], name: str) -> type[SiameseLoss]:
    """The loss class `table` holds under `name` (a current name); an unknown name is a ValueError listing the known."""
    if name not in table:
        raise ValueError(f"unknown loss {name!r}; available: {sorted(table)}")
    return table[name]


def registered_name(table: Mapping[str, type[SiameseLoss]], loss: SiameseLoss) -> str | None:
    """The name `loss` is registered under in `table` (its exact class), or None for a loss built elsewhere."""
    return next((name for name, loss_class in table.items() if type(loss) is loss_class), None)


def get_embedding_loss(name: str, **kwargs: Any) -> SiameseLoss:
    """Build the loss on embeddings registered under `name` (renamed names still accepted)."""
    name, kwargs = current_loss_name(name), current_loss_options(kwargs)
    return registered_class(EMBEDDING_LOSSES, name)(**kwargs)


def embedding_loss_name(loss: SiameseLoss) -> str | None:
    """The name `loss` is registered under (its exact class), or None for a loss built elsewhere."""
    return registered_name(EMBEDDING_LOSSES, loss)


__all__ = [
    "EMBEDDING_LOSSES",
    "RENAMED_LOSSES",
    "RENAMED_LOSS_OPTIONS",
    "current_loss_name",
    "current_loss_options",
    "embedding_loss_name",
    "get_embedding_loss",
    "registered_class",
    "registered_name",
]
