"""`predict`, one decision for both families (`hfsiamese/models/siamese/pair_decisions.py`)."""

from types import SimpleNamespace

import pytest
import torch

from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.models.siamese.modeling_siamese import SiameseModel
from hfsiamese.models.siamese.pair_decisions import PairDecisionMixin


class FixedScores(PairDecisionMixin):
    """A model whose scores are given, so that only the decision is under test."""

    def __init__(self, scores, beside=None, threshold=0.5, calibration=None):
        self.config = SimpleNamespace(threshold=threshold, calibration=calibration)
        self.scores, self.beside, self.calls = torch.tensor(scores), beside or {}, []

    def _decision_scores(self, texts_a, texts_b, tokenizer, **score_kwargs):
        self.calls.append((list(texts_a), list(texts_b), tokenizer, score_kwargs))
        return self.scores, self.beside


def test_both_families_decide_with_the_one_predict():
    assert SiameseModel.predict is PairDecisionMixin.predict
    assert CrossEncoder.predict is PairDecisionMixin.predict


def test_predict_decides_at_the_stored_or_given_threshold_and_passes_the_scoring_options_on():
    model = FixedScores([0.2, 0.5, 0.9], beside={"probabilities": torch.zeros(3, 2)})
    result = model.predict(["a", "b", "c"], ["d", "e", "f"], "tok", batch_size=2)
    assert list(result) == ["scores", "is_duplicate", "probabilities"]
    assert result["is_duplicate"].tolist() == [False, True, True]
    assert model.calls == [(["a", "b", "c"], ["d", "e", "f"], "tok", {"batch_size": 2})]
    assert model.predict(["a"] * 3, ["b"] * 3, threshold=0.95)["is_duplicate"].tolist() == [False, False, False]


def test_a_threshold_outside_the_scores_range_is_refused_before_scoring():
    model = FixedScores([0.2])
    with pytest.raises(ValueError, match=r"threshold is a cosine similarity and must lie in \[-1, 1\], got 5"):
        model.predict(["a"], ["b"], threshold=5)
    probabilities = FixedScores([0.2])
    probabilities.config.score_unit = "probability"  # a cross-encoder's (or a classification head's) scores
    with pytest.raises(ValueError, match=r"threshold is a P\(duplicate\) for this model .* \[0, 1\], got -0.5"):
        probabilities.predict(["a"], ["b"], threshold=-0.5)
    assert model.calls == probabilities.calls == []  # refused before any scoring


def test_a_probability_calibration_adds_the_probability_and_takes_probability_thresholds():
    platt = {"method": "platt", "coef": 10.0, "intercept": -5.0}  # P = sigmoid(10 s - 5): 0.5 at s = 0.5
    model = FixedScores([0.2, 0.6], calibration=platt)
    result = model.predict(["a", "b"], ["c", "d"], probability_threshold=0.9)
    assert result["probability"] == pytest.approx(torch.sigmoid(torch.tensor([-3.0, 1.0])))
    assert result["is_duplicate"].tolist() == [False, False]  # P(0.6) = 0.73 < 0.9
    with pytest.raises(ValueError, match="not both"):
        model.predict(["a"], ["b"], threshold=0.5, probability_threshold=0.5)
    with pytest.raises(ValueError, match="probability"):
        FixedScores([0.2]).predict(["a"], ["b"], probability_threshold=0.5)  # no stored calibration
