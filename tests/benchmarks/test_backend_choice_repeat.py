"""The repeated `backend="auto"` decision benchmark (benchmarks/serving/backend_choice_repeat.py) on a tiny model."""

from __future__ import annotations

import pytest

from benchmarks.serving.backend_choice_repeat import main
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from tests.bi_encoder.test_onnx_export import tiny_model
from tests.conftest import TEXTS


@pytest.mark.slow
def test_fresh_processes_decide_and_a_shared_cache_keeps_the_decision(tmp_path):
    tokenizer = train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)
    model = tiny_model("static", len(tokenizer)).eval()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    # An export the folder already carries, under the name of one asked for: left out of the copy, not collided with.
    (tmp_path / "model" / "onnx_fp32").mkdir()
    (tmp_path / "model" / "onnx_fp32" / "model.onnx").write_bytes(b"an earlier export")
    rows = [f"{a}\t{b}\t{int(i % 2 == 0)}" for i, (a, b) in enumerate(zip(TEXTS[0::2], TEXTS[1::2], strict=True))]
    (tmp_path / "pairs.tsv").write_text("question1\tquestion2\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    result = main(
        ["--model", str(tmp_path / "model"), "--exports", "onnx_fp32", "--pairs_file", str(tmp_path / "pairs.tsv"),
         "--decisions", "1", "--repeats", "1"]
    )  # fmt: skip
    assert set(result["reference_pairs_per_s"]) == {".", "onnx_fp32"}
    assert result["reference_fastest"] in {".", "onnx_fp32"}
    assert sum(result["decisions"].values()) == 1 and set(result["decisions"]) <= {".", "onnx_fp32"}
    assert result["of"] == 1 and 0 <= result["picked_fastest"] <= 1
    assert result["kept_between_processes"] is True
