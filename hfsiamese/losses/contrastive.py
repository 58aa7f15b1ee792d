"""Contrastive losses on labelled pairs: pull duplicates together, push non-duplicates past a margin."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hfsiamese.losses.base import SiameseLoss, SiameseLossOutput, require_non_negative


class ContrastiveLoss(SiameseLoss):
    r"""
    The contrastive (Siamese) loss on labelled pairs, with the cosine distance.

    For pairs ``(a_i, b_i)`` with label ``y_i`` (1 duplicate, 0 not), ``d_i = 1 − cos(a_i, b_i)``
    (in ``[0, 2]``) and margin ``m``:

    .. math::
        L = \frac{1}{B} \sum_i \tfrac12 \Big[ y_i\, d_i^2 + (1 - y_i) \max(0, m - d_i)^2 \Big]

    Duplicates are pulled to distance 0; non-duplicates are pushed until they are ``m`` apart and
    then left alone. ``group_ids`` are ignored (pairs are scored on their own, no in-batch
    negatives); under DDP the local means average to the mean over all processes' pairs.

    Inputs:
        embeddings_a, embeddings_b: ``(B, d)`` embeddings of the two sides (L2-normalised by the
        model; the cosine does not need it). labels: ``(B,)`` 0/1, required.

    Reference:
        Hadsell, Chopra & LeCun (2006), "Dimensionality Reduction by Learning an Invariant Mapping".

    Examples:
        >>> loss_fn = ContrastiveLoss(margin=0.5)
        >>> a = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> b = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> loss = loss_fn(a, b, labels=torch.tensor([1, 0, 1, 0]))
    """

    requires_labels = True

    def __init__(self, margin: float = 0.5) -> None:
        super().__init__()
        require_non_negative("margin", margin)
        self.margin = margin

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits) -> SiameseLossOutput:
        return SiameseLossOutput(pair_terms(embeddings_a, embeddings_b, labels == 1, self.margin).mean())


class OnlineContrastiveLoss(ContrastiveLoss):
    r"""
    The contrastive loss restricted to the hard pairs of the batch.

    With the terms ``ℓ_i`` of `ContrastiveLoss`, the batch's positive (``y = 1``) and negative
    (``y = 0``) pairs, a pair is kept when it is

    - a hard positive: ``y_i = 1`` and ``d_i > min{d_j : y_j = 0}`` (farther apart than the
      closest non-duplicate pair), or
    - a hard negative: ``y_i = 0`` and ``d_i < max{d_j : y_j = 1}`` (closer than the farthest
      duplicate pair).

    A batch without negative pairs has no hard positive (the minimum of nothing is +∞), one without
    positive pairs no hard negative. With ``K`` the kept pairs:

    .. math::
        L = \frac{1}{|K|} \sum_{i \in K} ℓ_i \qquad (L = 0 \text{ when } K = ∅)

    i.e. the mean of the kept terms; when every pair is hard it equals `ContrastiveLoss`. The empty
    case returns a zero that stays on the graph, so backward (and DDP) still run. The mining is
    per process: each process keeps the hard pairs of its own batch. Statistics (`compute`):
    ``hard_positives``, ``hard_negatives``, ``pairs_used``. ``group_ids`` are ignored.

    Inputs:
        embeddings_a, embeddings_b: ``(B, d)``. labels: ``(B,)`` 0/1, required.

    Reference:
        Hadsell, Chopra & LeCun (2006) for the loss; hard-pair mining after Hermans, Beyer & Leibe
        (2017), "In Defense of the Triplet Loss for Person Re-Identification".

    Examples:
        >>> loss_fn = OnlineContrastiveLoss(margin=0.5)
        >>> a = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
        >>> b = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
        >>> output = loss_fn.compute(a, b, labels=torch.tensor([1, 0, 1, 0, 1, 0]))
        >>> sorted(output.stats)
        ['hard_negatives', 'hard_positives', 'pairs_used']
    """

    # Same margin, inputs and pair type as ContrastiveLoss; only the choice of pairs differs.

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits) -> SiameseLossOutput:
        is_duplicate = labels == 1
        distances = cosine_distance(embeddings_a, embeddings_b)
        with torch.no_grad():
            closest_negative = distances.masked_fill(is_duplicate, float("inf")).min()
            farthest_positive = distances.masked_fill(~is_duplicate, float("-inf")).max()
            hard_positive = is_duplicate & (distances > closest_negative)
            hard_negative = ~is_duplicate & (distances < farthest_positive)
            kept = hard_positive | hard_negative
        stats = {"hard_positives": hard_positive.sum(), "hard_negatives": hard_negative.sum(), "pairs_used": kept.sum()}
        terms = _terms_from_distances(distances, is_duplicate, self.margin)
        return SiameseLossOutput((terms * kept).sum() / kept.sum().clamp(min=1), stats)


def cosine_distance(embeddings_a: torch.Tensor, embeddings_b: torch.Tensor) -> torch.Tensor:
    """``1 − cos(a_i, b_i)`` per pair."""
    return 1 - F.cosine_similarity(embeddings_a, embeddings_b, dim=1)


def pair_terms(
    embeddings_a: torch.Tensor, embeddings_b: torch.Tensor, is_duplicate: torch.Tensor, margin: float
) -> torch.Tensor:
    """Per-pair contrastive terms ``½[y d² + (1 − y) max(0, m − d)²]``."""
    return _terms_from_distances(cosine_distance(embeddings_a, embeddings_b), is_duplicate, margin)


def _terms_from_distances(distances: torch.Tensor, is_duplicate: torch.Tensor, margin: float) -> torch.Tensor:
    return 0.5 * torch.where(is_duplicate, distances.pow(2), torch.relu(margin - distances).pow(2))
