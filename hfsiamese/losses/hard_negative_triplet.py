"""In-batch hard-negative triplet loss (mean negative + closest negative), with negative selection."""

from __future__ import annotations

import torch

from hfsiamese.losses.base import SiameseLoss, SiameseLossOutput, require_non_negative, require_one_of
from hfsiamese.losses.distributed import global_mean, in_batch_candidates, in_batch_negative_mask, world_size

NEGATIVE_SELECTIONS = ("all", "semi_hard", "hard")


class HardNegativeTripletLoss(SiameseLoss):
    r"""
    Triplet loss over a batch of duplicate pairs where every other pair's second text is a negative.

    With L2-normalised embeddings ``A`` (first texts) and ``P`` (second texts) of a batch of ``B``
    duplicate pairs, ``S = A Pᵀ`` holds cosine similarities; ``S_ii`` are the positives and the
    off-diagonal entries of row ``i`` the candidate negatives of anchor ``i``. Entries ``S_ij``
    whose pairs share a duplicate group (``group_ids[i] == group_ids[j]``) are true duplicates and
    never candidates. An explicit negative ``N_i`` adds the candidate ``s(A_i, N_i)`` to row ``i``
    only (one more column of ``S``). ``negative_selection`` keeps, among the candidates ``n``:

    - ``"all"``: every candidate;
    - ``"semi_hard"``: ``n < S_ii < n + α`` (farther than the positive, but inside the margin);
    - ``"hard"``: ``n ≥ S_ii`` (at least as close as the positive; ties count as hard).

    With ``K_i`` the kept negatives of row ``i`` and ``R`` the rows where ``K_i`` is not empty:

    .. math::
        \text{mean\_neg}_i = \operatorname{mean}_{n \in K_i} n, \qquad
        \text{closest\_neg}_i = \max_{n \in K_i} n

        L = \frac{1}{|R|} \sum_{i \in R} \Big[ \max(0, α - S_{ii} + \text{mean\_neg}_i)
                                            + \max(0, α - S_{ii} + \text{closest\_neg}_i) \Big]

    The mean term gives a smooth signal from all kept negatives early in training; the closest term
    focuses on the hardest one. Either can be switched off. Rows with no kept negative contribute
    nothing; if no row keeps one the loss is 0 (on the graph). A batch with no candidate at all
    (every pair in one duplicate group, no explicit negatives) is an error.

    The statistics (`compute`) count the candidates of this process's rows by class, with margin α: ``negatives_easy`` (``n + α ≤ S_ii``), ``negatives_semi_hard``, ``negatives_hard``,
    plus ``negatives_used`` (kept) and ``anchors_used`` (``|R|``).

    Across processes (``gather_across_devices=True``, N > 1 processes of B pairs each): the
    candidates (``P`` and group ids) of all processes are gathered, so anchor ``i`` sees N×B − 1
    in-batch candidates, and each process returns ``N · Σ_{i local, i∈R} ℓ_i / |R_all|`` with
    ``|R_all|`` the number of contributing rows over all processes. Then the mean over processes
    of the loss values, and the DDP-averaged gradient of the encoder parameters, equal the loss
    and the gradient of one process on the concatenated N×B batch (see `distributed`).

    Inputs:
        embeddings_a: ``(B, d)`` L2-normalised anchors. embeddings_b: ``(B, d)`` L2-normalised
        positives. group_ids (optional): ``(B,)`` duplicate-group id of each pair. negatives
        (optional): ``(B, d)``, row ``i`` a non-duplicate of anchor ``i``. labels (optional): must
        all be 1 — this loss trains on duplicate pairs only.

    Reference:
        The Siamese-network design of the seeds' Coursera NLP specialisation ("Question duplicates",
        TripletLossFn with mean and closest negatives), after Hermans, Beyer & Leibe (2017),
        "In Defense of the Triplet Loss for Person Re-Identification" (batch-hard mining);
        semi-hard negatives after Schroff, Kalenichenko & Philbin (2015), "FaceNet".

    Examples:
        >>> loss_fn = HardNegativeTripletLoss(margin=0.25, negative_selection="semi_hard")
        >>> a = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> p = torch.nn.functional.normalize(a + 0.1 * torch.randn(4, 8), dim=-1)
        >>> output = loss_fn.compute(a, p, group_ids=torch.tensor([0, 1, 1, 2]))
        >>> sorted(output.stats)[:2]
        ['anchors_used', 'negatives_easy']
    """

    uses_negatives = True
    uses_in_batch_negatives = True

    def __init__(
        self,
        margin: float = 0.25,
        use_mean_negative: bool = True,
        use_closest_negative: bool = True,
        negative_selection: str = "all",
        gather_across_devices: bool = True,
    ) -> None:
        super().__init__()
        if not (use_mean_negative or use_closest_negative):
            raise ValueError("HardNegativeTripletLoss needs at least one of use_mean_negative / use_closest_negative")
        require_non_negative("margin", margin)
        require_one_of("negative_selection", negative_selection, NEGATIVE_SELECTIONS)
        self.margin = margin
        self.use_mean_negative = use_mean_negative
        self.use_closest_negative = use_closest_negative
        self.negative_selection = negative_selection
        self.gather_across_devices = gather_across_devices

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits) -> SiameseLossOutput:
        batch_size = embeddings_a.shape[0]
        gathered = self.gather_across_devices and world_size() > 1
        candidates_b, _, candidate_groups, offset = in_batch_candidates(embeddings_b, group_ids, gathered)
        if candidates_b.shape[0] < 2 and negatives is None:
            raise ValueError(
                "the in-batch triplet loss needs at least 2 pairs per batch (batch size 1 has no negatives)"
            )

        rows = torch.arange(batch_size, device=embeddings_a.device)
        scores = embeddings_a @ candidates_b.T
        positives = scores[rows, rows + offset]
        candidate_mask = in_batch_negative_mask(
            batch_size, scores.shape[1], offset, group_ids, candidate_groups, scores.device
        )
        if negatives is not None:
            scores = torch.cat([scores, (embeddings_a * negatives).sum(dim=1, keepdim=True)], dim=1)
            candidate_mask = torch.cat([candidate_mask, candidate_mask.new_ones(batch_size, 1)], dim=1)
        if not candidate_mask.any():
            raise ValueError("no negatives in this batch: every pair belongs to the same duplicate group")

        kept, stats = self._select(scores.detach(), positives.detach(), candidate_mask)
        has_negative = kept.any(dim=1)
        losses = torch.zeros_like(positives)
        if self.use_mean_negative:
            mean_negative = (scores * kept).sum(dim=1) / kept.sum(dim=1).clamp(min=1)
            losses = losses + torch.relu(self.margin - positives + mean_negative)
        if self.use_closest_negative:
            # a row with nothing kept gets -inf here, hence a zero hinge and a zero gradient
            closest_negative = scores.masked_fill(~kept, float("-inf")).max(dim=1).values
            losses = losses + torch.relu(self.margin - positives + closest_negative)
        return SiameseLossOutput(global_mean((losses * has_negative).sum(), has_negative.sum(), gathered), stats)

    def _select(
        self, scores: torch.Tensor, positives: torch.Tensor, candidates: torch.Tensor
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Kept-negative mask, and the class counts of the candidates."""
        easy, semi_hard, hard = negative_classes(scores, positives, candidates, self.margin)
        kept = {"all": candidates, "semi_hard": semi_hard, "hard": hard}[self.negative_selection]
        counts = (easy.sum(), semi_hard.sum(), hard.sum(), kept.sum(), kept.any(dim=1).sum())
        names = ("negatives_easy", "negatives_semi_hard", "negatives_hard", "negatives_used", "anchors_used")
        return kept, dict(zip(names, counts))


def negative_classes(
    scores: torch.Tensor, positives: torch.Tensor, candidates: torch.Tensor, margin: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """
    The candidate negatives of each row split as the triplet literature names them, against the row's
    positive score ``s_p``: hard (``s_n ≥ s_p``), semi-hard (``s_p − margin < s_n < s_p``), easy (the rest).
    """
    positive = positives.view(-1, 1)
    hard = candidates & (scores >= positive)
    semi_hard = candidates & (scores < positive) & (positive < scores + margin)
    return candidates & ~hard & ~semi_hard, semi_hard, hard
