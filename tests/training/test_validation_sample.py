"""`max_eval_pairs`: a large validation set is evaluated and calibrated on a bounded, seeded sample, and says so."""

from __future__ import annotations

from types import SimpleNamespace

import datasets
import numpy as np
import pytest

from hfsiamese.base.model_arguments import ModelArguments
from hfsiamese.data.validation_sample import DEFAULT_MAX_EVAL_PAIRS, sample_validation_pairs, validation_sample_indices
from hfsiamese.metrics import pair_classification_metrics
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits, load_splits_and_validation_size
from hfsiamese.training.run_start import start_run
from hfsiamese.training.run_summary import run_summary
from hfsiamese.utils.console import EVALUATION_BAR_MIN_BATCHES, TrainingProgressCallback
from tests.conftest import QQP_FILE
from tests.fixtures import tiny_training_args

LABELS = np.array([1] * 370 + [0] * 630)[np.random.default_rng(0).permutation(1000)]


def test_a_sample_is_bounded_seeded_stratified_and_a_subset_in_order():
    rows = validation_sample_indices(LABELS, 100, seed=42)
    assert len(rows) == 100 and len(set(rows.tolist())) == 100
    assert rows.min() >= 0 and rows.max() < len(LABELS) and (np.diff(rows) > 0).all()
    assert int(LABELS[rows].sum()) == 37  # the set's duplicate rate, 37%
    assert np.array_equal(rows, validation_sample_indices(LABELS, 100, seed=42))
    assert not np.array_equal(rows, validation_sample_indices(LABELS, 100, seed=1))
    assert not np.array_equal(rows, np.arange(100))  # not the first pairs, whose order follows the split


def test_the_whole_set_when_it_is_small_or_the_bound_is_off():
    for bound in (None, 0, 1000, 5000):
        assert np.array_equal(validation_sample_indices(LABELS, bound, seed=42), np.arange(1000))
    with pytest.raises(ValueError, match="max_eval_pairs must be 0 .all pairs. or more, got -1"):
        validation_sample_indices(LABELS, -1, seed=42)


def test_the_pairs_are_sampled_by_the_labels_given_and_refused_with_labels_of_another_size():
    pairs = datasets.Dataset.from_dict({"question1": [f"q{i}" for i in range(1000)], "label": LABELS.tolist()})
    sample = sample_validation_pairs(pairs, LABELS, 100, seed=42)
    assert (len(sample.pairs), sample.total, sample.sampled) == (100, 1000, True)
    assert sample.pairs["question1"] == [f"q{i}" for i in validation_sample_indices(LABELS, 100, seed=42)]
    assert sample_validation_pairs(pairs, LABELS, None, seed=42).pairs is pairs
    with pytest.raises(ValueError, match="^999 labels for 1000 validation pairs: pass the pairs' own label column$"):
        sample_validation_pairs(pairs, LABELS[:-1], 100, seed=42)


def test_the_bundled_validation_set_is_used_whole_by_default():
    assert DataArguments().max_eval_pairs == DEFAULT_MAX_EVAL_PAIRS == 20_000
    default, total = load_splits_and_validation_size(DataArguments(), default_train_file=QQP_FILE)
    whole = load_splits(DataArguments(max_eval_pairs=0), default_train_file=QQP_FILE)
    assert len(default["validation"]) == total == len(whole["validation"]) < DEFAULT_MAX_EVAL_PAIRS
    assert default["validation"]["question1"][:] == whole["validation"]["question1"][:]


def test_load_splits_samples_a_large_validation_set_with_the_split_seed():
    whole = load_splits(DataArguments(max_eval_pairs=0), default_train_file=QQP_FILE)["validation"]
    splits, total = load_splits_and_validation_size(DataArguments(max_eval_pairs=50), default_train_file=QQP_FILE)
    again = load_splits(DataArguments(max_eval_pairs=50), default_train_file=QQP_FILE)["validation"]
    sample = splits["validation"]
    assert (len(sample), total) == (50, len(whole))
    assert sample["question1"][:] == again["question1"][:]
    pairs = set(zip(whole["question1"], whole["question2"], whole["label"], strict=True))
    assert set(zip(sample["question1"], sample["question2"], sample["label"], strict=True)) <= pairs


def test_evaluation_and_calibration_use_the_sample_and_report_the_set_size(tmp_path):
    data_args = DataArguments(max_train_pairs=200, max_eval_pairs=60)
    model_args = ModelArguments(embedding_dim=16, hidden_size=16, vocab_size=2000)
    training_args = tiny_training_args(tmp_path, per_device_eval_batch_size=16, loss="contrastive")
    run = start_run(model_args, data_args, training_args, default_train_file=QQP_FILE)
    sample = run.splits["validation"]
    assert len(sample) == 60 and run.validation_size is not None and run.validation_size > 60
    trainer = run.trainer(training_args, run.tokenize(run.splits["train"]), run.tokenize(sample))
    assert not any(isinstance(each, TrainingProgressCallback) for each in trainer.callback_handler.callbacks)
    metrics = trainer.evaluate()  # disable_tqdm: no bar at all
    assert (metrics["eval_num_pairs"], metrics["eval_pairs_total"]) == (60, run.validation_size)
    # The stored threshold is the one calibrated on the sample's own scores.
    scores = run.model.score_pairs(list(sample["question1"]), list(sample["question2"]), run.tokenizer)
    expected = pair_classification_metrics(scores.double().numpy(), np.asarray(sample["label"]), threshold=None)
    assert run.model.config.threshold == pytest.approx(expected["threshold"], abs=1e-6)
    assert metrics["eval_average_precision"] == pytest.approx(expected["average_precision"], abs=1e-6)
    assert "eval_pairs_total" not in trainer.evaluate(run.tokenize(sample), metric_key_prefix="test")


def test_the_summary_says_how_many_of_how_many_pairs():
    sampled = {"eval_num_pairs": 20_000, "eval_pairs_total": 396_010, "eval_average_precision": 0.8}
    assert "Validation (20,000 of 396,010 pairs, a sample: --max_eval_pairs 0 evaluates all)" in run_summary(
        "out", sampled
    )
    whole = {"eval_num_pairs": 1_000, "eval_pairs_total": 1_000, "eval_average_precision": 0.8}
    assert "Validation (1,000 pairs): average precision 0.800" in run_summary("out", whole)


@pytest.mark.parametrize("batches", [EVALUATION_BAR_MIN_BATCHES - 1, EVALUATION_BAR_MIN_BATCHES])
def test_a_long_evaluation_shows_a_progress_bar(batches):
    callback = TrainingProgressCallback()
    state = SimpleNamespace(is_world_process_zero=True)
    loader = datasets.Dataset.from_dict({"x": list(range(batches))})  # anything with a length: batches
    callback.on_prediction_step(None, state, None, eval_dataloader=loader)
    assert (callback.prediction_bar is not None) == (batches >= EVALUATION_BAR_MIN_BATCHES)
    callback.on_evaluate(None, state, None)
    assert callback.prediction_bar is None
