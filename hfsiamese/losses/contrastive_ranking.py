"""Contrastive loss on labelled pairs plus an in-batch ranking term on their duplicates: both jobs in one loss."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hfsiamese.losses.base import SiameseLoss, SiameseLossOutput, require_non_negative, require_one_of
from hfsiamese.losses.contrastive import pair_terms
from hfsiamese.losses.distributed import in_batch_negative_mask

RANKING_LOSSES = ("hard_negative_triplet", "multiple_negatives_ranking")
RANKING_CANDIDATES = ("duplicates", "all_rows")


class ContrastiveRankingLoss(SiameseLoss):
    r"""
    The two objectives a labelled duplicate-question batch offers, as one weighted sum: deciding
    "duplicate?" (pair classification) and finding a question's duplicate among others (retrieval).
    Registered as ``contrastive_ranking`` (``contrastive_triplet`` before its ranking term could be
    InfoNCE; that name and ``triplet_weight`` still work, with a `FutureWarning`).

    For labelled pairs ``(a_i, b_i, y_i)`` of a batch of ``B``, ``C`` is the contrastive loss (margin
    ``m``) over all pairs and ``R`` an in-batch ranking term over the duplicate rows
    ``D = {i : y_i = 1}``: anchor ``a_i``, positive ``b_i``, candidate negatives ``b_j`` for the rows
    ``j`` of ``ranking_candidates`` (``"duplicates"``: the other duplicate rows; ``"all_rows"``: every
    other row, so labelled non-duplicates' second questions count too), pairs of the anchor's duplicate
    group masked. With ``s_ij = cos(a_i, b_j)`` and ``K_i`` the candidates of row ``i``:

    .. math::
        L = C(a, b, y) + w \cdot R

        R_{\text{triplet}} = \frac{1}{|D|} \sum_{i \in D} \big[\max(0, α − s_{ii} + \operatorname{mean}_{j∈K_i} s_{ij})
                                             + \max(0, α − s_{ii} + \max_{j∈K_i} s_{ij})\big]

        R_{\text{mnrl}} = −\frac{1}{|D|} \sum_{i \in D} \log \frac{e^{s_{ii}/τ}}{e^{s_{ii}/τ} + \sum_{j∈K_i} e^{s_{ij}/τ}}

    ``ranking_loss`` picks ``R``: the seeds' hard-negative triplet (``α`` = ``triplet_margin``) or the
    multiple-negatives ranking loss (temperature ``τ``). Why a weight and its default: ``C`` is a sum
    of squared cosine distances, ``½(1 − s)²`` — about 0.02–0.05 per pair once training is under way —
    while a hinge over in-batch negatives stays near ``2α`` = 0.5 and an InfoNCE term near
    ``log |K|``; at ``w = 1`` the ranking term's gradient is an order of magnitude larger and decides
    where the embeddings go, which is why the first version of this loss (``w = 1``, duplicate rows
    only, then named ``contrastive_triplet``) lost pair AP: 0.752 vs 0.783 for the LSTM recipe; at ``w = 0.1`` over all rows, 0.774
    (benchmarks/README.md, "Both jobs"). The defaults are the MiniLM recipe's. ``R`` is 0
    for a batch with fewer than two duplicate rows, or with no candidate left after masking. It is
    computed per process (no gathering: processes hold different numbers of duplicate rows); under
    DDP the gradients are averaged as usual. Statistics (`compute`): ``contrastive``, ``ranking``
    (the two terms, unweighted) and ``duplicate_rows``.

    Inputs:
        embeddings_a, embeddings_b: ``(B, d)`` L2-normalised. labels: ``(B,)`` 0/1, required.
        group_ids (optional): ``(B,)`` duplicate group of each pair (of its first question).

    Reference:
        Hadsell, Chopra & LeCun (2006) for ``C``; Hermans, Beyer & Leibe (2017) and the seeds'
        TripletLossFn for ``R_triplet``; van den Oord et al. (2018) and Henderson et al. (2017) for
        ``R_mnrl``. Training one encoder on both objectives follows the multi-task recipe
        sentence-transformers documents for Quora duplicates (there by alternating batches of two
        data sets; here on one batch, so the sampler's duplicate-group rule covers both terms).

    Examples:
        >>> loss_fn = ContrastiveRankingLoss(margin=0.5, ranking_weight=0.1, ranking_candidates="all_rows")
        >>> a = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
        >>> b = torch.nn.functional.normalize(torch.randn(6, 8), dim=-1)
        >>> loss = loss_fn(a, b, labels=torch.tensor([1, 0, 1, 1, 0, 1]))
    """

    requires_labels = True
    uses_in_batch_negatives = True

    def __init__(
        self,
        margin: float = 0.5,
        triplet_margin: float = 0.25,
        ranking_weight: float = 0.1,
        ranking_loss: str = "hard_negative_triplet",
        ranking_candidates: str = "all_rows",
        temperature: float = 0.05,
    ) -> None:
        super().__init__()
        require_non_negative("margin", margin)
        require_non_negative("triplet_margin", triplet_margin)
        require_non_negative("ranking_weight", ranking_weight)
        require_one_of("ranking_loss", ranking_loss, RANKING_LOSSES)
        require_one_of("ranking_candidates", ranking_candidates, RANKING_CANDIDATES)
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.margin = margin
        self.triplet_margin = triplet_margin
        self.ranking_weight = ranking_weight
        self.ranking_loss = ranking_loss
        self.ranking_candidates = ranking_candidates
        self.temperature = temperature

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits) -> SiameseLossOutput:
        is_duplicate = labels == 1
        # The labelled terms directly: this loss's inputs are checked already (`compute`).
        contrastive = pair_terms(embeddings_a, embeddings_b, is_duplicate, self.margin).mean()
        ranking = self.ranking_term(embeddings_a, embeddings_b, is_duplicate, group_ids)
        stats = {
            "contrastive": contrastive.detach(),
            "ranking": ranking.detach(),
            "duplicate_rows": is_duplicate.sum(),
        }
        return SiameseLossOutput(contrastive + self.ranking_weight * ranking, stats)

    def ranking_term(
        self,
        embeddings_a: torch.Tensor,
        embeddings_b: torch.Tensor,
        is_duplicate: torch.Tensor,
        group_ids: torch.Tensor | None,
    ) -> torch.Tensor:
        """
        ``R`` of the docstring (unweighted); 0 on the graph when no duplicate row has a candidate. Computed
        over the whole ``(B, B)`` score matrix with masks (rows: the duplicate anchors; columns: the
        candidates), so no step waits on the host for how many duplicate rows the batch holds.
        """
        batch_size = is_duplicate.numel()
        scores = embeddings_a @ embeddings_b.T
        positives = scores.diagonal()
        candidates = in_batch_negative_mask(batch_size, batch_size, 0, group_ids, group_ids, scores.device)
        if self.ranking_candidates == "duplicates":
            candidates &= is_duplicate.view(1, -1)
        anchors = is_duplicate & candidates.any(dim=1)
        if self.ranking_loss == "multiple_negatives_ranking":
            logits = scores.masked_fill(
                ~(candidates | torch.eye(batch_size, dtype=torch.bool, device=scores.device)), float("-inf")
            )
            terms = F.cross_entropy(
                logits / self.temperature, torch.arange(batch_size, device=scores.device), reduction="none"
            )
        else:
            mean_negative = (scores * candidates).sum(dim=1) / candidates.sum(dim=1).clamp(min=1)
            # A row without candidates has closest −inf: a zero hinge and a zero gradient.
            closest_negative = scores.masked_fill(~candidates, float("-inf")).max(dim=1).values
            terms = torch.relu(self.triplet_margin - positives + mean_negative)
            terms = terms + torch.relu(self.triplet_margin - positives + closest_negative)
        return (terms * anchors).sum() / anchors.sum().clamp(min=1)
