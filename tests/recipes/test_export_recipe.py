"""recipes/export.py as a user runs it, then the evaluation and search recipes on the exported folder unchanged."""

import json
import sys

import onnxruntime  # noqa: F401  (the code under test imports it; the test extra has it, so a broken install is an error)
import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.data import load_pairs
from tests.conftest import QQP_FILE
from tests.helpers import REPO_ROOT, load_recipe, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

EXPORT = REPO_ROOT / "recipes" / "export.py"


@pytest.fixture(scope="module")
def trained_and_exported(tmp_path_factory):
    """A tiny LSTM saved with a threshold, 200 QQP pairs, and its int8 export made by the recipe (a subprocess)."""
    tmp = tmp_path_factory.mktemp("export_recipe")
    pairs_file = tmp / "pairs.tsv"
    pairs_file.write_text(
        "".join(QQP_FILE.read_text(encoding="utf-8").splitlines(keepends=True)[:200]), encoding="utf-8"
    )
    pairs = load_pairs(str(pairs_file), deduplicate=False)
    tokenizer = train_word_tokenizer(
        list(pairs["question1"]) + list(pairs["question2"]), vocab_size=600, model_max_length=128
    )
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(tokenizer), embedding_dim=16, hidden_size=16, pad_token_id=0, threshold=0.6
    )
    model_dir, out = tmp / "model", tmp / "model_int8"
    SiameseModel(config).save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    args = [sys.executable, str(EXPORT), "--model_name_or_path", str(model_dir), "--output_dir", str(out)]
    result = run_offline([*args, "--quantize", "int8"], cwd=tmp)
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir, out, pairs_file, json.loads(result.stdout.strip().splitlines()[-1])


def test_export_prints_what_it_made(trained_and_exported):
    _, out, _, printed = trained_and_exported
    assert printed["quantization"] == "int8" and printed["file"] == "model.onnx"
    assert printed["int8_min_cosine"] >= 0.99 and printed["fp32_max_abs_diff"] < 1e-5
    assert json.loads((out / "config.json").read_text())["onnx"] == printed


def test_refuses_a_non_empty_output_dir_and_an_onnx_source(trained_and_exported, tmp_path):
    model_dir, out, _, _ = trained_and_exported
    args = [sys.executable, str(EXPORT), "--model_name_or_path", str(model_dir), "--output_dir", str(out)]
    result = run_offline(args, cwd=tmp_path)
    assert result.returncode != 0 and "is not empty" in result.stderr
    again = run_offline(
        [sys.executable, str(EXPORT), "--model_name_or_path", str(out), "--output_dir", str(tmp_path / "x")],
        cwd=tmp_path,
    )
    assert again.returncode != 0 and "already an ONNX export" in again.stderr


def test_evaluate_and_search_take_the_exported_folder(trained_and_exported, monkeypatch, capsys):
    model_dir, out, pairs_file, _ = trained_and_exported
    evaluate = load_recipe(monkeypatch, "evaluate_pairs")
    onnx_metrics = evaluate.main(["--model_name_or_path", str(out), "--test_file", str(pairs_file)])
    torch_metrics = evaluate.main(["--model_name_or_path", str(model_dir), "--test_file", str(pairs_file)])
    assert onnx_metrics["threshold"] == torch_metrics["threshold"] == 0.6
    assert onnx_metrics["average_precision"] == pytest.approx(torch_metrics["average_precision"], abs=0.02)
    search = load_recipe(monkeypatch, "search")
    query = ["--query", "How do I learn Python?", "--k", "3", "--json"]
    output = search.main(["--model_name_or_path", str(out), "--corpus", str(pairs_file), *query])
    reference = search.main(["--model_name_or_path", str(model_dir), "--corpus", str(pairs_file), *query])
    assert output["num_texts"] == reference["num_texts"] and output["threshold"] == 0.6
    assert len(output["results"][0]["matches"]) == 3
    capsys.readouterr()
