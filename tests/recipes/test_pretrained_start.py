"""`python recipes/train.py --model_name_or_path FOLDER` alone trains that model with its own settings."""

import json
import sys

import pytest
import torch
from sentence_transformers import SentenceTransformer

from tests.helpers import TRAIN, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

try:  # sentence-transformers >= 6
    from sentence_transformers.sentence_transformer.modules import Dense, Normalize, Pooling, Transformer
except ImportError:
    from sentence_transformers.models import Dense, Normalize, Pooling, Transformer


@pytest.fixture
def cls_pooled_folder(tiny_bert_dir, tmp_path):
    """A sentence-transformers model of the tiny BERT: CLS pooling, a Tanh Dense layer, Normalize, a default prompt, 12 tokens."""
    torch.manual_seed(0)
    transformer = Transformer(str(tiny_bert_dir), max_seq_length=12)
    modules = [
        transformer,
        Pooling(16, pooling_mode="cls"),
        Dense(16, 8, activation_function=torch.nn.Tanh()),
        Normalize(),
    ]
    model = SentenceTransformer(
        modules=modules, device="cpu", prompts={"query": "query : "}, default_prompt_name="query"
    )
    folder = tmp_path / "st_model"
    model.save(str(folder))
    return folder


def test_trains_a_sentence_transformers_model_as_configured_without_a_config_file(cls_pooled_folder, tmp_path):
    out = tmp_path / "run"
    flags = ["--model_name_or_path", str(cls_pooled_folder), "--output_dir", str(out), "--max_steps", "2",
             "--max_train_pairs", "64", "--max_eval_pairs", "32", "--per_device_train_batch_size", "8", "--disable_tqdm", "true"]  # fmt: skip
    result = run_offline([sys.executable, str(TRAIN), *flags], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    config = json.loads((out / "config.json").read_text())
    assert config["encoder_type"] == "transformer" and config["pooling"] == "cls"
    assert config["dense_layers"] == [{"in_features": 16, "out_features": 8, "bias": True, "activation": "Tanh"}]
    assert config["max_seq_length"] == 12 and config["default_prompt_name"] == "query"
    assert "is a sentence-transformers model: pooling cls" in result.stderr


def test_a_contradicting_pooling_is_a_warning_naming_both(cls_pooled_folder, tmp_path):
    out = tmp_path / "run"
    flags = ["--model_name_or_path", str(cls_pooled_folder), "--pooling", "mean", "--output_dir", str(out), "--max_steps", "1",
             "--max_train_pairs", "32", "--max_eval_pairs", "16", "--per_device_train_batch_size", "8", "--max_length", "10"]  # fmt: skip
    result = run_offline([sys.executable, str(TRAIN), *flags], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    said = [line for line in result.stderr.splitlines() if "(given) overrides" in line]
    assert any("pooling 'mean' (given) overrides" in line and "own 'cls'" in line for line in said), said
    assert any("max_length 10 (given) overrides" in line and "own 12" in line for line in said), said
    config = json.loads((out / "config.json").read_text())
    assert config["pooling"] == "mean" and config["max_seq_length"] == 10


def test_a_pretrained_model_under_the_lstm_recipe_is_refused(cls_pooled_folder, tmp_path):
    flags = [
        "--model_name_or_path",
        str(cls_pooled_folder),
        "--encoder_type",
        "lstm",
        "--output_dir",
        str(tmp_path / "run"),
    ]
    result = run_offline([sys.executable, str(TRAIN), *flags], cwd=tmp_path)
    assert result.returncode != 0
    assert "is a pretrained 'bert' model, but encoder_type is 'lstm'" in result.stderr
