"""`recipes/train.py recipes/configs/cross_minilm_qqp.yaml`: a cross-encoder trained, evaluated, calibrated and exported by the recipes."""

import json
import sys

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertModel

from hfsiamese.cross_encoder.model import CrossEncoder
from tests.conftest import QQP_FILE, REPO_ROOT
from tests.helpers import TRAIN, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

CONFIG = REPO_ROOT / "recipes" / "configs" / "cross_minilm_qqp.yaml"
SMALL = ["--max_steps", "3", "--max_train_pairs", "48", "--max_eval_pairs", "40", "--per_device_train_batch_size", "8",
         "--per_device_eval_batch_size", "16", "--max_length", "48", "--disable_tqdm", "true"]  # fmt: skip


@pytest.fixture(scope="module")
def tiny_base_dir(tmp_path_factory, tiny_cross_encoder_dir):
    """A tiny random BERT encoder (no head) with all-MiniLM-L6-v2's tokenizer: a base to put a new cross-encoder head on."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_cross_encoder_dir)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)  # fmt: skip
    folder = tmp_path_factory.mktemp("tiny_base")
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def trained(tiny_base_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cross_recipe")
    out = tmp / "cross"
    result = run_offline(
        [
            sys.executable,
            str(TRAIN),
            str(CONFIG),
            "--model_name_or_path",
            str(tiny_base_dir),
            "--output_dir",
            str(out),
            *SMALL,
        ],
        cwd=tmp,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return out, result, tmp


def test_the_recipe_trains_a_cross_encoder_with_a_calibrated_threshold(trained):
    out, result, _ = trained
    config = json.loads((out / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"] and config["pair_order"] == "both"
    assert config["max_seq_length"] == 48 and 0.0 <= config["threshold"] <= 1.0
    results = json.loads((out / "all_results.json").read_text())
    assert results["eval_threshold"] == pytest.approx(config["threshold"]) and results["eval_num_pairs"] == 40
    assert results["eval_pairs_total"] > 40  # a sample of the validation set (--max_eval_pairs 40), and it says so
    assert f"Validation (40 of {results['eval_pairs_total']:,} pairs, a sample" in result.stdout
    assert results["train_samples"] == 96  # 48 pairs, each in both orders
    assert "cross-encoder" in (out / "README.md").read_text() and "Rerank:" in result.stdout
    assert "training_questions.safetensors" in {p.name for p in out.iterdir()}


def test_evaluate_calibrate_and_export_take_the_cross_encoder(trained):
    out, _, tmp = trained
    test_file = tmp / "test.tsv"
    rows = QQP_FILE.read_text(encoding="utf-8").splitlines()
    test_file.write_text("\n".join([rows[0], *rows[9000:9060]]) + "\n", encoding="utf-8")
    evaluated = run_offline([sys.executable, str(REPO_ROOT / "recipes" / "evaluate_pairs.py"), "--model_name_or_path", str(out),
                             "--test_file", str(test_file)], cwd=tmp)  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    metrics = json.loads(evaluated.stdout.strip().splitlines()[-1])
    assert metrics["num_pairs"] == 61 and metrics["threshold"] == pytest.approx(
        json.loads((out / "config.json").read_text())["threshold"]
    )
    refused = run_offline([sys.executable, str(REPO_ROOT / "recipes" / "evaluate_pairs.py"), "--model_name_or_path", str(out),
                           "--test_file", str(test_file), "--retrieval"], cwd=tmp)  # fmt: skip
    assert (
        refused.returncode != 0 and "--retrieval searches with embeddings: a cross-encoder has none" in refused.stderr
    )
    calibrated = run_offline([sys.executable, str(REPO_ROOT / "recipes" / "calibrate.py"), "--model_name_or_path", str(out),
                              "--calibration_file", str(test_file), "--output_dir", str(tmp / "calibrated"), "--calibration_method", "platt",
                              "--num_bootstrap", "20"], cwd=tmp)  # fmt: skip
    assert calibrated.returncode == 0, calibrated.stderr[-3000:]
    assert CrossEncoder.from_pretrained(tmp / "calibrated").config.calibration["method"] == "platt"
    exported = run_offline([sys.executable, str(REPO_ROOT / "recipes" / "export.py"), "--model_name_or_path", str(out),
                            "--output_dir", str(tmp / "onnx")], cwd=tmp)  # fmt: skip
    assert exported.returncode == 0, exported.stderr[-3000:]
    a, b = ["how do i learn python ?"], ["what is the best way to learn python ?"]
    assert CrossEncoder.from_pretrained(tmp / "onnx").score_pairs(a, b) == pytest.approx(
        CrossEncoder.from_pretrained(out).score_pairs(a, b), abs=1e-5
    )


def test_continues_a_saved_cross_encoder(trained, tmp_path):
    out, _, _ = trained
    again = tmp_path / "again"
    result = run_offline(
        [sys.executable, str(TRAIN), str(CONFIG), "--model_name_or_path", str(out), "--output_dir", str(again), *SMALL],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "MISSING" not in result.stderr  # its trained head was loaded, not a new one


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--loss", "contrastive"], "loss: bi-encoder loss settings; a cross-encoder"),
        (["--margin", "0.3"], "margin: bi-encoder loss settings"),
        (["--pooling", "cls"], "pooling: bi-encoder options, which a cross-encoder"),
        (["--pair_order", "sideways"], "pair_order must be one of ('both', 'given')"),
        (["--architecture", "tri_encoder"], "architecture must be one of ('bi_encoder', 'cross_encoder')"),
    ],
)
def test_bi_encoder_settings_are_refused(tiny_base_dir, tmp_path, flags, message):
    result = run_offline([sys.executable, str(TRAIN), str(CONFIG), "--model_name_or_path", str(tiny_base_dir),
                          "--output_dir", str(tmp_path / "run"), *SMALL, *flags], cwd=tmp_path)  # fmt: skip
    assert result.returncode != 0 and message in result.stderr, result.stderr[-2000:]


def test_a_run_without_output_dir_is_named_after_its_config(tiny_base_dir, tmp_path):
    result = run_offline(
        [sys.executable, str(TRAIN), str(CONFIG), "--model_name_or_path", str(tiny_base_dir), *SMALL], cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert [p.name for p in (tmp_path / "outputs").iterdir()] == ["cross_minilm_qqp"]  # not cross_minilm_qqp-<a loss>
