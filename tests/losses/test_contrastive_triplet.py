import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import ContrastiveLoss, ContrastiveTripletLoss, HardNegativeTripletLoss, get_loss


def _embeddings(rows: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    a = F.normalize(torch.randn(rows, 8, generator=generator), dim=-1)
    b = F.normalize(torch.randn(rows, 8, generator=generator), dim=-1)
    return a, b


def test_is_the_contrastive_loss_plus_the_triplet_loss_on_the_duplicate_rows():
    a, b = _embeddings(7)
    labels = torch.tensor([1, 0, 1, 1, 0, 1, 0])
    groups = torch.tensor([0, 1, 2, 2, 3, 4, 5])
    loss_fn = ContrastiveTripletLoss(margin=0.4, triplet_margin=0.3, triplet_weight=0.5)
    rows = torch.tensor([0, 2, 3, 5])
    expected = ContrastiveLoss(margin=0.4)(a, b, labels=labels) + 0.5 * HardNegativeTripletLoss(margin=0.3)(
        a[rows], b[rows], group_ids=groups[rows]
    )
    output = loss_fn.compute(a, b, labels=labels, group_ids=groups)
    torch.testing.assert_close(output.loss, expected)
    assert output.stats["duplicate_rows"] == 4.0


def test_brute_force_triplet_term():
    """The in-batch term against a loop over anchors (no groups: every other duplicate row is a negative)."""
    a, b = _embeddings(5, seed=3)
    labels = torch.tensor([1, 1, 0, 1, 0])
    loss_fn = ContrastiveTripletLoss(margin=0.5, triplet_margin=0.25, triplet_weight=1.0)
    total = loss_fn(a, b, labels=labels)
    rows = [0, 1, 3]
    terms = []
    for i in rows:
        positive = float(a[i] @ b[i])
        negatives = [float(a[i] @ b[j]) for j in rows if j != i]
        mean_term = max(0.0, 0.25 - positive + sum(negatives) / len(negatives))
        closest_term = max(0.0, 0.25 - positive + max(negatives))
        terms.append(mean_term + closest_term)
    contrastive = float(ContrastiveLoss(margin=0.5)(a, b, labels=labels))
    assert float(total) == pytest.approx(contrastive + sum(terms) / len(terms), rel=1e-5)


@pytest.mark.parametrize(
    "labels,groups",
    [
        (torch.tensor([1, 0, 0, 0]), None),  # one duplicate row: no in-batch negative
        (torch.tensor([1, 1, 0, 0]), torch.tensor([3, 3, 1, 2])),  # the duplicates share one group
    ],
)
def test_triplet_term_is_left_out_when_the_batch_has_no_negative_for_it(labels, groups):
    a, b = _embeddings(4)
    loss_fn = ContrastiveTripletLoss()
    output = loss_fn.compute(a, b, labels=labels, group_ids=groups)
    torch.testing.assert_close(output.loss, ContrastiveLoss()(a, b, labels=labels))
    assert output.stats["triplet"] == 0.0


def test_gradients_reach_both_sides():
    a, b = _embeddings(6)
    a.requires_grad_(True)
    b.requires_grad_(True)
    ContrastiveTripletLoss()(a, b, labels=torch.tensor([1, 0, 1, 1, 0, 1])).backward()
    assert a.grad.abs().sum() > 0 and b.grad.abs().sum() > 0


def test_needs_labels_and_a_valid_weight():
    a, b = _embeddings(3)
    with pytest.raises(ValueError, match="needs `labels`"):
        ContrastiveTripletLoss()(a, b)
    with pytest.raises(ValueError, match="triplet_weight must be non-negative"):
        ContrastiveTripletLoss(triplet_weight=-1.0)
    assert isinstance(get_loss("contrastive_triplet", triplet_weight=2.0), ContrastiveTripletLoss)
