"""recipes/distill.py end to end on a few steps: a tiny transformer teacher, LSTM and static students, real QQP pairs."""

import json
import sys

import pytest
import torch
from transformers import AutoModel

from tests.conftest import REPO_ROOT
from tests.helpers import recipe_flags, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

DISTILL = REPO_ROOT / "recipes" / "distill.py"
CONFIGS = REPO_ROOT / "recipes" / "configs"
# The tiny BERT teacher of conftest embeds in 16 dimensions: the students' embeddings match it.
TINY = dict(
    max_train_pairs=300, max_eval_pairs=100, vocab_size=2000, per_device_train_batch_size=16, distillation_max_steps=4,
    max_steps=3, eval_strategy="no", save_strategy="no", teacher_batch_size=64, disable_tqdm=True,
)  # fmt: skip


def distill(tmp_path, config, teacher, **flags):
    out = tmp_path / "student"
    args = [sys.executable, str(DISTILL), str(CONFIGS / config), "--teacher_model_name_or_path", str(teacher)]
    result = run_offline([*args, *recipe_flags({**TINY, **flags}, out)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-4000:]
    return out, json.loads((out / "all_results.json").read_text())


def test_lstm_student_distils_then_fine_tunes_and_reloads(tmp_path, tiny_bert_dir):
    out, results = distill(
        tmp_path, "lstm_distilled_qqp.yaml", tiny_bert_dir, embedding_dim=16, hidden_size=8, projection_dim=16
    )
    for key in ("teacher_eval_average_precision", "distillation_eval_average_precision", "distillation_train_runtime",
                "distillation_train_samples", "eval_average_precision", "train_samples"):  # fmt: skip
        assert key in results, key
    assert results["distillation_train_samples"] > results["train_samples"] * 0.9  # labelled pairs + group pairs
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 3  # stage 2's steps
    model = AutoModel.from_pretrained(out)
    assert model.config.encoder_type == "lstm" and model.config.sentence_embedding_dim == 16
    assert model.config.threshold == pytest.approx(results["eval_threshold"])
    assert torch.isfinite(model.encode(["how do i learn python ?"])).all()


def test_static_student_without_fine_tuning(tmp_path, tiny_bert_dir):
    out, results = distill(tmp_path, "static_distilled_qqp.yaml", tiny_bert_dir, embedding_dim=16, fine_tune="false")
    assert results["eval_average_precision"] == results["distillation_eval_average_precision"]
    assert "train_samples" not in results
    assert json.loads((out / "trainer_state.json").read_text())["global_step"] == 4  # stage 1's steps
    assert AutoModel.from_pretrained(out).config.encoder_type == "static"


def test_a_student_of_another_size_is_told_to_project(tmp_path, tiny_bert_dir):
    args = [
        sys.executable,
        str(DISTILL),
        str(CONFIGS / "static_distilled_qqp.yaml"),
        "--teacher_model_name_or_path",
        str(tiny_bert_dir),
    ]
    result = run_offline([*args, *recipe_flags({**TINY, "embedding_dim": 12}, tmp_path / "o")], cwd=tmp_path)
    assert result.returncode != 0 and "projection_dim=16" in result.stderr
    assert "stage 1:" not in result.stderr  # said before the teacher encoded the training questions
    assert not (tmp_path / "o").exists()
