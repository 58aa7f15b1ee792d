import math

import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import (
    ContrastiveLoss,
    ContrastiveRankingLoss,
    HardNegativeTripletLoss,
    get_loss,
)


def _embeddings(rows: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    a = F.normalize(torch.randn(rows, 8, generator=generator), dim=-1)
    b = F.normalize(torch.randn(rows, 8, generator=generator), dim=-1)
    return a, b


def _brute_force_ranking(a, b, labels, groups, *, ranking_loss, candidates, margin=0.25, temperature=0.05):
    """The ranking term R of the docstring, one anchor at a time."""
    rows = [i for i in range(len(labels)) if labels[i] == 1]
    columns = rows if candidates == "duplicates" else list(range(len(labels)))
    terms = []
    for i in rows:
        positive = float(a[i] @ b[i])
        negatives = [
            float(a[i] @ b[j]) for j in columns if j != i and (groups is None or int(groups[j]) != int(groups[i]))
        ]
        if not negatives:
            continue
        if ranking_loss == "hard_negative_triplet":
            terms.append(
                max(0.0, margin - positive + sum(negatives) / len(negatives))
                + max(0.0, margin - positive + max(negatives))
            )
        else:
            logits = [positive / temperature] + [n / temperature for n in negatives]
            top = max(logits)
            terms.append(-(logits[0] - top - math.log(sum(math.exp(x - top) for x in logits))))
    return sum(terms) / len(terms) if terms else 0.0


@pytest.mark.parametrize("ranking_loss", ["hard_negative_triplet", "multiple_negatives_ranking"])
@pytest.mark.parametrize("candidates", ["duplicates", "all_rows"])
def test_against_a_loop_over_anchors(ranking_loss, candidates):
    a, b = _embeddings(9, seed=3)
    labels = torch.tensor([1, 1, 0, 1, 0, 1, 1, 0, 1])
    groups = torch.tensor([0, 1, 2, 1, 3, 4, 5, 6, 7])  # rows 1 and 3 are one duplicate group
    loss_fn = ContrastiveRankingLoss(
        margin=0.4,
        ranking_weight=0.3,
        ranking_loss=ranking_loss,
        ranking_candidates=candidates,
    )
    output = loss_fn.compute(a, b, labels=labels, group_ids=groups)
    ranking = _brute_force_ranking(a, b, labels, groups, ranking_loss=ranking_loss, candidates=candidates)
    contrastive = float(ContrastiveLoss(margin=0.4)(a, b, labels=labels))
    assert float(output.stats["ranking"]) == pytest.approx(ranking, rel=1e-5)
    assert float(output.loss) == pytest.approx(contrastive + 0.3 * ranking, rel=1e-5)
    assert output.stats["duplicate_rows"] == 6.0


def test_over_duplicate_rows_is_the_first_version():
    """ranking_candidates='duplicates' with the triplet term is the hard-negative triplet loss on the duplicate rows."""
    a, b = _embeddings(7)
    labels = torch.tensor([1, 0, 1, 1, 0, 1, 0])
    groups = torch.tensor([0, 1, 2, 2, 3, 4, 5])
    loss_fn = ContrastiveRankingLoss(
        margin=0.4,
        triplet_margin=0.3,
        ranking_weight=0.5,
        ranking_candidates="duplicates",
    )
    rows = torch.tensor([0, 2, 3, 5])
    expected = ContrastiveLoss(margin=0.4)(a, b, labels=labels) + 0.5 * HardNegativeTripletLoss(margin=0.3)(
        a[rows], b[rows], group_ids=groups[rows]
    )
    torch.testing.assert_close(loss_fn(a, b, labels=labels, group_ids=groups), expected)


def test_all_rows_sees_the_labelled_non_duplicates_second_questions():
    """With one duplicate row, only ranking_candidates='all_rows' has negatives for it."""
    a, b = _embeddings(4)
    labels = torch.tensor([1, 0, 0, 0])
    assert ContrastiveRankingLoss(ranking_candidates="duplicates").compute(a, b, labels=labels).stats["ranking"] == 0.0
    assert ContrastiveRankingLoss(ranking_candidates="all_rows").compute(a, b, labels=labels).stats["ranking"] > 0.0


@pytest.mark.parametrize("ranking_loss", ["hard_negative_triplet", "multiple_negatives_ranking"])
@pytest.mark.parametrize(
    "labels,groups",
    [
        (
            torch.tensor([1, 0, 0, 0]),
            torch.tensor([3, 3, 3, 3]),
        ),  # every other row is of the anchor's group
        (torch.tensor([0, 0, 0, 0]), None),  # no duplicate row
    ],
)
def test_ranking_term_is_left_out_when_no_duplicate_row_has_a_negative(ranking_loss, labels, groups):
    a, b = _embeddings(4)
    output = ContrastiveRankingLoss(ranking_loss=ranking_loss).compute(a, b, labels=labels, group_ids=groups)
    torch.testing.assert_close(output.loss, ContrastiveLoss()(a, b, labels=labels))
    assert output.stats["ranking"] == 0.0


@pytest.mark.parametrize("ranking_loss", ["hard_negative_triplet", "multiple_negatives_ranking"])
def test_gradients_reach_both_sides_and_stay_finite(ranking_loss):
    a, b = _embeddings(6)
    a.requires_grad_(True)
    b.requires_grad_(True)
    # Row 0 has no candidate left (all others share its group): its masked entries must not leak a NaN.
    groups = torch.tensor([0, 0, 0, 1, 2, 2])
    loss_fn = ContrastiveRankingLoss(ranking_loss=ranking_loss)
    loss_fn(a, b, labels=torch.tensor([1, 0, 1, 1, 0, 1]), group_ids=groups).backward()
    assert a.grad.abs().sum() > 0 and b.grad.abs().sum() > 0
    assert torch.isfinite(a.grad).all() and torch.isfinite(b.grad).all()


def test_options_are_checked_and_reported():
    a, b = _embeddings(3)
    with pytest.raises(ValueError, match="needs `labels`"):
        ContrastiveRankingLoss()(a, b)
    with pytest.raises(ValueError, match="ranking_weight must be non-negative"):
        ContrastiveRankingLoss(ranking_weight=-1.0)
    with pytest.raises(ValueError, match="ranking_loss must be one of"):
        ContrastiveRankingLoss(ranking_loss="mnrl")
    with pytest.raises(ValueError, match="ranking_candidates must be one of"):
        ContrastiveRankingLoss(ranking_candidates="everything")
    with pytest.raises(ValueError, match="temperature must be positive"):
        ContrastiveRankingLoss(temperature=0.0)
    loss = get_loss(
        "contrastive_ranking",
        ranking_weight=2.0,
        ranking_loss="multiple_negatives_ranking",
    )
    assert loss.get_config_dict() == {
        "margin": 0.5,
        "triplet_margin": 0.25,
        "ranking_weight": 2.0,
        "ranking_loss": "multiple_negatives_ranking",
        "ranking_candidates": "all_rows",
        "temperature": 0.05,
    }
