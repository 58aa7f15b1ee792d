import math

import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import ContrastiveLoss, OnlineContrastiveLoss


def _distance(x, y):
    return 1 - (x @ y) / torch.sqrt((x @ x) * (y @ y))


def _term(x, y, label, margin):
    d = _distance(x, y)
    return 0.5 * d**2 if label == 1 else 0.5 * torch.relu(margin - d) ** 2


def reference_contrastive(a, b, labels, margin):
    return sum(_term(a[i], b[i], int(labels[i]), margin) for i in range(a.shape[0])) / a.shape[0]


def reference_online(a, b, labels, margin):
    """Returns (loss, hard positives, hard negatives), by explicit loops over the pairs."""
    labels = [int(y) for y in labels]
    distances = [_distance(a[i], b[i]).item() for i in range(a.shape[0])]
    closest_negative = min([d for d, y in zip(distances, labels) if y == 0], default=math.inf)
    farthest_positive = max([d for d, y in zip(distances, labels) if y == 1], default=-math.inf)
    hard_positives = [i for i, (d, y) in enumerate(zip(distances, labels)) if y == 1 and d > closest_negative]
    hard_negatives = [i for i, (d, y) in enumerate(zip(distances, labels)) if y == 0 and d < farthest_positive]
    kept = hard_positives + hard_negatives
    if not kept:
        return a.sum() * 0, 0, 0
    return sum(_term(a[i], b[i], labels[i], margin) for i in kept) / len(kept), len(hard_positives), len(hard_negatives)


def _batch(seed, batch=8, dim=6):
    g = torch.Generator().manual_seed(seed)
    a = F.normalize(torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    labels = torch.randint(0, 2, (batch,), generator=g)
    noise = torch.where(labels.view(-1, 1) == 1, 0.6, 1.5)
    b = F.normalize(a + noise * torch.randn(batch, dim, generator=g, dtype=torch.float64), dim=-1)
    return a, b, labels


@pytest.mark.parametrize("seed", range(10))
def test_contrastive_matches_loop_reference(seed):
    a, b, labels = _batch(seed, batch=3 + seed)
    margin = 0.3 + 0.1 * seed
    loss = ContrastiveLoss(margin)(a, b, labels=labels)
    assert loss.item() == pytest.approx(reference_contrastive(a, b, labels, margin).item(), abs=1e-12)


@pytest.mark.parametrize("seed", range(10))
def test_online_contrastive_matches_loop_reference(seed):
    a, b, labels = _batch(seed, batch=4 + seed)
    loss_fn = OnlineContrastiveLoss(0.8)
    output = loss_fn.compute(a, b, labels=labels)
    expected, hard_positives, hard_negatives = reference_online(a, b, labels, 0.8)
    assert output.loss.item() == pytest.approx(expected.item(), abs=1e-12)
    assert output.stats_as_floats() == {
        "hard_positives": hard_positives,
        "hard_negatives": hard_negatives,
        "pairs_used": hard_positives + hard_negatives,
    }


def test_online_reference_inputs_keep_some_pairs_and_drop_others():
    """Guards the test above against degenerate inputs: across seeds, mining both keeps and drops pairs."""
    kept = [sum(reference_online(*_batch(seed, batch=4 + seed), 0.8)[1:]) for seed in range(10)]
    assert sum(kept) > 0 and any(k < 4 + seed for seed, k in enumerate(kept))


@pytest.mark.parametrize("loss_class", [ContrastiveLoss, OnlineContrastiveLoss])
def test_gradients(loss_class):
    for seed in range(3):
        a, b, labels = _batch(seed)
        x, y = a.clone().requires_grad_(True), b.clone().requires_grad_(True)
        rx, ry = a.clone().requires_grad_(True), b.clone().requires_grad_(True)
        loss_class(0.8)(x, y, labels=labels).backward()
        reference = reference_contrastive if loss_class is ContrastiveLoss else lambda *args: reference_online(*args)[0]
        reference(rx, ry, labels, 0.8).backward()
        torch.testing.assert_close(x.grad, rx.grad, atol=1e-12, rtol=0)
        torch.testing.assert_close(y.grad, ry.grad, atol=1e-12, rtol=0)
    a, b, labels = _batch(5)
    loss_fn = loss_class(1.9)  # every negative inside the margin: smooth here
    assert torch.autograd.gradcheck(
        lambda x, y: loss_fn(x, y, labels=labels), (a.requires_grad_(True), b.requires_grad_(True))
    )


def test_online_equals_contrastive_on_the_kept_pairs():
    a = F.normalize(torch.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 0.1], [0.0, 1.0]], dtype=torch.float64), dim=-1)
    b = F.normalize(torch.tensor([[0.0, 1.0], [1.0, 1.1], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64), dim=-1)
    labels = torch.tensor([1, 0, 0, 1])  # positives far apart (d 1, 0), negatives close (d ≈ 0.001, 0.005)
    online = OnlineContrastiveLoss(0.5)
    output = online.compute(a, b, labels=labels)
    value = output.loss
    assert output.stats_as_floats() == {"hard_positives": 1, "hard_negatives": 2, "pairs_used": 3}
    kept = torch.tensor([0, 1, 2])
    assert value.item() == pytest.approx(ContrastiveLoss(0.5)(a[kept], b[kept], labels=labels[kept]).item(), abs=1e-12)


@pytest.mark.parametrize("labels", [[1, 1, 1], [0, 0, 0], [1, 0, 0]])
def test_online_without_hard_pairs_is_zero_on_the_graph(labels):
    a = torch.eye(3, dtype=torch.float64, requires_grad=True)
    b = torch.tensor([[1.0, 0, 0], [-1.0, 0, 0], [0, -1.0, 0]], dtype=torch.float64)  # d = 0, 2, 1
    loss = OnlineContrastiveLoss(0.5)(a, b, labels=torch.tensor(labels))
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert torch.count_nonzero(a.grad) == 0


def test_contrastive_values_by_hand():
    a = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    b = torch.tensor([[0.0, 1.0], [0.8, 0.6]])  # d = 1 and 0.2
    assert ContrastiveLoss(0.5)(a, b, labels=torch.tensor([1, 0])).item() == pytest.approx((0.5 * 1 + 0.5 * 0.3**2) / 2)


@pytest.mark.parametrize("loss_class", [ContrastiveLoss, OnlineContrastiveLoss])
def test_interface_and_bad_inputs(loss_class):
    a, b, labels = _batch(0, batch=4)
    assert loss_class.requires_labels and not loss_class.uses_negatives
    assert (
        loss_class()(a, b, labels=labels, group_ids=torch.zeros(4, dtype=torch.long)).item()
        == loss_class()(a, b, labels=labels).item()
    )
    with pytest.raises(ValueError, match=f"{loss_class.__name__} needs `labels`"):
        loss_class()(a, b)
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        loss_class()(a, b, labels=torch.tensor([0, 1, 2, 1]))
    with pytest.raises(ValueError, match=r"labels must be \(4,\)"):
        loss_class()(a, b, labels=torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="no explicit `negatives`"):
        loss_class()(a, b, labels=labels, negatives=b)
    with pytest.raises(ValueError, match="batch, dim"):
        loss_class()(a, b[:2], labels=labels)
