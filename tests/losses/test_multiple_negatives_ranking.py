import math

import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import MultipleNegativesRankingLoss


def _cross_entropy(target_logit, logits):
    return torch.logsumexp(torch.stack(logits), dim=0) - target_logit


def reference_loss(a, p, temperature, groups=None, negatives=None, symmetric=False):
    """Row by row: the target logit against every unmasked candidate, as torch scalars."""
    batch = a.shape[0]

    def allowed(i, j):
        return i == j or groups is None or groups[i] != groups[j]

    forward = []
    for i in range(batch):
        logits = [a[i] @ p[j] / temperature for j in range(batch) if allowed(i, j)]
        if negatives is not None:
            logits += [a[i] @ negatives[k] / temperature for k in range(batch)]
        forward.append(_cross_entropy(a[i] @ p[i] / temperature, logits))
    loss = sum(forward) / batch
    if symmetric:
        backward = [
            _cross_entropy(
                p[j] @ a[j] / temperature, [p[j] @ a[i] / temperature for i in range(batch) if allowed(j, i)]
            )
            for j in range(batch)
        ]
        loss = (loss + sum(backward) / batch) / 2
    return loss


def _batch(seed, batch=6, dim=8):
    g = torch.Generator().manual_seed(seed)
    a = F.normalize(torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    p = F.normalize(a + 0.8 * torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    n = F.normalize(a + 1.2 * torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    return a, p, n


CASES = [(with_negatives, symmetric) for with_negatives in (False, True) for symmetric in (False, True)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_negatives,symmetric", CASES)
def test_matches_loop_reference(seed, with_negatives, symmetric):
    a, p, n = _batch(seed, batch=2 + seed)
    groups = torch.tensor([k // 3 for k in range(a.shape[0])])  # groups of 3 consecutive pairs
    temperature = 0.05 * (seed + 1)
    negatives = n if with_negatives else None
    loss_fn = MultipleNegativesRankingLoss(temperature, symmetric=symmetric)
    for group_ids in (None, groups):
        loss = loss_fn(a, p, group_ids=group_ids, negatives=negatives)
        expected = reference_loss(
            a, p, temperature, None if group_ids is None else group_ids.tolist(), negatives, symmetric
        )
        assert loss.item() == pytest.approx(expected.item(), abs=1e-10)


@pytest.mark.parametrize("with_negatives,symmetric", CASES)
def test_gradients_match_loop_reference_and_finite_differences(with_negatives, symmetric):
    groups = torch.tensor([0, 1, 1, 2, 3, 3])
    loss_fn = MultipleNegativesRankingLoss(0.2, symmetric=symmetric)
    for seed in range(3):
        a, p, n = _batch(seed)
        inputs = [t.clone().requires_grad_(True) for t in (a, p, n)]
        reference_inputs = [t.clone().requires_grad_(True) for t in (a, p, n)]
        loss_fn(inputs[0], inputs[1], group_ids=groups, negatives=inputs[2] if with_negatives else None).backward()
        reference_loss(
            *reference_inputs[:2], 0.2, groups.tolist(), reference_inputs[2] if with_negatives else None, symmetric
        ).backward()
        for got, want in zip(inputs, reference_inputs):
            if want.grad is None:  # negatives not passed
                assert got.grad is None
            else:
                torch.testing.assert_close(got.grad, want.grad, atol=1e-10, rtol=0)
    a, p, n = (t.requires_grad_(True) for t in _batch(9))
    assert torch.autograd.gradcheck(lambda x, y, z: loss_fn(x, y, group_ids=groups, negatives=z), (a, p, n))


def test_group_mask_drops_a_true_duplicate():
    a, p, _ = _batch(0, batch=4)
    p[1] = a[0]  # pair 1 duplicates pair 0: anchor 0 would rank P_1 above its own positive
    loss_fn = MultipleNegativesRankingLoss(0.05)
    masked = loss_fn(a, p, group_ids=torch.tensor([7, 7, 8, 9]))
    assert masked.item() < loss_fn(a, p).item() - 0.1


def test_rows_with_only_their_positive_contribute_zero_and_still_count():
    a = torch.eye(3, dtype=torch.float64)
    p = F.normalize(a + 0.5, dim=-1)
    assert MultipleNegativesRankingLoss(0.1)(a, p, group_ids=torch.tensor([0, 0, 0])).item() == 0.0

    def row_loss(i, candidates):
        return torch.logsumexp(torch.stack([a[i] @ p[j] / 0.1 for j in candidates]), 0) - a[i] @ p[i] / 0.1

    # pairs 0 and 1 share a group: rows 0 and 1 see pair 2 only; row 2 sees everyone; the mean is over 3 rows
    expected = (row_loss(0, [0, 2]) + row_loss(1, [1, 2]) + row_loss(2, [0, 1, 2])) / 3
    loss = MultipleNegativesRankingLoss(0.1)(a, p, group_ids=torch.tensor([0, 0, 1]))
    assert loss.item() == pytest.approx(expected.item(), abs=1e-12)


def test_uniform_scores_give_log_of_the_candidate_count():
    a = torch.zeros(4, 3)
    a[:, 0] = 1
    n = a.clone()
    assert MultipleNegativesRankingLoss(1.0)(a, a.clone()).item() == pytest.approx(math.log(4))
    assert MultipleNegativesRankingLoss(1.0)(a, a.clone(), negatives=n).item() == pytest.approx(math.log(8))


def test_bad_inputs():
    a, p, n = _batch(0)
    assert not MultipleNegativesRankingLoss.requires_labels and MultipleNegativesRankingLoss.uses_negatives
    with pytest.raises(ValueError, match="temperature"):
        MultipleNegativesRankingLoss(temperature=0)
    with pytest.raises(ValueError, match="negatives must be"):
        MultipleNegativesRankingLoss()(a, p, negatives=n[:2])
    with pytest.raises(ValueError, match="batch, dim"):
        MultipleNegativesRankingLoss()(a, p[:2])
    with pytest.raises(ValueError, match="duplicate pairs only"):
        MultipleNegativesRankingLoss()(a, p, labels=torch.tensor([1, 1, 1, 0, 1, 1]))
