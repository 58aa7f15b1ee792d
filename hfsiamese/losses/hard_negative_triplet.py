"""In-batch hard-negative triplet loss (mean negative + closest negative)."""

from __future__ import annotations

import torch
from torch import nn


class HardNegativeTripletLoss(nn.Module):
    r"""
    Triplet loss over a batch of duplicate pairs where every other pair's second text is a negative.

    With L2-normalised embeddings ``A`` (first texts) and ``P`` (second texts) of a batch of ``B``
    duplicate pairs, ``S = A Pᵀ`` holds cosine similarities; ``S_ii`` are the positives and the
    off-diagonal entries of row ``i`` the negatives of anchor ``i``. For margin ``α``:

    .. math::
        \text{mean\_neg}_i = \operatorname{mean}_{j \ne i} S_{ij}, \qquad
        \text{closest\_neg}_i = \max_{j \ne i} S_{ij}

        L = \frac{1}{B} \sum_i \Big[ \max(0, α - S_{ii} + \text{mean\_neg}_i)
                                    + \max(0, α - S_{ii} + \text{closest\_neg}_i) \Big]

    The mean term gives a smooth signal from all negatives early in training; the closest term
    focuses on the hardest one. Either can be switched off. Entries ``S_ij`` whose pairs share a
    duplicate group (``group_ids[i] == group_ids[j]``) are true duplicates, not negatives, and are
    left out of both terms; an anchor left with no negative does not contribute.

    Inputs:
        embeddings_a: ``(B, d)`` L2-normalised anchors. embeddings_b: ``(B, d)`` L2-normalised
        positives. group_ids (optional): ``(B,)`` duplicate-group id of each pair.

    Reference:
        The Siamese-network design of the seeds' Coursera NLP specialisation ("Question duplicates",
        TripletLossFn with mean and closest negatives), after Hermans, Beyer & Leibe (2017),
        "In Defense of the Triplet Loss for Person Re-Identification" (batch-hard mining).

    Example:
        >>> loss_fn = HardNegativeTripletLoss(margin=0.25)
        >>> a = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> p = torch.nn.functional.normalize(a + 0.1 * torch.randn(4, 8), dim=-1)
        >>> loss = loss_fn(a, p)
    """

    def __init__(self, margin: float = 0.25, use_mean_negative: bool = True, use_closest_negative: bool = True) -> None:
        super().__init__()
        if not (use_mean_negative or use_closest_negative):
            raise ValueError("HardNegativeTripletLoss needs at least one of use_mean_negative / use_closest_negative")
        if margin < 0:
            raise ValueError(f"margin must be non-negative, got {margin}")
        self.margin = margin
        self.use_mean_negative = use_mean_negative
        self.use_closest_negative = use_closest_negative

    def forward(
        self,
        embeddings_a: torch.Tensor,
        embeddings_b: torch.Tensor,
        group_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if embeddings_a.shape != embeddings_b.shape or embeddings_a.dim() != 2:
            raise ValueError(
                f"embeddings_a and embeddings_b must both be (batch, dim), got {tuple(embeddings_a.shape)} "
                f"and {tuple(embeddings_b.shape)}"
            )
        batch_size = embeddings_a.shape[0]
        if batch_size < 2:
            raise ValueError("the in-batch triplet loss needs at least 2 pairs per batch (batch size 1 has no negatives)")
        scores = embeddings_a @ embeddings_b.T
        positives = scores.diagonal()
        negative_mask = ~torch.eye(batch_size, dtype=torch.bool, device=scores.device)
        if group_ids is not None:
            negative_mask &= group_ids.view(-1, 1) != group_ids.view(1, -1)
        has_negative = negative_mask.any(dim=1)
        if not has_negative.any():
            raise ValueError("no negatives in this batch: every pair belongs to the same duplicate group")

        losses = torch.zeros_like(positives)
        if self.use_mean_negative:
            counts = negative_mask.sum(dim=1).clamp(min=1)
            mean_negative = (scores * negative_mask).sum(dim=1) / counts
            losses = losses + torch.relu(self.margin - positives + mean_negative)
        if self.use_closest_negative:
            closest_negative = scores.masked_fill(~negative_mask, float("-inf")).max(dim=1).values
            losses = losses + torch.relu(self.margin - positives + closest_negative)
        return losses[has_negative].mean()

    def extra_repr(self) -> str:
        return (
            f"margin={self.margin}, use_mean_negative={self.use_mean_negative}, "
            f"use_closest_negative={self.use_closest_negative}"
        )
