"""The load table's index (benchmarks/serving/build_load_index.py), small: the corpus's questions in a grouped
LanceDB index that opens with every one of them and that the baseline endpoint searches; a folder with something in
it is refused before anything is built."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.serving import build_load_index
from benchmarks.serving.served_index import rows_and_groups


def run(monkeypatch, *argv: str) -> None:
    monkeypatch.setattr(sys, "argv", ["build_load_index.py", *argv])
    build_load_index.main()


def test_the_index_holds_the_corpus_grouped(tmp_path, monkeypatch, capsys, tiny_lstm, word_tokenizer):
    model = tmp_path / "model"
    tiny_lstm.config.threshold = 0.5  # a calibrated model's: the groups link questions above it
    tiny_lstm.save_pretrained(model)
    word_tokenizer.save_pretrained(model)
    run(monkeypatch, "--model_name_or_path", str(model), "--num_texts", "300", "--output_dir", str(tmp_path / "out"))
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["questions"] == 300 and row["build_and_group_s"] > 0
    ids, texts, groups = rows_and_groups(tmp_path / "out" / "index", str(model))
    assert sorted(ids) == list(range(300)) and len(set(texts)) == 300
    assert set().union(*groups) <= set(ids)
    # The load table's baseline (a plain endpoint over the same index) answers a search with matches.
    from fastapi.testclient import TestClient

    from benchmarks.serving.service_load import plain_app

    client = TestClient(plain_app(str(tmp_path / "out" / "index"), str(model)))
    answer = client.post("/v1/search", json={"query": texts[0], "k": 3})
    assert answer.status_code == 200
    (result,) = answer.json()["results"]
    assert result["query"] == texts[0] and len(result["matches"]) == 3


def test_a_folder_in_use_is_refused_before_anything_is_built(tmp_path, monkeypatch, capsys):
    (tmp_path / "kept.txt").write_text("a user's file")
    with pytest.raises(SystemExit):
        run(monkeypatch, "--model_name_or_path", "unused", "--output_dir", str(tmp_path))
    assert "is not empty" in capsys.readouterr().err
    assert [path.name for path in tmp_path.iterdir()] == ["kept.txt"]


def test_a_saved_faiss_index_reindexed_keeps_its_rows_and_groups(
    tmp_path, monkeypatch, capsys, tiny_lstm, word_tokenizer
):
    model = tmp_path / "model"
    tiny_lstm.config.threshold = 0.5
    tiny_lstm.save_pretrained(model)
    word_tokenizer.save_pretrained(model)
    common = ("--model_name_or_path", str(model), "--num_texts", "300")
    run(monkeypatch, *common, "--store", "faiss", "--output_dir", str(tmp_path / "flat"))
    capsys.readouterr()
    run(monkeypatch, *common, "--from_index_dir", str(tmp_path / "flat" / "index"), "--structure", "hnsw",
        "--quantization", "none", "--ef_search", "64", "--output_dir", str(tmp_path / "hnsw"))  # fmt: skip
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["reindex_s"] > 0 and "HNSW" in row["faiss"] and 0 < row["recall"] <= 1, row
    saved = json.loads((tmp_path / "hnsw" / "index" / "index_config.json").read_text())
    assert saved["ann"]["structure"] == "hnsw" and saved["ann"]["ef_search"] == 64
    assert rows_and_groups(tmp_path / "hnsw" / "index", str(model)) == rows_and_groups(
        tmp_path / "flat" / "index", str(model)
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--structure", "hnsw"), "apply to --store faiss"),
        (("--store", "faiss", "--ef_search", "0"), "ef_search must be at least 1"),
        (("--from_index_dir", "nowhere"), "holds no saved index"),
    ],
)
def test_faiss_settings_refused_in_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys, argv, message):
    with pytest.raises(SystemExit):
        run(monkeypatch, "--model_name_or_path", "unused", "--output_dir", str(tmp_path / "out"), *argv)
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
