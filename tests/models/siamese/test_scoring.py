"""`hfsiamese.models.siamese.scoring`: one definition of a pair's score, its unit and the threshold that applies."""

import pytest
import torch

from hfsiamese import SiameseConfig
from hfsiamese.models.siamese.modeling_siamese import PairClassificationHead
from hfsiamese.models.siamese.scoring import (
    check_threshold,
    embedding_pair_scores,
    embedding_score_matrix,
    pair_scores,
    resolve_threshold,
    score_unit,
    threshold_in_unit,
)


def _unit_rows(n, dim=4, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.nn.functional.normalize(torch.randn(n, dim, generator=generator), dim=-1)


def test_the_unit_follows_the_head():
    assert score_unit(SiameseConfig()) == "cosine"
    assert score_unit(SiameseConfig(classifier_head=True)) == "probability"


def test_pair_scores_are_the_duplicate_probability_when_there_are_logits():
    similarity, logits = torch.tensor([0.2, -0.5]), torch.tensor([[0.0, 2.0], [1.0, -1.0]])
    assert torch.equal(pair_scores(similarity), similarity)
    assert torch.allclose(pair_scores(similarity, logits), torch.sigmoid(logits[:, 1] - logits[:, 0]))


def test_embedding_scores_without_a_head_are_cosines():
    a, b = _unit_rows(3), _unit_rows(2, seed=1)
    scores, probabilities = embedding_pair_scores(a[:2], b)
    assert probabilities is None
    assert torch.allclose(scores, torch.nn.functional.cosine_similarity(a[:2], b))
    assert torch.allclose(embedding_score_matrix(a, b), a @ b.T)


def test_the_score_matrix_agrees_with_pair_scores_under_a_head():
    torch.manual_seed(0)
    head = PairClassificationHead(4, hidden_size=5)
    a, b = _unit_rows(3), _unit_rows(2, seed=1)
    matrix = embedding_score_matrix(a, b, head)
    assert matrix.shape == (3, 2)
    for i in range(3):
        scores, probabilities = embedding_pair_scores(a[i].expand(2, -1), b, head)
        assert torch.allclose(matrix[i], scores, atol=1e-6)
        assert torch.allclose(probabilities.sum(dim=-1), torch.ones(2))
        assert torch.allclose(scores, probabilities[:, 1])
    assert embedding_score_matrix(a[:0], b, head).shape == (0, 2)


def test_a_probability_threshold_is_no_cosine_threshold():
    assert threshold_in_unit(SiameseConfig(threshold=0.7), "cosine") == 0.7
    head = SiameseConfig(classifier_head=True, threshold=0.7)
    assert threshold_in_unit(head, "cosine") is None
    assert threshold_in_unit(head, "probability") == 0.7
    assert threshold_in_unit(None, "cosine") is None


def test_resolve_threshold_prefers_the_given_one_and_says_when_there_is_none():
    assert resolve_threshold(0.2, 0.9) == 0.2
    assert resolve_threshold(None, 0.9) == 0.9
    assert resolve_threshold(0, None) == 0.0 and isinstance(resolve_threshold(0, None), float)
    message = r"^no threshold to decide: pass threshold=.*calibrate.*SiameseTrainer\.evaluate.*; see here$"
    with pytest.raises(ValueError, match=message):
        resolve_threshold(None, None, purpose=" to decide", hint="; see here")


def test_check_threshold_refuses_what_no_score_reaches():
    assert check_threshold(None) is None and check_threshold(1) == 1.0
    with pytest.raises(ValueError, match=r"must lie in \[-1, 1\], got 1.5"):
        check_threshold(1.5)


def test_a_probability_threshold_goes_through_the_stored_calibration():
    from hfsiamese.models.siamese.scoring import pair_probability, resolve_decision_threshold

    config = SiameseConfig(threshold=0.7, calibration={"method": "platt", "coef": 4.0, "intercept": -2.0})
    assert resolve_decision_threshold(config) == 0.7
    assert resolve_decision_threshold(config, threshold=0.1) == 0.1
    assert resolve_decision_threshold(config, probability_threshold=0.5) == pytest.approx(0.5)  # 4 s - 2 = 0
    assert torch.allclose(pair_probability(config, torch.tensor([0.5])), torch.tensor([0.5]))
    with pytest.raises(ValueError, match="not both"):
        resolve_decision_threshold(config, threshold=0.1, probability_threshold=0.5)
    plain = SiameseConfig(threshold=0.7)
    assert pair_probability(plain, torch.tensor([0.5])) is None
    with pytest.raises(ValueError, match="needs a model calibrated to probabilities"):
        resolve_decision_threshold(plain, probability_threshold=0.5)
