"""`model.calibrate`: each method against scikit-learn / the trainer's threshold search, the bootstrap interval, the report."""

import numpy as np
import pytest
import torch
from sklearn.isotonic import IsotonicRegression

from hfsiamese import SiameseConfig
from hfsiamese.calibration_fitting import bootstrap_thresholds, calibrate_model, fit_calibrator, fit_threshold
from hfsiamese.metrics.thresholds import best_threshold
from hfsiamese.models.siamese.score_calibrator import ScoreCalibrator


def _synthetic(n, seed=0, slope=6.0, offset=-3.0):
    """Scores in [-1, 1] whose true P(duplicate) is sigmoid(slope * score + offset)."""
    rng = np.random.default_rng(seed)
    scores = rng.uniform(-1, 1, n)
    labels = (rng.random(n) < 1 / (1 + np.exp(-(slope * scores + offset)))).astype(np.int64)
    return scores, labels


class ScoredModel:
    """What calibrate_model needs of a model: `score_pairs` (here fixed scores, one per pair) and a config."""

    def __init__(self, scores, config=None):
        self.scores = torch.tensor(scores, dtype=torch.float32)
        self.config = config or SiameseConfig(threshold=0.9)

    def score_pairs(self, texts_a, texts_b, tokenizer=None, **kwargs):
        return self.scores[[int(text) for text in texts_a]]


def _pairs(n):
    return [(str(i), f"other {i}") for i in range(n)]


def test_platt_recovers_the_true_logistic_curve():
    scores, labels = _synthetic(20000)
    calibrator = fit_calibrator(scores, labels, "platt")
    assert calibrator.coef == pytest.approx(6.0, rel=0.1)
    assert calibrator.intercept == pytest.approx(-3.0, rel=0.1)


def test_isotonic_is_scikit_learns_fit():
    scores, labels = _synthetic(500)
    calibrator = fit_calibrator(scores, labels, "isotonic")
    expected = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(scores, labels).predict(scores)
    assert calibrator.probability(scores).numpy() == pytest.approx(expected, abs=1e-6)


def test_platt_refuses_scores_that_rank_duplicates_lower():
    scores, labels = _synthetic(300)
    with pytest.raises(ValueError, match="does not rank this domain's pairs"):
        fit_calibrator(-scores, labels, "platt")


@pytest.mark.parametrize(("target", "target_precision"), [("accuracy", None), ("f1", None), ("precision", 0.8)])
def test_the_threshold_method_is_the_trainers_search(target, target_precision):
    scores, labels = _synthetic(300)
    threshold, calibrator = fit_threshold(scores, labels, "threshold", target, target_precision)
    assert calibrator is None
    assert threshold == best_threshold(scores, labels, calibrate_for=target, target_precision=target_precision)


def test_probability_methods_decide_for_accuracy_where_the_probability_crosses_one_half():
    scores, labels = _synthetic(2000)
    for method in ("platt", "isotonic"):
        threshold, calibrator = fit_threshold(scores, labels, method)
        assert threshold == calibrator.score_threshold(0.5)
    threshold, _ = fit_threshold(scores, labels, "platt")
    assert threshold == pytest.approx(0.5, abs=0.05)  # true crossing: 6 s - 3 = 0


def test_the_bootstrap_interval_is_the_percentiles_of_refitted_thresholds():
    scores, labels = _synthetic(100)
    found, failed = bootstrap_thresholds(scores, labels, "threshold", "accuracy", None, num_bootstrap=200, seed=3)
    rng = np.random.default_rng(3)
    expected = []
    for _ in range(200):
        rows = rng.integers(0, 100, 100)
        expected.append(best_threshold(scores[rows], labels[rows]))
    assert failed == 0
    assert found == pytest.approx(np.asarray(expected))

    model = ScoredModel(scores)
    report = calibrate_model(model, _pairs(100), labels, num_bootstrap=200, seed=3)
    assert report.threshold_interval == pytest.approx(tuple(np.percentile(expected, [5, 95])))
    assert report.threshold_interval[0] <= report.threshold <= report.threshold_interval[1]
    assert report.interval_confidence == 0.9 and report.num_bootstrap == 200


def test_the_interval_narrows_with_more_pairs_and_covers_the_true_threshold():
    widths = []
    for n in (60, 2000):
        scores, labels = _synthetic(n, seed=1)
        report = calibrate_model(ScoredModel(scores), _pairs(n), labels, method="platt", num_bootstrap=300)
        low, high = report.threshold_interval
        assert low <= 0.5 <= high  # the accuracy-optimal threshold of the true curve
        widths.append(high - low)
    assert widths[1] < widths[0] / 3


def test_calibrate_stores_plain_numbers_and_reports_metrics():
    scores, labels = _synthetic(400)
    model = ScoredModel(scores)
    report = calibrate_model(model, _pairs(400), labels, method="isotonic", data_name="mine.tsv", num_bootstrap=50)
    assert model.config.threshold == report.threshold
    stored = model.config.calibration
    assert stored["method"] == "isotonic" and stored["num_pairs"] == 400 and stored["data"] == "mine.tsv"
    assert all(isinstance(v, float) for v in stored["scores"] + stored["probabilities"])
    assert ScoreCalibrator.from_config(model.config) == fit_calibrator(
        model.scores.double().numpy(), labels, "isotonic"
    )
    assert report.num_duplicates == int(labels.sum())
    decided = scores >= report.threshold
    assert report.metrics["accuracy"] == pytest.approx((decided == labels).mean())
    assert 0 <= report.metrics["ece"] < 0.05 and 0 < report.metrics["brier"] < 0.25
    assert report.to_dict()["calibration"] == stored


def test_a_threshold_calibration_drops_a_probability_map_fitted_elsewhere():
    scores, labels = _synthetic(200)
    config = SiameseConfig(threshold=0.9, calibration={"method": "platt", "coef": 1.0, "intercept": 0.0})
    model = ScoredModel(scores, config)
    calibrate_model(model, _pairs(200), labels, method="threshold", num_bootstrap=20)
    assert model.config.calibration["method"] == "threshold"
    assert ScoreCalibrator.from_config(model.config) is None


def test_warns_when_the_pairs_are_too_few_for_the_precision_asked():
    scores, labels = _synthetic(60)
    report = calibrate_model(
        ScoredModel(scores), _pairs(60), labels, calibrate_for="precision", target_precision=0.95, num_bootstrap=50
    )
    assert any("too few to vouch for precision 0.95" in note for note in report.warnings)
    scores, labels = _synthetic(5000, slope=40.0, offset=-20.0)  # almost separable: precision 0.8 is well supported
    report = calibrate_model(
        ScoredModel(scores), _pairs(5000), labels, calibrate_for="precision", target_precision=0.8, num_bootstrap=20
    )
    assert not any("too few" in note for note in report.warnings)


def test_pairs_from_a_dataset_and_clear_errors():
    import datasets

    scores, labels = _synthetic(50)
    pairs = datasets.Dataset.from_dict(
        {"question1": [str(i) for i in range(50)], "question2": ["x"] * 50, "label": labels.tolist()}
    )
    report = calibrate_model(ScoredModel(scores), pairs, num_bootstrap=10)
    assert report.num_pairs == 50
    with pytest.raises(ValueError, match="method must be one of"):
        calibrate_model(ScoredModel(scores), pairs, method="beta")
    with pytest.raises(ValueError, match="needs target_precision"):
        calibrate_model(ScoredModel(scores), pairs, calibrate_for="precision")
    with pytest.raises(ValueError, match="are all non-duplicates"):
        calibrate_model(ScoredModel(scores), _pairs(50), np.zeros(50, dtype=int))
    with pytest.raises(ValueError, match="got 50 pairs but 3 labels"):
        calibrate_model(ScoredModel(scores), _pairs(50), [0, 1, 0])


def test_the_model_method_reaches_the_fitting(tiny_lstm, word_tokenizer):
    pairs = [
        ("how do i learn python ?", "what is the best way to learn python ?"),
        ("why is the sky blue ?", "how do i cook rice ?"),
    ]
    pairs = pairs * 10
    labels = [1, 0] * 10
    report = tiny_lstm.calibrate(pairs, labels, method="platt", tokenizer=word_tokenizer, num_bootstrap=20)
    scores = tiny_lstm.score_pairs([a for a, _ in pairs], [b for _, b in pairs], word_tokenizer)
    assert report.metrics["accuracy"] == pytest.approx(
        ((scores >= report.threshold).long() == torch.tensor(labels)).float().mean().item()
    )
    assert tiny_lstm.config.calibration["method"] == "platt"
