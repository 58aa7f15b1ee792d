"""benchmarks/search/vector_index_recall.py, small: held-out texts searched through a LanceDB index's vector index and
exactly, its recall against its own estimate; an index without a vector index refused in one line first."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.search import vector_index_recall
from benchmarks.serving import build_load_index
from hfsiamese.search import DuplicateIndex


def run(monkeypatch, module, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", ["script.py", *argv])
    module.main()


@pytest.fixture
def lance_index(tmp_path, monkeypatch, capsys, tiny_lstm, word_tokenizer):
    model = tmp_path / "model"
    tiny_lstm.config.threshold = 0.5  # a calibrated model's: the load index groups its questions at it
    tiny_lstm.save_pretrained(model)
    word_tokenizer.save_pretrained(model)
    out = tmp_path / "out"
    run(
        monkeypatch,
        build_load_index,
        "--model_name_or_path",
        str(model),
        "--num_texts",
        "1200",
        "--output_dir",
        str(out),
    )
    capsys.readouterr()
    held_out = tmp_path / "held_out.jsonl"
    rows = [
        {"question1": f"is a new question number {i} here ?", "question2": f"what is {i} ?", "label": 0}
        for i in range(30)
    ]
    held_out.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return model, out / "index", held_out


def test_held_out_texts_are_searched_through_the_index_and_exactly(lance_index, monkeypatch, capsys):
    model, index_dir, held_out = lance_index
    argv = ["--index_dir", str(index_dir), "--model_name_or_path", str(model), "--held_out", str(held_out)]
    with pytest.raises(SystemExit):  # no vector index yet: refused in one line
        run(monkeypatch, vector_index_recall, *argv)
    assert "has no vector index: build it (hfsiamese search --vector_index)" in capsys.readouterr().err
    settings = DuplicateIndex.load(index_dir, str(model)).build_vector_index(recall_target=0.8)
    run(monkeypatch, vector_index_recall, *argv, "--queries", "40", "--timed", "5")
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["rows"] == 1200 and row["held_out_queries"] == 40 and row["nprobes"] == settings.nprobes
    assert row["recall"] == settings.recall and 0 <= row["held_out_recall"] <= 1
    assert all(ms > 0 for ms in (*row["through_index_ms_p50_p99"], *row["exact_ms_p50_p99"]))
