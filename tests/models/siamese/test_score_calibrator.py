"""`hfsiamese.models.siamese.score_calibrator`: a stored score-to-probability map, applied as scikit-learn would, with and without hfsiamese."""

import json

import numpy as np
import pytest
import torch
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from hfsiamese import SiameseConfig
from hfsiamese.models.siamese.score_calibrator import ScoreCalibrator, check_calibration
from tests.fixtures import PAIRS
from tests.helpers import BLOCK_HFSIAMESE, run_without_hfsiamese


def _scores_and_labels(n=400, seed=0):
    rng = np.random.default_rng(seed)
    scores = rng.uniform(-1, 1, n)
    labels = (rng.random(n) < 1 / (1 + np.exp(-(4 * scores - 0.5)))).astype(int)
    return scores, labels


def test_platt_applies_the_logistic_regression_of_the_label_on_the_score():
    scores, labels = _scores_and_labels()
    regression = LogisticRegression(C=100.0).fit(scores[:, None], labels)
    calibrator = ScoreCalibrator("platt", coef=float(regression.coef_[0, 0]), intercept=float(regression.intercept_[0]))
    new = np.linspace(-1.5, 1.5, 31)
    assert calibrator.probability(torch.tensor(new)).numpy() == pytest.approx(
        regression.predict_proba(new[:, None])[:, 1], abs=1e-6
    )


def test_isotonic_interpolates_the_breakpoints_as_scikit_learn_predicts():
    scores, labels = _scores_and_labels()
    regression = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(scores, labels)
    calibrator = ScoreCalibrator(
        "isotonic", scores=tuple(regression.X_thresholds_), probabilities=tuple(regression.y_thresholds_)
    )
    new = np.concatenate([np.linspace(-1.5, 1.5, 301), scores])  # beyond the ends, between and on breakpoints
    assert calibrator.probability(new).numpy() == pytest.approx(regression.predict(new), abs=1e-6)


@pytest.mark.parametrize(
    "calibrator",
    [
        ScoreCalibrator("platt", coef=6.0, intercept=-2.0),
        ScoreCalibrator("isotonic", scores=(-0.5, 0.0, 0.2, 0.2, 0.8), probabilities=(0.05, 0.1, 0.4, 0.6, 0.95)),
    ],
    ids=["platt", "isotonic"],
)
def test_a_probability_threshold_is_the_lowest_score_reaching_it(calibrator):
    scores = torch.linspace(-1, 1, 2001, dtype=torch.float64)
    probabilities = calibrator.probability(scores).double()
    for p in (0.07, 0.25, 0.5, 0.9):
        cut = calibrator.score_threshold(p)
        decided = scores >= cut
        # Same decisions as comparing probabilities, up to the float32 rounding right at the cut.
        disagree = decided != (probabilities >= p)
        assert (scores[disagree] - cut).abs().max().item() < 1e-5 if disagree.any() else True
        at_cut, below = calibrator.probability(torch.tensor([cut, cut - 1e-4], dtype=torch.float64)).tolist()
        assert at_cut >= p - 1e-6 and below < p  # equal to p where the map is continuous there, above it at a jump
    assert calibrator.score_threshold(1.0) == np.inf
    assert calibrator.score_threshold(0.0) == -np.inf


def test_isotonic_ends_reach_everything_or_nothing():
    calibrator = ScoreCalibrator("isotonic", scores=(0.0, 0.5), probabilities=(0.3, 0.6))
    assert calibrator.score_threshold(0.2) == -np.inf  # every score has P >= 0.3
    assert calibrator.score_threshold(0.7) == np.inf  # no score reaches 0.7
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\], got 1.5"):
        calibrator.score_threshold(1.5)


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ({"method": "platt", "coef": -1.0, "intercept": 0.0}, "less likely duplicate"),
        ({"method": "platt", "coef": 1.0}, "lacks 'intercept'"),
        ({"method": "isotonic", "scores": [0.0, 1.0], "probabilities": [0.9, 0.1]}, "non-decreasing"),
        ({"method": "isotonic", "scores": [0.0], "probabilities": [0.1, 0.2]}, "as many breakpoint"),
        ({"method": "temperature"}, "must be one of"),
    ],
)
def test_a_calibration_that_cannot_be_applied_is_refused(stored, message):
    with pytest.raises(ValueError, match=message):
        check_calibration(stored)
    with pytest.raises(ValueError, match=message):
        SiameseConfig(calibration=stored)


def test_the_config_keeps_it_as_plain_numbers():
    stored = {"method": "platt", "coef": 3.0, "intercept": -1.0, "num_pairs": 80, "data": "mine.tsv"}
    config = SiameseConfig.from_dict(json.loads(SiameseConfig(calibration=stored, threshold=0.3).to_json_string()))
    assert config.calibration == stored
    assert ScoreCalibrator.from_config(config) == ScoreCalibrator("platt", coef=3.0, intercept=-1.0)
    assert ScoreCalibrator.from_config(SiameseConfig(calibration={"method": "threshold"})) is None
    assert ScoreCalibrator.from_config(SiameseConfig()) is None


CHILD = (
    BLOCK_HFSIAMESE
    + r"""
import json
from transformers import AutoModel, pipeline

folder, pairs = sys.argv[1], json.loads(sys.argv[2])
model = AutoModel.from_pretrained(folder, trust_remote_code=True)
out = model.predict([a for a, _ in pairs], [b for _, b in pairs], probability_threshold=0.5)
pipe = pipeline("question-duplicates", model=folder, trust_remote_code=True)
print(json.dumps({
    "module": type(model).__module__,
    "scores": out["scores"].tolist(),
    "probability": out["probability"].tolist(),
    "is_duplicate": out["is_duplicate"].tolist(),
    "pipeline": pipe([tuple(pair) for pair in pairs], probability_threshold=0.5),
}))
"""
)


@pytest.mark.parametrize(
    "stored",
    [
        {"method": "platt", "coef": 8.0, "intercept": -4.0},
        {"method": "isotonic", "scores": [0.0, 0.4, 0.9], "probabilities": [0.1, 0.5, 0.8]},
    ],
    ids=["platt", "isotonic"],
)
@pytest.mark.slow
def test_a_calibrated_checkpoint_applies_its_map_without_hfsiamese(stored, tiny_lstm, word_tokenizer, tmp_path):
    tiny_lstm.config.threshold = 0.9
    tiny_lstm.config.calibration = stored
    folder = tmp_path / "calibrated"
    tiny_lstm.save_pretrained(folder)
    word_tokenizer.save_pretrained(folder)
    assert (folder / "calibration.py").is_file()
    expected = tiny_lstm.predict(
        [a for a, _ in PAIRS], [b for _, b in PAIRS], word_tokenizer, probability_threshold=0.5
    )
    child = run_without_hfsiamese(CHILD, [folder, json.dumps(PAIRS)], tmp_path)
    assert child["module"].startswith("transformers_modules")
    assert child["scores"] == pytest.approx(expected["scores"].tolist(), abs=1e-6)
    assert child["probability"] == pytest.approx(expected["probability"].tolist(), abs=1e-6)
    assert child["is_duplicate"] == expected["is_duplicate"].tolist()
    assert [r["probability"] for r in child["pipeline"]] == pytest.approx(child["probability"], abs=1e-6)
    assert [r["is_duplicate"] for r in child["pipeline"]] == child["is_duplicate"]
    # The decision is the probability's, not the stored score threshold 0.9.
    assert child["is_duplicate"] == [p >= 0.5 for p in child["probability"]]
