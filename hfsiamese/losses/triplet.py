"""Triplet loss on (anchor, positive, explicit negative), optionally with in-batch negatives too."""

from __future__ import annotations

import torch

from hfsiamese.losses.base import SiameseLoss, SiameseLossOutput, require_non_negative
from hfsiamese.losses.distributed import global_mean, in_batch_candidates, in_batch_negative_mask, world_size
from hfsiamese.losses.hard_negative_triplet import negative_classes


class TripletLoss(SiameseLoss):
    r"""
    The plain triplet loss: each anchor must be closer to its duplicate than to its negative by α.

    With L2-normalised anchors ``A``, positives ``P`` (duplicates of the anchors) and explicit
    negatives ``N`` (row ``i`` a non-duplicate of anchor ``i``), ``s`` the cosine similarity and
    margin ``α``:

    .. math::
        L = \frac{1}{B} \sum_i \max\big(0,\; s(A_i, N_i) - s(A_i, P_i) + α\big)

    With ``in_batch_negatives=True`` the negative set of anchor ``i`` is ``{N_i}`` (when
    ``negatives`` are given) plus every other pair's positive ``P_j`` (``j ≠ i``) of another
    duplicate group (``group_ids[j] ≠ group_ids[i]``); other anchors' explicit negatives ``N_j``
    are not used. The loss is the mean of the hinge over all (anchor, negative) terms, so anchors
    with more negatives weigh more:

    .. math::
        L = \frac{1}{\sum_i |\mathcal N_i|} \sum_i \sum_{n \in \mathcal N_i}
            \max\big(0,\; s(A_i, n) - s(A_i, P_i) + α\big)

    Easy terms (hinge 0) stay in the mean: this is the "batch-all" triplet loss. In this mode
    ``negatives`` are optional; without them and with every pair of one group there is no term,
    which is an error. Without in-batch negatives ``group_ids`` are unused.

    The statistics (`compute`) count the (anchor, negative) terms of this process by class:
    ``negatives_easy`` (``s(A,N) + α ≤ s(A,P)``), ``negatives_semi_hard``
    (``s(A,N) < s(A,P) < s(A,N) + α``), ``negatives_hard`` (``s(A,N) ≥ s(A,P)``), and
    ``negatives_used`` (all of them, the denominator above).

    Across processes (``in_batch_negatives=True``, ``gather_across_devices=True``, N > 1): the
    positives and group ids of all processes are gathered, each process keeps its own anchors and
    explicit negatives and returns ``N · (its sum of hinge terms) / (number of terms over all
    processes)``; the mean over processes of the loss values and the DDP-averaged gradient then
    equal the loss and gradient of one process on the concatenated batch. Without in-batch
    negatives every process has B terms, and the plain local mean already has that property.

    Inputs:
        embeddings_a, embeddings_b: ``(B, d)`` L2-normalised anchors and positives. negatives:
        ``(B, d)``, required unless ``in_batch_negatives``. group_ids (optional): ``(B,)``.
        labels (optional): must all be 1 — this loss trains on duplicate pairs only.

    Reference:
        Schroff, Kalenichenko & Philbin (2015), "FaceNet: A Unified Embedding for Face Recognition
        and Clustering".

    Examples:
        >>> loss_fn = TripletLoss(margin=0.25)
        >>> a = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> p = torch.nn.functional.normalize(a + 0.1 * torch.randn(4, 8), dim=-1)
        >>> n = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> output = loss_fn.compute(a, p, negatives=n)
        >>> int(output.stats["negatives_used"])
        4
    """

    uses_negatives = True
    negatives_optional_with = "in_batch_negatives=True"

    def __init__(
        self, margin: float = 0.25, in_batch_negatives: bool = False, gather_across_devices: bool = True
    ) -> None:
        super().__init__()
        require_non_negative("margin", margin)
        self.margin = margin
        self.in_batch_negatives = in_batch_negatives
        self.gather_across_devices = gather_across_devices

    @property
    def requires_negatives(self) -> bool:
        return not self.in_batch_negatives

    @property
    def uses_in_batch_negatives(self) -> bool:
        return self.in_batch_negatives

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits) -> SiameseLossOutput:
        batch_size = embeddings_a.shape[0]
        gathered = self.in_batch_negatives and self.gather_across_devices and world_size() > 1
        columns, masks = [], []
        if self.in_batch_negatives:
            candidates_b, _, candidate_groups, offset = in_batch_candidates(embeddings_b, group_ids, gathered)
            scores = embeddings_a @ candidates_b.T
            rows = torch.arange(batch_size, device=scores.device)
            positives = scores[rows, rows + offset]
            columns.append(scores)
            masks.append(
                in_batch_negative_mask(batch_size, scores.shape[1], offset, group_ids, candidate_groups, scores.device)
            )
        else:
            positives = (embeddings_a * embeddings_b).sum(dim=1)
        if negatives is not None:
            columns.append((embeddings_a * negatives).sum(dim=1, keepdim=True))
            masks.append(torch.ones(batch_size, 1, dtype=torch.bool, device=embeddings_a.device))
        negative_scores, mask = torch.cat(columns, dim=1), torch.cat(masks, dim=1)
        if not mask.any():
            raise ValueError("no negatives in this batch: every pair belongs to the same duplicate group")

        stats = self._term_counts(negative_scores.detach(), positives.detach(), mask)
        hinge = torch.relu(negative_scores - positives.view(-1, 1) + self.margin)
        return SiameseLossOutput(global_mean((hinge * mask).sum(), mask.sum(), gathered), stats)

    def _term_counts(
        self, scores: torch.Tensor, positives: torch.Tensor, mask: torch.Tensor
    ) -> dict[str, torch.Tensor]:
        easy, semi_hard, hard = negative_classes(scores, positives, mask, self.margin)
        counts = (easy.sum(), semi_hard.sum(), hard.sum(), mask.sum())
        names = ("negatives_easy", "negatives_semi_hard", "negatives_hard", "negatives_used")
        return dict(zip(names, counts))
