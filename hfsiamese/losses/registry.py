"""The losses by name: what `SiameseTrainingArguments.loss` selects, and which options each one takes."""

from __future__ import annotations

from typing import Any

from hfsiamese.losses.base import SiameseLoss
from hfsiamese.losses.embedding_losses import (
    EMBEDDING_LOSSES,
    RENAMED_LOSS_OPTIONS,
    RENAMED_LOSSES,
    current_loss_name,
    current_loss_options,
    registered_class,
    registered_name,
)
from hfsiamese.losses.listwise_kl import ListwiseKLLoss
from hfsiamese.losses.margin_mse import MarginMSELoss
from hfsiamese.losses.matryoshka import NAME as MATRYOSHKA, MatryoshkaLoss

# The losses on a teacher's scores of each row's candidates (the `teacher_scores` column): not wrapped by `matryoshka`.
TEACHER_SCORE_LOSSES: dict[str, type[SiameseLoss]] = {"margin_mse": MarginMSELoss, "listwise_kl": ListwiseKLLoss}

LOSSES: dict[str, type[SiameseLoss]] = {**EMBEDDING_LOSSES, **TEACHER_SCORE_LOSSES, MATRYOSHKA: MatryoshkaLoss}

# Every option any registered loss takes, once each: the training arguments hold one field per name
# and the model card reports them, so a new loss option cannot be forgotten in either.
LOSS_OPTIONS: frozenset[str] = frozenset(name for loss_class in LOSSES.values() for name in loss_class.option_names())


def get_loss(name: str, **kwargs: Any) -> SiameseLoss:
    """Build the loss registered under `name` with its keyword arguments (renamed names still accepted)."""
    name, kwargs = current_loss_name(name), current_loss_options(kwargs)
    return registered_class(LOSSES, name)(**kwargs)


def loss_name(loss: SiameseLoss) -> str | None:
    """The name `loss` is registered under (its exact class), or None for a loss built elsewhere."""
    return registered_name(LOSSES, loss)


def loss_kwargs_for(name: str, **all_options: Any) -> dict[str, Any]:
    """
    The options among ``all_options`` that loss ``name`` takes, for ``get_loss(name, **...)``.

    The trainer holds one flat set of options (margin, temperature, ...) for every loss; each loss
    takes only some (a wrapping loss, `matryoshka`, also those of the loss it wraps). An option that
    no registered loss takes is a typo and raises, so nothing is dropped silently except what the
    chosen loss does not use.
    """
    name, all_options = current_loss_name(name), current_loss_options(all_options)
    loss_class = registered_class(LOSSES, name)
    unknown = sorted(set(all_options) - LOSS_OPTIONS)
    if unknown:
        raise ValueError(f"no loss takes the options {unknown}; known options: {sorted(LOSS_OPTIONS)}")
    accepted = loss_class.accepted_options(all_options)
    return {key: value for key, value in all_options.items() if key in accepted}


__all__ = [
    "LOSSES",
    "LOSS_OPTIONS",
    "RENAMED_LOSSES",
    "RENAMED_LOSS_OPTIONS",
    "TEACHER_SCORE_LOSSES",
    "current_loss_name",
    "current_loss_options",
    "get_loss",
    "loss_kwargs_for",
    "loss_name",
]
