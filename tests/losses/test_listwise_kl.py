"""ListwiseKLLoss against a KL divergence worked out by hand on 2-d unit vectors."""

import math

import pytest
import torch

from hfsiamese.losses import LOSSES, ListwiseKLLoss, get_loss

# One row, two negatives, in 2-d: the query (1, 0) has cosine 1 with its positive (1, 0), 0 with (0, 1) and -1
# with (-1, 0).
QUERY, POSITIVE = torch.tensor([[1.0, 0.0]]), torch.tensor([[1.0, 0.0]])
NEGATIVES = torch.tensor([[0.0, 1.0], [-1.0, 0.0]])
STUDENT_COSINES = [1.0, 0.0, -1.0]


def kl(teacher_probabilities, student_logits):
    """KL(P_t || softmax(student_logits)), one term at a time."""
    z = sum(math.exp(x) for x in student_logits)
    return sum(p * (math.log(p) - (x - math.log(z))) for p, x in zip(teacher_probabilities, student_logits))


def test_is_registered_as_listwise_kl_with_documented_defaults():
    assert LOSSES["listwise_kl"] is ListwiseKLLoss
    assert get_loss("listwise_kl").get_config_dict() == {"temperature": 0.05, "teacher_temperature": None}


def test_matches_the_divergence_worked_out_by_hand():
    # Teacher scores ln 2, 0, 0 at temperature 1: softmax 2/4, 1/4, 1/4. Student at temperature 1: e^1, e^0, e^-1 over
    # their sum.
    teacher = torch.tensor([[math.log(2.0), 0.0, 0.0]])
    output = ListwiseKLLoss(temperature=1.0).compute(QUERY, POSITIVE, negatives=NEGATIVES, teacher_scores=teacher)
    # KL = Σ p_t (ln p_t - s + ln Z), Z = e + 1 + 1/e: 0.5 (ln 0.5 - 1) + 0.25 ln 0.25 + 0.25 (ln 0.25 + 1) + ln Z
    #    = -1.5 ln 2 - 0.25 + ln Z ≈ 0.1179.
    expected = math.log(math.e + 1 + 1 / math.e) - 1.5 * math.log(2) - 0.25
    assert expected == pytest.approx(kl([0.5, 0.25, 0.25], STUDENT_COSINES), abs=1e-12)
    assert output.loss.item() == pytest.approx(expected, abs=1e-6)
    assert output.stats["teacher_positive_probability"].item() == pytest.approx(0.5)
    assert output.stats["student_positive_probability"].item() == pytest.approx(math.e / (math.e + 1 + 1 / math.e))


def test_each_side_has_its_temperature_and_the_mean_is_over_rows():
    # Student at 0.5 (logits 2, 0, -2); teacher scores 4, 2, 0 at 2 (softmax of 2, 1, 0).
    teacher = torch.tensor([[4.0, 2.0, 0.0]])
    loss_fn = ListwiseKLLoss(temperature=0.5, teacher_temperature=2.0)
    z = math.exp(2) + math.exp(1) + 1
    teacher_p = [math.exp(2) / z, math.exp(1) / z, 1 / z]
    expected = kl(teacher_p, [2.0, 0.0, -2.0])
    assert loss_fn(QUERY, POSITIVE, negatives=NEGATIVES, teacher_scores=teacher).item() == pytest.approx(expected)
    # Two rows: the mean of the two divergences (the second row: the teacher agreeing with the student, 0).
    two = loss_fn(
        QUERY.repeat(2, 1),
        POSITIVE.repeat(2, 1),
        negatives=NEGATIVES.repeat(2, 1),
        teacher_scores=torch.tensor([[4.0, 2.0, 0.0], [4.0, 0.0, -4.0]]),  # / 2 = the student's 2, 0, -2
    )
    assert two.item() == pytest.approx(expected / 2, abs=1e-6)


def test_unset_teacher_temperature_is_the_students():
    cosines = torch.tensor([STUDENT_COSINES])
    assert ListwiseKLLoss()(QUERY, POSITIVE, negatives=NEGATIVES, teacher_scores=cosines).item() == pytest.approx(
        0.0, abs=1e-6
    )
    assert (
        ListwiseKLLoss(teacher_temperature=1.0)(QUERY, POSITIVE, negatives=NEGATIVES, teacher_scores=cosines).item()
        > 0.1
    )


def test_gradients_flow_to_every_side_and_match_finite_differences():
    generator = torch.Generator().manual_seed(0)
    q, p = (torch.randn(3, 4, generator=generator, dtype=torch.float64, requires_grad=True) for _ in range(2))
    n = torch.randn(9, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    teacher = torch.randn(3, 4, generator=generator, dtype=torch.float64)
    loss_fn = ListwiseKLLoss(temperature=0.5, teacher_temperature=1.0)
    loss_fn(q, p, negatives=n, teacher_scores=teacher).backward()
    assert all(tensor.grad is not None and tensor.grad.abs().sum() > 0 for tensor in (q, p, n))
    assert torch.autograd.gradcheck(lambda q, p, n: loss_fn(q, p, negatives=n, teacher_scores=teacher), (q, p, n))


def test_refusals_name_the_problem():
    with pytest.raises(ValueError, match="ListwiseKLLoss needs the teacher's scores: .*`teacher_scores` column"):
        ListwiseKLLoss()(QUERY, POSITIVE, negatives=NEGATIVES)
    with pytest.raises(ValueError, match="1 rows needs 2 negatives"):
        ListwiseKLLoss()(QUERY, POSITIVE, negatives=NEGATIVES[:1], teacher_scores=torch.zeros(1, 3))
    with pytest.raises(ValueError, match="temperature must be positive"):
        ListwiseKLLoss(temperature=0.0)
    with pytest.raises(ValueError, match="teacher_temperature must be positive"):
        ListwiseKLLoss(teacher_temperature=-1.0)
