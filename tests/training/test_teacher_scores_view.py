"""The teacher_scores view: `hfsiamese train --loss margin_mse --teacher_scores_file ...` trains on a teacher's scores."""

import json

import pytest

from hfsiamese.cli.train import main as train_main
from hfsiamese.losses import get_loss
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits, training_view
from tests.conftest import QQP_FILE
from tests.fixtures import write_scored_rows
from tests.helpers import TINY_LSTM_BASE, recipe_flags

SIZES = {"max_train_pairs": 200, "max_eval_pairs": 64}


@pytest.fixture(scope="module")
def scored_file(tmp_path_factory):
    """Rows of training questions only: each pair's first question, its second, and two other second questions."""
    train = load_splits(DataArguments(train_file=str(QQP_FILE), **SIZES))["train"]
    return write_scored_rows(tmp_path_factory.mktemp("scored") / "scored.jsonl", train)


def test_the_view_is_the_file_and_needs_it(scored_file):
    data = DataArguments(train_file=str(QQP_FILE), teacher_scores_file=str(scored_file), **SIZES)
    train = load_splits(data)["train"]
    rows = training_view(train, data, get_loss("listwise_kl"), None, None)
    assert len(rows) == 40 and rows.column_names == ["question1", "question2", "negative", "teacher_scores"]
    with pytest.raises(ValueError, match="give --teacher_scores_file"):
        training_view(train, DataArguments(train_file=str(QQP_FILE), **SIZES), get_loss("margin_mse"), None, None)
    with pytest.warns(UserWarning, match="the duplicate_pairs view ignores it"):
        training_view(train, data, get_loss("multiple_negatives_ranking"), None, None)


def test_rows_holding_a_validation_question_are_refused_before_training(scored_file, tmp_path):
    splits = load_splits(DataArguments(train_file=str(QQP_FILE), **SIZES))
    row = {"question1": splits["validation"][0]["question1"], "question2": "what is it ?", "negative": ["why ?"],
           "teacher_scores": [0.5, 0.1]}  # fmt: skip
    leaking = tmp_path / "leaking.jsonl"
    leaking.write_text(scored_file.read_text(encoding="utf-8") + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="1 of 41 teacher-score rows in .* hold a validation or test question"):
        load_splits(DataArguments(train_file=str(QQP_FILE), teacher_scores_file=str(leaking), **SIZES))


@pytest.mark.parametrize("loss", ["margin_mse", "listwise_kl"])
def test_hfsiamese_train_trains_on_the_scores(scored_file, tmp_path, loss):
    values = {**TINY_LSTM_BASE, "train_file": QQP_FILE, **SIZES, "loss": loss, "teacher_scores_file": scored_file,
              "max_steps": 3, "report_to": "none"}  # fmt: skip
    metrics = train_main(recipe_flags(values, tmp_path / "out"))
    assert metrics["train_samples"] == 40 and metrics["eval_num_pairs"] == 64
    assert (tmp_path / "out" / "model.safetensors").is_file()
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert loss in card
