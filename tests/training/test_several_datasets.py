"""Several data sets in a `hfsiamese train` config: the entries read, checked, and one short run on two of them."""

from __future__ import annotations

import json
import sys

import pytest

from hfsiamese.bi_encoder.training_args import SiameseTrainingArguments
from hfsiamese.losses import ContrastiveLoss, MultipleNegativesRankingLoss
from hfsiamese.training.arguments import DataArguments, model_card_kwargs
from hfsiamese.training.preparation import load_splits
from hfsiamese.training.several_datasets import dataset_weights, training_datasets
from tests.conftest import QQP_FILE
from tests.helpers import TINY_LSTM_BASE, recipe_flags, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real


def _entries(*entries, **top):
    return training_datasets(DataArguments(train_datasets=list(entries), **top))


def test_entries_take_the_top_level_data_arguments_and_their_own():
    first, second = _entries(
        {"train_file": "data/first.csv", "loss": "contrastive", "margin": 0.3, "validation_fraction": 0.2},
        {"name": "hub", "dataset_name": "nyu-mll/glue", "dataset_config_name": "qqp", "question1_column": "q1"},
        validation_fraction=0.1,
        split_seed=7,
    )
    assert first.name == "first" and second.name == "hub"
    assert first.data_args.validation_fraction == 0.2 and second.data_args.validation_fraction == 0.1
    assert first.data_args.split_seed == second.data_args.split_seed == 7
    assert second.data_args.dataset_source == "nyu-mll/glue:qqp" and second.data_args.question1_column == "q1"
    assert first.data_args.train_datasets is None
    args = SiameseTrainingArguments(output_dir="unused", loss="multiple_negatives_ranking", use_cpu=True)
    loss = first.build_loss(args)
    assert isinstance(loss, ContrastiveLoss) and loss.margin == 0.3
    assert isinstance(second.build_loss(args), MultipleNegativesRankingLoss)  # the run's loss
    assert dataset_weights([first, second]) is None


def test_weights_and_a_json_list_from_the_command_line():
    data_args = DataArguments(
        train_datasets=json.dumps([{"train_file": "a.csv", "weight": 3}, {"train_file": "b.csv", "weight": 1}])
    )
    assert dataset_weights(training_datasets(data_args)) == {"a": 3.0, "b": 1.0}
    assert model_card_kwargs_dataset(data_args) == ["a.csv", "b.csv"]


def model_card_kwargs_dataset(data_args):
    from hfsiamese.base.model_arguments import ModelArguments

    return model_card_kwargs(ModelArguments(), data_args)["dataset"]


@pytest.mark.parametrize(
    "entries,top,message",
    [
        ([{"train_file": "a.csv", "los": "contrastive"}], {}, r"entry 1: unknown keys \['los'\]"),
        ([{"train_file": "a.csv"}, {"loss": "contrastive"}], {}, "entry 2: give its train_file or dataset_name"),
        ([{"train_file": "x/a.csv"}, {"train_file": "y/a.tsv"}], {}, "two data sets are named 'a'"),
        ([{"train_file": "a.csv", "weight": 1}, {"train_file": "b.csv"}], {}, "'b' has none"),
        (
            [{"train_file": "a.csv", "weight": 0}, {"train_file": "b.csv", "weight": 1}],
            {},
            "positive numbers, got 0 for 'a'",
        ),
        ([{"train_file": "a.csv"}], {"train_file": "c.csv"}, "give train_file inside the data set"),
        ([], {}, "non-empty list"),
    ],
)
def test_refusals(entries, top, message):
    with pytest.raises(ValueError, match=message):
        _entries(*entries, **top)


def test_commands_of_one_data_set_refuse_several():
    with pytest.raises(ValueError, match="give this command one data set's own flags"):
        load_splits(DataArguments(train_datasets=[{"train_file": "a.csv"}]))


def test_a_bad_json_list_is_one_line():
    with pytest.raises(ValueError, match="--train_datasets must be a JSON list"):
        DataArguments(train_datasets="[{")


@pytest.fixture(scope="module")
def two_set_run(tmp_path_factory):
    """One short run on two files, each with its loss: its folder and its results (shared by the tests below)."""
    tmp_path = tmp_path_factory.mktemp("two_sets")
    lines = QQP_FILE.read_text(encoding="utf-8").splitlines(keepends=True)
    (tmp_path / "first.tsv").write_text("".join(lines[:500]), encoding="utf-8")
    (tmp_path / "second.tsv").write_text("".join(lines[500:900]), encoding="utf-8")
    config = tmp_path / "two.yaml"
    config.write_text(
        "train_datasets:\n"
        "  - {train_file: first.tsv, loss: multiple_negatives_ranking, weight: 2}\n"
        "  - {train_file: second.tsv, loss: contrastive, margin: 0.4, weight: 1}\n"
        "multi_dataset_sampling: proportional\n",
        encoding="utf-8",
    )
    flags = recipe_flags(dict(TINY_LSTM_BASE, max_steps=4, eval_strategy="no", save_strategy="no"), tmp_path / "out")
    trained = run_offline([sys.executable, "-m", "hfsiamese.cli.main", "train", str(config), *flags], cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr[-4000:]
    return tmp_path, json.loads((tmp_path / "out" / "all_results.json").read_text())


def test_train_on_two_files_each_with_its_loss(two_set_run):
    tmp_path, results = two_set_run
    assert results["eval_num_pairs"] == results["eval_first_num_pairs"] + results["eval_second_num_pairs"]
    assert "eval_second_average_precision" in results and "eval_average_precision" in results
    card = (tmp_path / "out" / "README.md").read_text()
    # Each data set viewed for its own loss: the duplicates of the first, all labelled pairs of the second.
    assert "- first: 223 training rows, loss `multiple_negatives_ranking`, weight 2\n" in card
    assert "- second: 360 training rows, loss `contrastive`, weight 1\n" in card
    assert "| validation: first |" in card and "| validation: second |" in card
    assert f"{results['eval_num_pairs']} labelled validation pairs" in card


def test_each_sets_figures_are_what_evaluate_gives_on_that_set_alone(two_set_run):
    """`eval_<set>_*` of a several-set run is the model scored on that set's own held-out pairs, nothing mixed in
    (the second set: its figures come after the first's, where a shifted slice would show)."""
    tmp_path, results = two_set_run
    name = "second"
    held_out = tmp_path / f"{name}_validation.jsonl"
    split = run_offline(
        [
            sys.executable,
            "-m",
            "hfsiamese.cli.main",
            "split",
            "--train_file",
            f"{name}.tsv",
            "--output_file",
            str(held_out),
            "--split",
            "validation",
        ],
        cwd=tmp_path,
    )
    assert split.returncode == 0, split.stderr[-4000:]
    scored = tmp_path / f"{name}_scores.json"
    evaluated = run_offline(
        [
            sys.executable,
            "-m",
            "hfsiamese.cli.main",
            "evaluate",
            "--model_name_or_path",
            str(tmp_path / "out"),
            "--test_file",
            str(held_out),
            "--output_file",
            str(scored),
        ],
        cwd=tmp_path,
    )
    assert evaluated.returncode == 0, evaluated.stderr[-4000:]
    alone = json.loads(scored.read_text())
    assert alone["num_pairs"] == results[f"eval_{name}_num_pairs"]
    assert alone["average_precision"] == pytest.approx(results[f"eval_{name}_average_precision"], abs=1e-6)
