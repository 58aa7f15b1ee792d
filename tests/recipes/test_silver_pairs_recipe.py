"""recipes/silver_pairs.py: a training recipe's training questions paired, labelled by a cross-encoder, then trained on."""

import json
import sys

import numpy as np
import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.cli.command_line import UsageError
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.data import load_pairs
from hfsiamese.training.arguments import DataArguments
from hfsiamese.training.preparation import load_splits
from tests.conftest import QQP_FILE, REPO_ROOT
from tests.helpers import TINY_LSTM_BASE, TRAIN, load_recipe, recipe_flags, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

SILVER = REPO_ROOT / "recipes" / "silver_pairs.py"
# A training recipe's config: its model and training keys are read and left unused.
MINILM_CONFIG = REPO_ROOT / "recipes" / "configs" / "minilm_qqp.yaml"


def fold(text):
    return " ".join(text.lower().split())


def questions(pairs):
    return {fold(q) for q in list(pairs["question1"]) + list(pairs["question2"])}


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_cross_encoder_dir):
    """The tiny cross-encoder with a threshold, and a tiny LSTM bi-encoder with a vocabulary of QQP words, as folders."""
    tmp = tmp_path_factory.mktemp("silver_recipe")
    cross = CrossEncoder.from_pretrained(tiny_cross_encoder_dir)
    cross.config.threshold, cross.config.max_seq_length = 0.5, 64
    cross.save_pretrained(tmp / "cross")
    pairs = load_pairs(str(QQP_FILE))
    tokenizer = train_word_tokenizer(
        list(pairs["question1"]) + list(pairs["question2"]), vocab_size=2000, model_max_length=32
    )
    torch.manual_seed(0)
    SiameseModel(SiameseConfig(vocab_size=len(tokenizer), embedding_dim=16, hidden_size=16)).save_pretrained(tmp / "bi")
    tokenizer.save_pretrained(tmp / "bi")
    return tmp / "cross", tmp / "bi"


def test_pairs_only_training_questions_and_refuses_to_overwrite(models, tmp_path, capsys, monkeypatch):
    cross, bi = models
    output = tmp_path / "silver.jsonl"
    args = [str(MINILM_CONFIG), "--cross_encoder", str(cross), "--bi_encoder", str(bi), "--output_file", str(output),
            "--max_train_pairs", "150", "--test_fraction", "0.1", "--random_pairs", "40"]  # fmt: skip
    recipe = load_recipe(monkeypatch, "silver_pairs")
    returned = recipe.main(args)
    printed = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(printed) == 1 and json.loads(printed[0]) == returned

    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert set(rows[0]) == {"question1", "question2", "label", "silver_score", "source"}
    labels, scores = np.array([row["label"] for row in rows]), np.array([row["silver_score"] for row in rows])
    assert np.array_equal(labels, (scores >= 0.5).astype(int))
    assert returned["pairs"] == len(rows) and returned["by_source"]["random"]["pairs"] == 40
    assert returned["by_source"]["neighbour"]["pairs"] + 40 == len(rows)
    assert returned["positive_rate"] == pytest.approx(labels.mean()) and returned["threshold"] == 0.5

    # The training recipe's split for the same config: every silver question is one of its training questions.
    data = {"test_fraction": 0.1, "max_train_pairs": 150}
    splits = load_splits(DataArguments(**data), default_train_file=QQP_FILE)
    silver = load_pairs(str(output), deduplicate=False)
    assert questions(silver) <= questions(splits["train"])
    assert not questions(silver) & (questions(splits["validation"]) | questions(splits["test"]))
    # Trained on: the gold pairs, then every silver pair (none repeats a gold one).
    with_silver = load_splits(DataArguments(**data, silver_pairs_file=str(output)), default_train_file=QQP_FILE)
    assert len(with_silver["train"]) == 150 + len(rows)

    before = output.read_bytes()
    with pytest.raises(FileExistsError, match="silver.jsonl exists: pass --overwrite_output_file to replace it"):
        recipe.main(args)
    assert output.read_bytes() == before and capsys.readouterr().out == ""
    recipe.main([*args, "--overwrite_output_file", "true", "--silver_seed", "7"])
    again = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    neighbours = [row for row in rows if row["source"] == "neighbour"]
    assert [row for row in again if row["source"] == "neighbour"] == neighbours and again != rows


def test_refusals(models, tmp_path, tiny_cross_encoder_dir, monkeypatch):
    cross, bi = models
    recipe = load_recipe(monkeypatch, "silver_pairs")
    output = tmp_path / "silver.jsonl"
    base = ["--bi_encoder", str(bi), "--output_file", str(output), "--max_train_pairs", "50"]
    with pytest.raises(ValueError, match="has no calibrated threshold to label silver pairs with"):
        recipe.main(["--cross_encoder", str(tiny_cross_encoder_dir), *base])
    with pytest.raises(UsageError, match="--learning_rate: training settings"):
        recipe.main(["--cross_encoder", str(cross), *base, "--learning_rate", "1e-3"])
    with pytest.raises(UsageError, match="must end in .jsonl"):
        recipe.main(["--cross_encoder", str(cross), "--output_file", str(tmp_path / "silver.tsv")])
    typo = tmp_path / "typo.yaml"
    typo.write_text("validation_fraction: 0.1\nlearning_rat: 0.1\n", encoding="utf-8")
    with pytest.raises(UsageError, match=r"unknown keys in .*typo.yaml: \['learning_rat'\]"):
        recipe.main([str(typo), "--cross_encoder", str(cross), *base])
    assert not output.exists()


def test_runs_as_a_script_and_the_training_recipe_trains_on_gold_and_silver(models, tmp_path):
    cross, bi = models
    output = tmp_path / "silver.jsonl"
    # No config: recipes/train.py's default one, hence its split.
    command = [sys.executable, str(SILVER), "--cross_encoder", str(cross), "--bi_encoder", str(bi), "--output_file", str(output),
               "--max_train_pairs", "100", "--random_pairs", "20"]  # fmt: skip
    result = run_offline(command, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads(result.stdout)
    assert summary["output_file"] == str(output) and f"--silver_pairs_file {output}" in result.stderr
    refused = run_offline(command, cwd=tmp_path)
    assert refused.returncode == 1 and "exists: pass --overwrite_output_file" in refused.stderr

    flags = recipe_flags(
        {**TINY_LSTM_BASE, "max_train_pairs": 100, "max_eval_pairs": 50, "max_steps": 2}, tmp_path / "run"
    )
    trained = run_offline([sys.executable, str(TRAIN), "--silver_pairs_file", str(output), *flags], cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr[-4000:]
    assert f"silver pairs: {summary['pairs']} added" in trained.stderr
    assert json.loads((tmp_path / "run" / "all_results.json").read_text())["train_samples"] == 100 + summary["pairs"]
