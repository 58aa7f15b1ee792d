"""EmbeddingDistillationLoss against a brute-force loop over pairs and pairs of pairs."""

import math

import pytest
import torch
import torch.nn.functional as F

from hfsiamese.losses import LOSSES, get_loss
from hfsiamese.losses.embedding_distillation import EmbeddingDistillationLoss


def unit(*shape, seed):
    return F.normalize(torch.randn(*shape, generator=torch.Generator().manual_seed(seed)), dim=-1)


def brute_force(a, b, ta, tb, embedding_weight, score_weight):
    """The loss from Python lists of floats, one term at a time."""
    n = len(a)
    embedding = sum(
        sum((a[i][k] - ta[i][k]) ** 2 + (b[i][k] - tb[i][k]) ** 2 for k in range(len(a[i]))) for i in range(n)
    ) / (2 * n)
    score = 0.0
    for i in range(n):
        for j in range(n):
            student = sum(a[i][k] * b[j][k] for k in range(len(a[i])))
            teacher = sum(ta[i][k] * tb[j][k] for k in range(len(ta[i])))
            score += (student - teacher) ** 2
    return embedding_weight * embedding + score_weight * score / n**2, embedding, score / n**2


@pytest.mark.parametrize("embedding_weight,score_weight", [(1.0, 1.0), (0.3, 0.0), (0.0, 2.0)])
def test_matches_the_loop(embedding_weight, score_weight):
    a, b, ta, tb = (unit(5, 6, seed=s) for s in range(4))
    output = EmbeddingDistillationLoss(embedding_weight, score_weight).compute(a, b, teacher_a=ta, teacher_b=tb)
    expected, embedding, score = brute_force(
        a.tolist(), b.tolist(), ta.tolist(), tb.tolist(), embedding_weight, score_weight
    )
    assert output.loss.item() == pytest.approx(expected, abs=1e-5)
    assert output.stats["embedding_term"].item() == pytest.approx(embedding if embedding_weight else 0.0, abs=1e-5)
    assert output.stats["score_term"].item() == pytest.approx(score if score_weight else 0.0, abs=1e-5)


def test_the_score_term_works_across_embedding_sizes():
    a, b = unit(4, 6, seed=0), unit(4, 6, seed=1)
    ta, tb = unit(4, 10, seed=2), unit(4, 10, seed=3)
    loss = EmbeddingDistillationLoss(embedding_weight=0.0).compute(a, b, teacher_a=ta, teacher_b=tb).loss
    expected = brute_force(a.tolist(), b.tolist(), ta.tolist(), tb.tolist(), 0.0, 1.0)[0]
    assert loss.item() == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError, match="projection_dim=10"):
        EmbeddingDistillationLoss().compute(a, b, teacher_a=ta, teacher_b=tb)


def test_is_zero_when_the_student_is_the_teacher_and_pulls_towards_it():
    ta, tb = unit(4, 6, seed=0), unit(4, 6, seed=1)
    assert EmbeddingDistillationLoss()(ta, tb, teacher_a=ta, teacher_b=tb).item() == pytest.approx(0.0, abs=1e-7)
    a = unit(4, 6, seed=2).requires_grad_()
    loss = EmbeddingDistillationLoss(score_weight=0.0)(a, tb, teacher_a=ta, teacher_b=tb)
    (gradient,) = torch.autograd.grad(loss, a)
    # d/da of ‖a − t‖²/(2B) is (a − t)/B: a gradient step moves a towards its teacher vector.
    assert torch.allclose(gradient, (a - ta).detach() / 4, atol=1e-6)


def test_half_the_squared_distance_is_one_minus_the_cosine():
    ta, tb = unit(3, 6, seed=0), unit(3, 6, seed=1)
    a = unit(3, 6, seed=2)
    loss = EmbeddingDistillationLoss(score_weight=0.0)(a, tb, teacher_a=ta, teacher_b=tb).item()
    assert loss == pytest.approx((1 - F.cosine_similarity(a, ta)).mean().item(), abs=1e-6)
    assert not math.isnan(loss)


def test_refusals_name_the_problem():
    a, b = unit(3, 4, seed=0), unit(3, 4, seed=1)
    with pytest.raises(ValueError, match="teacher's embeddings of both sides"):
        EmbeddingDistillationLoss()(a, b)
    with pytest.raises(ValueError, match="batch 3"):
        EmbeddingDistillationLoss().compute(a, b, teacher_a=unit(2, 4, seed=2), teacher_b=unit(2, 4, seed=3))
    with pytest.raises(ValueError, match="both 0"):
        EmbeddingDistillationLoss(embedding_weight=0.0, score_weight=0.0)
    with pytest.raises(ValueError, match="non-negative"):
        EmbeddingDistillationLoss(score_weight=-1.0)


def test_registered_with_its_options():
    assert LOSSES["embedding_distillation"] is EmbeddingDistillationLoss
    loss = get_loss("embedding_distillation", score_weight=0.5)
    assert loss.get_config_dict() == {"embedding_weight": 1.0, "score_weight": 0.5}
    assert not (loss.requires_labels or loss.uses_negatives or loss.uses_logits or loss.uses_in_batch_negatives)
