"""Contrastive loss on labelled pairs plus the in-batch hard-negative triplet loss on their duplicates."""

from __future__ import annotations

from .base import SiameseLoss, SiameseLossOutput, require_non_negative
from .contrastive import pair_terms
from .hard_negative_triplet import HardNegativeTripletLoss


class ContrastiveTripletLoss(SiameseLoss):
    r"""
    Both kinds of negatives a labelled duplicate-question batch offers, in one loss.

    For labelled pairs ``(a_i, b_i, y_i)``, with `ContrastiveLoss` ``C`` (margin ``m``) over all
    pairs and `HardNegativeTripletLoss` ``T`` (margin ``α``, mean and closest negative) over the
    duplicate rows ``D = {i : y_i = 1}`` — anchor ``a_i``, positive ``b_i``, negatives the other
    duplicate rows' ``b_j`` (same-group entries masked):

    .. math::
        L = C(a, b, y) + w \cdot T(a_D, b_D)

    The labelled non-duplicates are QQP's hard, same-topic negatives, which only ``C`` sees; the
    in-batch negatives give every duplicate ``|D| − 1`` more. ``T`` is left out (0) for a batch with
    fewer than two duplicate rows, or whose duplicates all share one group. ``T`` is computed per
    process (no gathering: the number of duplicate rows differs between processes); under DDP the
    gradients are averaged as usual. Statistics (`compute`): ``contrastive``, ``triplet`` (the two
    terms) and ``duplicate_rows``.

    Inputs:
        embeddings_a, embeddings_b: ``(B, d)`` L2-normalised. labels: ``(B,)`` 0/1, required.
        group_ids (optional): ``(B,)`` duplicate group of each pair.

    Reference:
        Hadsell, Chopra & LeCun (2006) for ``C``; Hermans, Beyer & Leibe (2017) and the seeds'
        TripletLossFn for ``T``. Training one encoder on both objectives follows the multi-task
        recipe sentence-transformers documents for Quora duplicates.

    Example:
        >>> loss_fn = ContrastiveTripletLoss(margin=0.5, triplet_margin=0.25)
        >>> a = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
        >>> b = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
        >>> loss = loss_fn(a, b, labels=torch.tensor([1, 0, 1, 1, 0, 1]))
    """

    requires_labels = True
    uses_in_batch_negatives = True

    def __init__(self, margin: float = 0.5, triplet_margin: float = 0.25, triplet_weight: float = 1.0) -> None:
        super().__init__()
        require_non_negative("margin", margin)
        require_non_negative("triplet_weight", triplet_weight)
        self.triplet = HardNegativeTripletLoss(margin=triplet_margin, gather_across_devices=False)
        self.margin = margin
        self.triplet_weight = triplet_weight

    @property
    def triplet_margin(self) -> float:
        return self.triplet.margin

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits) -> SiameseLossOutput:
        is_duplicate = labels == 1
        # The labelled terms directly: this loss's inputs are checked already (`compute`).
        contrastive = pair_terms(embeddings_a, embeddings_b, is_duplicate, self.margin).mean()
        rows = is_duplicate.nonzero().squeeze(1)
        groups = group_ids[rows] if group_ids is not None else None
        triplet = contrastive.new_zeros(())
        if rows.numel() >= 2 and (groups is None or bool((groups != groups[0]).any())):
            triplet = self.triplet(embeddings_a[rows], embeddings_b[rows], group_ids=groups)
        stats = {"contrastive": contrastive.detach(), "triplet": triplet.detach(), "duplicate_rows": is_duplicate.sum()}
        return SiameseLossOutput(contrastive + self.triplet_weight * triplet, stats)
