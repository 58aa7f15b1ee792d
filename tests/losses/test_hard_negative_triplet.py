import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import HardNegativeTripletLoss, get_loss


def reference_loss(a, p, margin, use_mean=True, use_closest=True, groups=None):
    """Plain loops over anchors and negatives: the formula as written, no vectorisation."""
    total, rows = 0.0, 0
    for i in range(a.shape[0]):
        positive = float(a[i] @ p[i])
        negatives = [float(a[i] @ p[j]) for j in range(a.shape[0]) if j != i and (groups is None or groups[j] != groups[i])]
        if not negatives:
            continue
        rows += 1
        if use_mean:
            total += max(0.0, margin - positive + sum(negatives) / len(negatives))
        if use_closest:
            total += max(0.0, margin - positive + max(negatives))
    return total / rows


def _embeddings(seed, batch, dim=8):
    g = torch.Generator().manual_seed(seed)
    a = F.normalize(torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    p = F.normalize(a + 0.8 * torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    return a, p


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("use_mean,use_closest", [(True, True), (True, False), (False, True)])
def test_matches_loop_reference(seed, use_mean, use_closest):
    a, p = _embeddings(seed, batch=2 + seed)
    margin = 0.1 + 0.05 * seed
    loss = HardNegativeTripletLoss(margin, use_mean_negative=use_mean, use_closest_negative=use_closest)(a, p)
    assert loss.item() == pytest.approx(reference_loss(a, p, margin, use_mean, use_closest), abs=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_group_mask_matches_reference(seed):
    a, p = _embeddings(seed, batch=7)
    p[1] = a[0]  # pairs 0 and 1 are duplicates of each other: p[1] would be anchor 0's hardest "negative"
    groups = torch.tensor([0, 0, 1, 2, 2, 2, 3])
    loss = HardNegativeTripletLoss(0.25)(a, p, group_ids=groups)
    assert loss.item() == pytest.approx(reference_loss(a, p, 0.25, groups=groups.tolist()), abs=1e-10)
    assert loss.item() < HardNegativeTripletLoss(0.25)(a, p).item() - 1e-3


def test_gradients_match_finite_differences():
    a, p = _embeddings(3, batch=5)
    a.requires_grad_(True)
    p.requires_grad_(True)
    loss_fn = HardNegativeTripletLoss(margin=0.9)  # large margin: every hinge is active, so the loss is smooth here
    assert torch.autograd.gradcheck(lambda x, y: loss_fn(x, y), (a, p))


def test_perfect_embeddings_give_zero_loss():
    a = torch.eye(4)
    assert HardNegativeTripletLoss(0.25)(a, a.clone()).item() == 0.0


def test_bad_inputs():
    with pytest.raises(ValueError, match="at least 2"):
        HardNegativeTripletLoss()(torch.ones(1, 3), torch.ones(1, 3))
    with pytest.raises(ValueError, match="same duplicate group"):
        HardNegativeTripletLoss()(torch.eye(3), torch.eye(3), group_ids=torch.tensor([5, 5, 5]))
    with pytest.raises(ValueError, match="batch, dim"):
        HardNegativeTripletLoss()(torch.ones(3, 2), torch.ones(2, 2))
    with pytest.raises(ValueError, match="at least one"):
        HardNegativeTripletLoss(use_mean_negative=False, use_closest_negative=False)
    with pytest.raises(ValueError, match="unknown loss"):
        get_loss("arcface")
