"""Multiple-negatives ranking loss (InfoNCE): pick the duplicate among all in-batch candidates."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hfsiamese.losses.base import SiameseLoss, SiameseLossOutput
from hfsiamese.losses.distributed import gather_with_grad, in_batch_candidates, in_batch_negative_mask, world_size


class MultipleNegativesRankingLoss(SiameseLoss):
    r"""
    Cross-entropy of finding each anchor's duplicate among every candidate of the batch.

    With L2-normalised anchors ``A`` and positives ``P`` of ``B`` duplicate pairs, optional explicit
    negatives ``N`` and temperature ``τ``, the logits of anchor ``i`` are
    ``z_ij = s(A_i, P_j) / τ`` for every pair ``j`` and ``z_i,B+k = s(A_i, N_k) / τ`` for every
    explicit negative ``k`` (all ``B`` of them, not only ``N_i``). In-batch entries of the same
    duplicate group (``j ≠ i``, ``group_ids[j] == group_ids[i]``) are true duplicates: set to −∞.
    Explicit negatives are never masked (they carry no group id). Then

    .. math::
        L_{a→b} = -\frac{1}{B} \sum_i \log \frac{e^{z_{ii}}}{\sum_c e^{z_{ic}}}

    A row whose only candidate is its positive contributes ``log 1 = 0`` and still counts in
    ``1/B``. With ``symmetric=True`` the column-wise term is added: for each positive ``P_j``,
    cross-entropy of finding ``A_j`` among all anchors (same-group entries masked; explicit
    negatives are documents, not queries, and are not used in this direction), and
    ``L = (L_{a→b} + L_{b→a}) / 2``.

    Across processes (``gather_across_devices=True``, N > 1 processes of B pairs each): ``P``,
    ``N`` and the group ids of all processes are gathered (and ``A`` too when symmetric); each
    process keeps its own B anchors (and B positives for the b→a term) as rows, its target being
    column ``rank·B + i``, and returns its local mean. Every process has exactly B rows, so the
    mean over processes of the loss values equals the loss of one process on the concatenated N×B
    batch, and the DDP-averaged encoder gradient equals that process's gradient (see
    `distributed`).

    Inputs:
        embeddings_a, embeddings_b: ``(B, d)`` L2-normalised anchors and positives. group_ids
        (optional): ``(B,)``. negatives (optional): ``(B, d)``. labels (optional): must all be 1 —
        this loss trains on duplicate pairs only.

    References:
        van den Oord, Li & Vinyals (2018), "Representation Learning with Contrastive Predictive
        Coding" (InfoNCE); Henderson et al. (2017), "Efficient Natural Language Response
        Suggestion for Smart Reply" (in-batch negatives for a dual encoder).

    Examples:
        >>> loss_fn = MultipleNegativesRankingLoss(temperature=0.05, symmetric=True)
        >>> a = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> p = torch.nn.functional.normalize(a + 0.1 * torch.randn(4, 8), dim=-1)
        >>> loss = loss_fn(a, p, group_ids=torch.tensor([0, 1, 1, 2]))
        >>> bool(loss > 0)
        True
    """

    uses_negatives = True
    uses_in_batch_negatives = True

    def __init__(self, temperature: float = 0.05, symmetric: bool = False, gather_across_devices: bool = True) -> None:
        super().__init__()
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.temperature = temperature
        self.symmetric = symmetric
        self.gather_across_devices = gather_across_devices

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits) -> SiameseLossOutput:
        gathered = self.gather_across_devices and world_size() > 1
        all_b, all_negatives, all_groups, offset = in_batch_candidates(embeddings_b, group_ids, gathered, negatives)

        loss = self._ranking_loss(embeddings_a, all_b, all_negatives, group_ids, all_groups, offset)
        if self.symmetric:
            all_a = gather_with_grad(embeddings_a) if gathered else embeddings_a
            reverse = self._ranking_loss(embeddings_b, all_a, None, group_ids, all_groups, offset)
            loss = (loss + reverse) / 2
        return SiameseLossOutput(loss)

    def _ranking_loss(
        self,
        queries: torch.Tensor,
        documents: torch.Tensor,
        extra_documents: torch.Tensor | None,
        query_groups: torch.Tensor | None,
        document_groups: torch.Tensor | None,
        offset: int,
    ) -> torch.Tensor:
        """Mean cross-entropy of query ``i`` picking document ``offset + i``; same-group documents masked."""
        scores = queries @ documents.T
        mask = in_batch_negative_mask(
            queries.shape[0], scores.shape[1], offset, query_groups, document_groups, scores.device
        )
        rows = torch.arange(queries.shape[0], device=scores.device)
        mask[rows, rows + offset] = True  # the target itself
        scores = scores.masked_fill(~mask, float("-inf"))
        if extra_documents is not None:
            scores = torch.cat([scores, queries @ extra_documents.T], dim=1)
        return F.cross_entropy(scores / self.temperature, rows + offset)
