"""Threshold search: the best_threshold module, target-precision calibration, and the trainer's use of it."""

import evaluate
import numpy as np
import pytest
from sklearn import metrics as skm
from transformers import EvalPrediction, HfArgumentParser

from hfsiamese import metrics
from hfsiamese.bi_encoder.trainer import SiameseTrainer
from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.metrics import UnreachablePrecisionError, best_threshold, pair_classification_metrics, threshold_sweep


def _scored_pairs(seed, n=300):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = np.round(labels * 0.5 + rng.normal(0, 0.3, n), 2)  # ties included
    return scores, labels


def _brute_force_cuts(scores, labels):
    """(cut, precision, recall) of `score >= cut` for every distinct score, by sklearn, one cut at a time."""
    for cut in np.unique(scores):
        decisions = (scores >= cut).astype(int)
        yield cut, skm.precision_score(labels, decisions, zero_division=0), skm.recall_score(labels, decisions)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("target", [0.6, 0.8, 0.95])
def test_precision_target_gives_the_most_recall_at_that_precision(seed, target):
    scores, labels = _scored_pairs(seed)
    reaching = [(cut, p, r) for cut, p, r in _brute_force_cuts(scores, labels) if p >= target]
    lowest_cut, _, best_recall = min(reaching)
    result = evaluate.load(metrics.BEST_THRESHOLD).compute(
        predictions=scores, references=labels, calibrate_for="precision", target_precision=target
    )
    assert result["best_recall"] == pytest.approx(best_recall)
    assert result["precision_at_best"] >= target
    assert np.array_equal(scores >= result["best_threshold"], scores >= lowest_cut)  # same decisions
    assert best_recall == max(r for _, _, r in reaching)  # the lowest such cut is the max-recall one


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("target,score_fn", [("accuracy", skm.accuracy_score), ("f1", skm.f1_score)])
def test_best_threshold_module_is_optimal(seed, target, score_fn):
    scores, labels = _scored_pairs(seed)
    brute = max(score_fn(labels, (scores >= t).astype(int)) for t in np.concatenate([scores, [np.inf]]))
    result = evaluate.load(metrics.BEST_THRESHOLD).compute(predictions=scores, references=labels, calibrate_for=target)
    assert result[f"best_{target}"] == pytest.approx(brute)
    assert score_fn(labels, (scores >= result["best_threshold"]).astype(int)) == pytest.approx(brute)


def test_pair_classification_calibrates_for_precision():
    scores, labels = _scored_pairs(11)
    result = pair_classification_metrics(scores, labels, calibrate_for="precision", target_precision=0.9)
    assert result["precision"] >= 0.9
    assert result["threshold"] == best_threshold(scores, labels, "precision", 0.9)
    # one cut lower would drop below the target (or there is no lower cut)
    lower = np.unique(scores[scores < result["threshold"]])
    if lower.size:
        decisions = (scores >= lower[-1]).astype(int)
        assert skm.precision_score(labels, decisions) < 0.9


def test_unreachable_precision_is_a_clear_error():
    scores = [0.9, 0.8, 0.7, 0.1]
    labels = [0, 1, 1, 0]  # the top pair is a non-duplicate: precision 1.0 is out of reach
    with pytest.raises(
        UnreachablePrecisionError,
        match=r"no threshold reaches precision 1.0 .*highest precision at any threshold is 0.6667",
    ):
        best_threshold(scores, labels, "precision", 1.0)
    with pytest.raises(ValueError, match="no threshold reaches precision"):
        evaluate.load(metrics.BEST_THRESHOLD).compute(
            predictions=scores, references=labels, calibrate_for="precision", target_precision=1.0
        )


@pytest.mark.parametrize("labels,kind", [([0, 0, 0], "non-duplicates"), ([1, 1, 1], "duplicates")])
@pytest.mark.parametrize("calibrate_for,target", [("accuracy", None), ("f1", None), ("precision", 0.5)])
def test_pairs_of_one_kind_have_no_threshold(labels, kind, calibrate_for, target):
    """Any cut below (or above) every score would be "best" on them: refused, not returned as calibrated."""
    with pytest.raises(ValueError, match=rf"a threshold separates duplicates from non-duplicates: .* all {kind}$"):
        best_threshold([0.3, 0.2, 0.9], labels, calibrate_for, target)
    with pytest.raises(ValueError, match=f"all {kind}"):
        evaluate.load(metrics.BEST_THRESHOLD).compute(
            predictions=[0.3, 0.2, 0.9], references=labels, calibrate_for=calibrate_for, target_precision=target
        )


@pytest.mark.parametrize(
    "calibrate_for,target,message",
    [
        ("precision", None, "needs target_precision"),
        ("precision", 0.0, r"in \(0, 1\]"),
        ("precision", 1.5, r"in \(0, 1\]"),
        ("accuracy", 0.9, "only used with calibrate_for='precision'"),
        ("auc", None, "calibrate_for must be one of"),
    ],
)
def test_calibration_options_are_validated(calibrate_for, target, message):
    with pytest.raises(ValueError, match=message):
        best_threshold([0.1, 0.9], [0, 1], calibrate_for, target)
    with pytest.raises(ValueError, match=message):
        SiameseTrainingArguments(
            output_dir="unused", calibrate_for=calibrate_for, target_precision=target, report_to="none"
        )


def test_threshold_sweep_matches_sklearn_at_every_cut():
    scores, labels = _scored_pairs(5, n=120)
    sweep = threshold_sweep(scores, labels)
    assert np.all(np.diff(sweep.thresholds) < 0)
    for i, cut in enumerate(sweep.thresholds):
        decisions = (scores >= cut).astype(int)
        assert sweep.accuracy[i] == pytest.approx(skm.accuracy_score(labels, decisions))
        assert sweep.precision[i] == pytest.approx(skm.precision_score(labels, decisions, zero_division=0))
        assert sweep.recall[i] == pytest.approx(skm.recall_score(labels, decisions))
        assert sweep.f1[i] == pytest.approx(skm.f1_score(labels, decisions))


def test_training_arguments_take_the_flags():
    (args,) = HfArgumentParser(SiameseTrainingArguments).parse_args_into_dataclasses(
        ["--output_dir", "unused", "--calibrate_for", "precision", "--target_precision", "0.85", "--report_to", "none"]
    )
    assert args.calibrate_for == "precision" and args.target_precision == 0.85
    with pytest.raises(SystemExit):  # argparse refuses a value outside the choices
        HfArgumentParser(SiameseTrainingArguments).parse_args_into_dataclasses(
            ["--output_dir", "unused", "--calibrate_for", "recall"]
        )


def _trainer(model, tokenizer, tmp_path, target):
    args = SiameseTrainingArguments(
        output_dir=str(tmp_path), calibrate_for="precision", target_precision=target, report_to="none", use_cpu=True
    )
    trainer = SiameseTrainer(model=model, args=args, processing_class=tokenizer)
    trainer.calibration.calibrating = True  # as during an evaluation on the validation pairs
    return trainer


def test_trainer_calibrates_for_a_target_precision(tiny_lstm, word_tokenizer, tmp_path):
    scores, labels = _scored_pairs(2)
    result = _trainer(tiny_lstm, word_tokenizer, tmp_path, 0.9).calibration(
        EvalPrediction(predictions=scores, label_ids=labels)
    )
    assert result["precision"] >= 0.9
    assert result["threshold"] == best_threshold(scores, labels, "precision", 0.9)


def test_trainer_keeps_running_when_the_target_is_out_of_reach(tiny_lstm, word_tokenizer, tmp_path, caplog):
    scores = np.array([0.9, 0.8, 0.7, 0.1])
    labels = np.array([0, 1, 1, 0])
    result = _trainer(tiny_lstm, word_tokenizer, tmp_path, 1.0).calibration(
        EvalPrediction(predictions=scores, label_ids=labels)
    )
    assert result["threshold"] > scores.max() and result["recall"] == 0.0
    assert "no threshold reaches precision 1.0" in caplog.text
