"""MarginMSELoss against margins worked out by hand on 2-d unit vectors."""

import pytest
import torch

from hfsiamese.losses import LOSSES, MarginMSELoss, get_loss

# Two rows, two negatives each, in 2-d so that every cosine is read off: row 0's query (1, 0) has cosine 1 with
# its positive (1, 0), 0 with (0, 1) and -1 with (-1, 0); row 1's query (0, 1) has 0.8 with (0.6, 0.8), 0 with
# (1, 0) and 0.6 with (0.8, 0.6).
QUERIES = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
POSITIVES = torch.tensor([[1.0, 0.0], [0.6, 0.8]])
NEGATIVES = torch.tensor([[0.0, 1.0], [-1.0, 0.0], [1.0, 0.0], [0.8, 0.6]])  # row 0's two, then row 1's
TEACHER = torch.tensor([[3.0, 1.0, 2.0], [0.5, 0.0, 0.5]])


def test_is_registered_as_margin_mse():
    assert LOSSES["margin_mse"] is MarginMSELoss
    assert get_loss("margin_mse", similarity_scale=2.0).get_config_dict() == {"similarity_scale": 2.0}


def test_matches_the_margins_worked_out_by_hand():
    # Student margins: row 0: 1 - 0 = 1, 1 - (-1) = 2; row 1: 0.8 - 0 = 0.8, 0.8 - 0.6 = 0.2.
    # Teacher margins: row 0: 3 - 1 = 2, 3 - 2 = 1; row 1: 0.5 - 0 = 0.5, 0.5 - 0.5 = 0.
    # Squared differences: 1, 1, 0.09, 0.04; their mean over the 2 x 2 margins: 2.13 / 4.
    output = MarginMSELoss().compute(QUERIES, POSITIVES, negatives=NEGATIVES, teacher_scores=TEACHER)
    assert output.loss.item() == pytest.approx(2.13 / 4, abs=1e-6)
    assert output.stats["student_margin"].item() == pytest.approx((1 + 2 + 0.8 + 0.2) / 4, abs=1e-6)
    assert output.stats["teacher_margin"].item() == pytest.approx((2 + 1 + 0.5 + 0) / 4, abs=1e-6)


def test_similarity_scale_multiplies_the_student_cosines():
    # Scaled by 2, the student margins are 2, 4, 1.6, 0.4: differences 0, 3, 1.1, 0.4, squares 0, 9, 1.21, 0.16.
    loss = MarginMSELoss(similarity_scale=2.0)(QUERIES, POSITIVES, negatives=NEGATIVES, teacher_scores=TEACHER)
    assert loss.item() == pytest.approx(10.37 / 4, abs=1e-5)


def test_only_margins_count_an_offset_of_the_teacher_changes_nothing():
    loss = MarginMSELoss()(QUERIES, POSITIVES, negatives=NEGATIVES, teacher_scores=TEACHER)
    shifted = MarginMSELoss()(QUERIES, POSITIVES, negatives=NEGATIVES, teacher_scores=TEACHER + 7.0)
    assert shifted.item() == pytest.approx(loss.item(), abs=1e-6)
    # A teacher scoring as the student does: nothing to learn.
    student = torch.tensor([[1.0, 0.0, -1.0], [0.8, 0.0, 0.6]])
    assert MarginMSELoss()(QUERIES, POSITIVES, negatives=NEGATIVES, teacher_scores=student).item() == pytest.approx(0)


def test_gradients_flow_to_every_side_and_match_finite_differences():
    generator = torch.Generator().manual_seed(0)
    q, p = (torch.randn(3, 4, generator=generator, dtype=torch.float64, requires_grad=True) for _ in range(2))
    n = torch.randn(6, 4, generator=generator, dtype=torch.float64, requires_grad=True)
    teacher = torch.randn(3, 3, generator=generator, dtype=torch.float64)
    loss_fn = MarginMSELoss(similarity_scale=3.0)
    loss_fn(q, p, negatives=n, teacher_scores=teacher).backward()
    assert all(tensor.grad is not None and tensor.grad.abs().sum() > 0 for tensor in (q, p, n))
    assert torch.autograd.gradcheck(lambda q, p, n: loss_fn(q, p, negatives=n, teacher_scores=teacher), (q, p, n))


def test_refusals_name_the_problem():
    loss_fn = MarginMSELoss()
    with pytest.raises(ValueError, match="MarginMSELoss needs the teacher's scores: .*`teacher_scores` column"):
        loss_fn(QUERIES, POSITIVES, negatives=NEGATIVES)
    with pytest.raises(ValueError, match="MarginMSELoss needs `negatives`"):
        loss_fn(QUERIES, POSITIVES, teacher_scores=TEACHER)
    with pytest.raises(ValueError, match="3 scores per row, so each of the 2 rows needs 2 negatives"):
        loss_fn(QUERIES, POSITIVES, negatives=NEGATIVES[:2], teacher_scores=TEACHER)
    with pytest.raises(ValueError, match="at least 2 scores per row"):
        loss_fn(QUERIES, POSITIVES, negatives=NEGATIVES, teacher_scores=TEACHER[:, :1])
    with pytest.raises(ValueError, match=r"must be \(batch, 1 \+ negatives per row\) with batch 2"):
        loss_fn(QUERIES, POSITIVES, negatives=NEGATIVES, teacher_scores=TEACHER[:1])
    with pytest.raises(ValueError, match="NaN or infinite"):
        loss_fn(QUERIES, POSITIVES, negatives=NEGATIVES, teacher_scores=torch.full((2, 3), float("nan")))
    with pytest.raises(ValueError, match="similarity_scale must be positive"):
        MarginMSELoss(similarity_scale=0.0)
