"""Evaluation at the smaller sizes a Matryoshka loss trains: what cutting the embeddings would cost, at every evaluation."""

from __future__ import annotations

from typing import Any

import torch

from hfsiamese.losses import SiameseLoss
from hfsiamese.losses.matryoshka import MatryoshkaLoss, truncate_output


def truncated_evaluation_dims(loss: SiameseLoss, model: Any) -> tuple[int, ...]:
    """
    The sizes below the model's own that evaluation also reports: those the loss trains when it is a
    `MatryoshkaLoss`, else none. Checks them against the model's embedding size now, so that a dimension
    too large fails before training rather than at its first step.
    """
    if not isinstance(loss, MatryoshkaLoss):
        return ()
    size = model.config.sentence_embedding_dim
    return tuple(dim for dim in loss.resolve_dims(size) if dim < size)


def truncated_scores(outputs: Any, dims: tuple[int, ...]) -> list[torch.Tensor]:
    """Each pair's cosine similarity at each of `dims` (the embeddings cut and L2-normalised again)."""
    return [truncate_output(outputs, dim).similarity for dim in dims]


__all__ = ["truncated_evaluation_dims", "truncated_scores"]
