import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import HardNegativeTripletLoss, get_loss


def reference_loss(a, p, margin, use_mean=True, use_closest=True, groups=None):
    """Plain loops over anchors and negatives: the formula as written, no vectorisation."""
    total, rows = 0.0, 0
    for i in range(a.shape[0]):
        positive = float(a[i] @ p[i])
        negatives = [
            float(a[i] @ p[j]) for j in range(a.shape[0]) if j != i and (groups is None or groups[j] != groups[i])
        ]
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


# ----------------------------------------------------------------------------------------------
# Negative selection, explicit negatives, statistics
# ----------------------------------------------------------------------------------------------
def selection_reference(a, p, margin, selection, use_mean=True, use_closest=True, groups=None, negatives=None):
    """Loop version with torch scalars (so autograd runs through it); returns (loss, class counts)."""
    counts = {
        "negatives_easy": 0,
        "negatives_semi_hard": 0,
        "negatives_hard": 0,
        "negatives_used": 0,
        "anchors_used": 0,
    }
    total, rows = a.new_zeros(()), 0
    for i in range(a.shape[0]):
        positive = a[i] @ p[i]
        candidates = [a[i] @ p[j] for j in range(a.shape[0]) if j != i and (groups is None or groups[j] != groups[i])]
        if negatives is not None:
            candidates.append(a[i] @ negatives[i])
        kept = []
        for n in candidates:
            kind = "hard" if n >= positive else ("semi_hard" if positive < n + margin else "easy")
            counts[f"negatives_{kind}"] += 1
            if selection in ("all", kind):
                kept.append(n)
        if not kept:
            continue
        rows += 1
        counts["negatives_used"] += len(kept)
        if use_mean:
            total = total + torch.relu(margin - positive + sum(kept) / len(kept))
        if use_closest:
            total = total + torch.relu(margin - positive + max(kept))
    counts["anchors_used"] = rows
    return total / max(rows, 1), {k: float(v) for k, v in counts.items()}


def _negatives(seed, batch, dim=8):
    g = torch.Generator().manual_seed(1000 + seed)
    return F.normalize(torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)


SELECTIONS = ["all", "semi_hard", "hard"]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("with_negatives", [False, True])
def test_selection_matches_loop_reference_and_counts(seed, selection, with_negatives):
    a, p = _embeddings(seed, batch=6 + seed)
    groups = torch.tensor([k // 2 if k < 4 else k for k in range(a.shape[0])])  # pairs 0-1 and 2-3 are duplicates
    negatives = _negatives(seed, a.shape[0]) if with_negatives else None
    margin = 0.2 + 0.05 * seed
    loss_fn = HardNegativeTripletLoss(margin, negative_selection=selection)
    output = loss_fn.compute(a, p, group_ids=groups, negatives=negatives)
    expected, counts = selection_reference(a, p, margin, selection, groups=groups.tolist(), negatives=negatives)
    assert output.loss.item() == pytest.approx(expected.item(), abs=1e-10)
    assert output.stats_as_floats() == counts


def test_random_batches_hold_every_class():
    """The inputs of the test above are not degenerate: each class occurs, so each selection is exercised."""
    totals = {"negatives_easy": 0.0, "negatives_semi_hard": 0.0, "negatives_hard": 0.0}
    for seed in range(8):
        a, p = _embeddings(seed, batch=6 + seed)
        _, counts = selection_reference(a, p, 0.2 + 0.05 * seed, "all")
        for key in totals:
            totals[key] += counts[key]
    assert all(count >= 5 for count in totals.values()), totals


@pytest.mark.parametrize("selection", SELECTIONS)
@pytest.mark.parametrize("use_mean,use_closest", [(True, True), (True, False), (False, True)])
def test_selection_gradients_match_loop_reference(selection, use_mean, use_closest):
    for seed in range(3):
        a, p = _embeddings(seed, batch=7)
        n = _negatives(seed, 7)
        groups = torch.tensor([0, 0, 1, 2, 3, 4, 5])
        inputs = [t.clone().requires_grad_(True) for t in (a, p, n)]
        reference_inputs = [t.clone().requires_grad_(True) for t in (a, p, n)]
        loss_fn = HardNegativeTripletLoss(0.4, use_mean, use_closest, negative_selection=selection)
        loss_fn(*inputs[:2], group_ids=groups, negatives=inputs[2]).backward()
        expected, _ = selection_reference(
            *reference_inputs[:2], 0.4, selection, use_mean, use_closest, groups.tolist(), reference_inputs[2]
        )
        expected.backward()
        for got, want in zip(inputs, reference_inputs):
            want_grad = want.grad if want.grad is not None else torch.zeros_like(want)  # not on the loop's graph
            torch.testing.assert_close(got.grad, want_grad, atol=1e-10, rtol=0)


@pytest.mark.parametrize("selection", ["semi_hard", "hard"])
def test_selected_loss_is_smooth_away_from_class_boundaries(selection):
    a, p = _embeddings(4, batch=6)
    n = _negatives(4, 6)
    loss_fn = HardNegativeTripletLoss(0.5, negative_selection=selection)
    assert torch.autograd.gradcheck(
        lambda x, y, z: loss_fn(x, y, negatives=z),
        tuple(t.clone().requires_grad_(True) for t in (a, p, n)),
        fast_mode=True,
    )


def test_explicit_negative_is_one_more_candidate():
    a = torch.eye(3, dtype=torch.float64)
    p = a.clone()
    far = -a  # s(A_i, N_i) = -1: easy
    close = a.clone()  # s(A_i, N_i) = s(A_i, P_i) = 1: a tie, which counts as hard
    loss_fn = HardNegativeTripletLoss(0.25, negative_selection="hard")
    output = loss_fn.compute(a, p, negatives=far)
    assert output.loss.item() == 0.0 and output.stats["negatives_used"] == 0.0
    output = loss_fn.compute(a, p, negatives=close)
    assert output.loss.item() == pytest.approx(0.5) and output.stats["negatives_used"] == 3.0
    assert output.stats["negatives_easy"] == 6.0  # the in-batch ones (orthogonal, s = 0)
    # with an explicit negative, one pair is enough
    assert HardNegativeTripletLoss(0.25)(a[:1], p[:1], negatives=close[:1]).item() > 0


def test_no_kept_negative_gives_zero_on_the_graph():
    a = torch.eye(4, dtype=torch.float64, requires_grad=True)
    loss_fn = HardNegativeTripletLoss(0.25, negative_selection="hard")
    output = loss_fn.compute(a, torch.eye(4, dtype=torch.float64))
    loss = output.loss
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert torch.count_nonzero(a.grad) == 0
    assert output.stats["anchors_used"] == 0.0 and output.stats["negatives_easy"] == 12.0


def test_interface_and_new_bad_inputs():
    assert not HardNegativeTripletLoss.requires_labels and HardNegativeTripletLoss.uses_negatives
    with pytest.raises(ValueError, match="negative_selection"):
        HardNegativeTripletLoss(negative_selection="hardest")
    with pytest.raises(ValueError, match="negatives must be"):
        HardNegativeTripletLoss()(torch.eye(3), torch.eye(3), negatives=torch.eye(2))
    with pytest.raises(ValueError, match="duplicate pairs only"):
        HardNegativeTripletLoss()(torch.eye(3), torch.eye(3), labels=torch.tensor([1, 0, 1]))
    HardNegativeTripletLoss()(torch.eye(3), torch.eye(3), labels=torch.tensor([1, 1, 1]))  # all duplicates: fine
    with pytest.raises(TypeError):
        HardNegativeTripletLoss()(torch.eye(3), torch.eye(3), torch.tensor([0, 1, 2]))  # group_ids is keyword-only
