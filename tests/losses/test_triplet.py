import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import TripletLoss


def reference_loss(a, p, margin, negatives=None, in_batch=False, groups=None):
    """Loops over (anchor, negative) terms with torch scalars; returns (loss, class counts)."""
    terms, counts = [], {"negatives_easy": 0, "negatives_semi_hard": 0, "negatives_hard": 0}
    for i in range(a.shape[0]):
        positive = a[i] @ p[i]
        candidates = [a[i] @ negatives[i]] if negatives is not None else []
        if in_batch:
            candidates += [
                a[i] @ p[j] for j in range(a.shape[0]) if j != i and (groups is None or groups[j] != groups[i])
            ]
        for n in candidates:
            kind = "hard" if n >= positive else ("semi_hard" if positive < n + margin else "easy")
            counts[f"negatives_{kind}"] += 1
            terms.append(torch.relu(n - positive + margin))
    counts["negatives_used"] = len(terms)
    return sum(terms) / len(terms), {k: float(v) for k, v in counts.items()}


def _batch(seed, batch=6, dim=8):
    g = torch.Generator().manual_seed(seed)
    a = F.normalize(torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    p = F.normalize(a + 0.8 * torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    n = F.normalize(a + 1.2 * torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    return a, p, n


@pytest.mark.parametrize("seed", range(8))
def test_matches_loop_reference(seed):
    a, p, n = _batch(seed, batch=2 + seed)
    loss_fn = TripletLoss(margin=0.1 + 0.05 * seed)
    output = loss_fn.compute(a, p, negatives=n)
    expected, counts = reference_loss(a, p, loss_fn.margin, negatives=n)
    assert output.loss.item() == pytest.approx(expected.item(), abs=1e-12)
    assert output.stats_as_floats() == counts


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("with_negatives", [True, False])
def test_in_batch_matches_loop_reference_with_groups(seed, with_negatives):
    a, p, n = _batch(seed, batch=7)
    groups = torch.tensor([0, 0, 1, 2, 2, 2, 3])
    negatives = n if with_negatives else None
    loss_fn = TripletLoss(margin=0.3, in_batch_negatives=True)
    output = loss_fn.compute(a, p, group_ids=groups, negatives=negatives)
    expected, counts = reference_loss(a, p, 0.3, negatives, in_batch=True, groups=groups.tolist())
    assert output.loss.item() == pytest.approx(expected.item(), abs=1e-12)
    assert output.stats_as_floats() == counts


def test_group_mask_removes_a_duplicate_from_the_negatives():
    a, p, n = _batch(0, batch=5)
    p[1] = a[0]  # a duplicate of anchor 0 would be its hardest in-batch "negative"
    loss_fn = TripletLoss(margin=0.3, in_batch_negatives=True)
    output = loss_fn.compute(a, p, negatives=n, group_ids=torch.tensor([0, 0, 1, 2, 3]))
    masked = output.loss
    assert output.stats["negatives_used"] == 5 + 5 * 4 - 2
    assert masked.item() < loss_fn(a, p, negatives=n).item()


def test_group_ids_unused_without_in_batch_negatives():
    a, p, n = _batch(1)
    loss_fn = TripletLoss()
    assert (
        loss_fn(a, p, negatives=n, group_ids=torch.zeros(6, dtype=torch.long)).item()
        == loss_fn(a, p, negatives=n).item()
    )


@pytest.mark.parametrize("in_batch", [False, True])
def test_gradients_match_loop_reference_and_finite_differences(in_batch):
    for seed in range(3):
        a, p, n = _batch(seed)
        groups = torch.tensor([0, 1, 1, 2, 3, 4])
        inputs = [t.clone().requires_grad_(True) for t in (a, p, n)]
        reference_inputs = [t.clone().requires_grad_(True) for t in (a, p, n)]
        loss_fn = TripletLoss(margin=0.3, in_batch_negatives=in_batch)
        loss_fn(inputs[0], inputs[1], negatives=inputs[2], group_ids=groups).backward()
        reference_loss(*reference_inputs[:2], 0.3, reference_inputs[2], in_batch, groups.tolist())[0].backward()
        for got, want in zip(inputs, reference_inputs):
            torch.testing.assert_close(got.grad, want.grad, atol=1e-12, rtol=0)
    loss_fn = TripletLoss(margin=2.5, in_batch_negatives=in_batch)  # every hinge active: smooth here
    assert torch.autograd.gradcheck(
        lambda x, y, z: loss_fn(x, y, negatives=z), tuple(t.requires_grad_(True) for t in _batch(7))
    )


def test_perfect_embeddings_give_zero_loss():
    a = torch.eye(4)
    assert TripletLoss(0.25, in_batch_negatives=True)(a, a.clone(), negatives=-a).item() == 0.0


def test_bad_inputs():
    a, p, n = _batch(0)
    assert not TripletLoss.requires_labels and TripletLoss.uses_negatives
    with pytest.raises(ValueError, match="needs `negatives`"):
        TripletLoss()(a, p)
    with pytest.raises(ValueError, match="negatives must be"):
        TripletLoss()(a, p, negatives=n[:3])
    with pytest.raises(ValueError, match="batch, dim"):
        TripletLoss()(a, p[:3], negatives=n)
    with pytest.raises(ValueError, match="same duplicate group"):
        TripletLoss(in_batch_negatives=True)(a, p, group_ids=torch.zeros(6, dtype=torch.long))
    with pytest.raises(ValueError, match="duplicate pairs only"):
        TripletLoss()(a, p, negatives=n, labels=torch.tensor([1, 1, 0, 1, 1, 1]))
    with pytest.raises(ValueError, match="non-negative"):
        TripletLoss(margin=-0.1)
