import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses.verification_identification import VerificationIdentificationLoss


def reference(u, v, labels, logits, margin, weight):
    total_ce, total_verification = 0.0, 0.0
    for i in range(len(labels)):
        log_probs = logits[i] - torch.logsumexp(logits[i], dim=0)
        total_ce += -float(log_probs[int(labels[i])])
        cos = float(u[i] @ v[i] / (u[i].norm() * v[i].norm()))
        total_verification += (1 - cos) if labels[i] == 1 else max(0.0, cos - margin)
    return total_ce / len(labels) + weight * total_verification / len(labels)


@pytest.mark.parametrize("seed", range(5))
def test_matches_loop_reference(seed):
    g = torch.Generator().manual_seed(seed)
    u = F.normalize(torch.randn(6, 5, generator=g, dtype=torch.float64), dim=-1)
    v = F.normalize(torch.randn(6, 5, generator=g, dtype=torch.float64), dim=-1)
    labels = torch.randint(0, 2, (6,), generator=g)
    logits = torch.randn(6, 2, generator=g, dtype=torch.float64)
    loss = VerificationIdentificationLoss(margin=0.1 * seed - 0.2, verification_weight=0.5)(
        u, v, labels=labels, logits=logits
    )
    assert loss.item() == pytest.approx(reference(u, v, labels, logits, 0.1 * seed - 0.2, 0.5), abs=1e-10)


def test_gradients_reach_embeddings_and_logits():
    u = F.normalize(torch.randn(4, 3, dtype=torch.float64), dim=-1).requires_grad_(True)
    v = F.normalize(torch.randn(4, 3, dtype=torch.float64), dim=-1).requires_grad_(True)
    logits = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([1, 1, 1, 1])  # positives only: the verification term is smooth everywhere
    assert torch.autograd.gradcheck(
        lambda a, b, z: VerificationIdentificationLoss()(a, b, labels=labels, logits=z), (u, v, logits)
    )


def test_names_missing_inputs():
    u = torch.eye(2)
    with pytest.raises(ValueError, match="labels"):
        VerificationIdentificationLoss()(u, u, logits=torch.zeros(2, 2))
    with pytest.raises(ValueError, match="classifier_head=True"):
        VerificationIdentificationLoss()(u, u, labels=torch.tensor([1, 0]))
    with pytest.raises(ValueError, match="margin"):
        VerificationIdentificationLoss(margin=2.0)
