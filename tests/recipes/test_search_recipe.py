"""recipes/search.py as a user runs it (one subprocess), and its corpus readers and errors in process."""

import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from tests.conftest import REPO_ROOT, TEXTS

SEARCH = REPO_ROOT / "recipes" / "search.py"


@pytest.fixture(scope="module")
def search_recipe():
    spec = importlib.util.spec_from_file_location("search_recipe", SEARCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is created
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory, word_tokenizer):
    """A tiny LSTM saved with its tokenizer and a calibrated threshold, as recipes/train.py leaves one."""
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm",
        vocab_size=len(word_tokenizer),
        embedding_dim=8,
        hidden_size=6,
        pad_token_id=0,
        threshold=0.9,
    )
    path = tmp_path_factory.mktemp("search_model")
    SiameseModel(config).save_pretrained(path)
    word_tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("search_corpus") / "questions.txt"
    path.write_text("\n".join(TEXTS) + "\n\n", encoding="utf-8")  # a trailing blank line is skipped
    return path


@pytest.mark.slow
def test_builds_saves_and_prints_json(tmp_path, model_dir, corpus_file):
    index_dir = tmp_path / "index"
    args = [sys.executable, str(SEARCH), "--model_name_or_path", str(model_dir), "--corpus", str(corpus_file)]
    args += ["--query", TEXTS[0], "--query", "why is the sky blue", "--k", "3", "--index_dir", str(index_dir), "--json"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    result = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    output = json.loads(result.stdout)  # the whole of stdout is one JSON object
    assert output["num_texts"] == len(TEXTS) and output["threshold"] == 0.9
    assert [r["query"] for r in output["results"]] == [TEXTS[0], "why is the sky blue"]
    first = output["results"][0]["matches"]
    assert len(first) == 3 and first[0] == {
        "id": 0,
        "text": TEXTS[0],
        "score": pytest.approx(1.0),
        "is_duplicate": True,
    }
    assert (index_dir / "index_config.json").is_file()


def test_reuses_a_saved_index(tmp_path, search_recipe, model_dir, corpus_file, capsys):
    index_dir = tmp_path / "index"
    base = ["--model_name_or_path", str(model_dir), "--query", TEXTS[4], "--k", "2", "--index_dir", str(index_dir)]
    built = search_recipe.main([*base, "--corpus", str(corpus_file)])
    capsys.readouterr()
    loaded = search_recipe.main(base)
    assert loaded["results"] == built["results"]
    printed = capsys.readouterr().out
    assert printed.startswith(f"Query: {TEXTS[4]}\n") and f"[4] {TEXTS[4]}" in printed
    with pytest.raises(ValueError, match="already holds an index: drop --corpus"):
        search_recipe.main([*base, "--corpus", str(corpus_file)])
    rebuilt = search_recipe.main([*base, "--corpus", str(corpus_file), "--overwrite_index_dir", "--k", "1"])
    assert len(rebuilt["results"][0]["matches"]) == 1


def test_pair_file_corpus_uses_both_questions_once(tmp_path, search_recipe, model_dir):
    pairs = tmp_path / "pairs.tsv"
    rows = [(1, TEXTS[0], TEXTS[1]), (0, TEXTS[1], TEXTS[2]), (1, TEXTS[3], TEXTS[0])]
    pairs.write_text("".join(f"{label}\t{a}\t{b}\t{i}\n" for i, (label, a, b) in enumerate(rows)), encoding="utf-8")
    output = search_recipe.main(
        ["--model_name_or_path", str(model_dir), "--corpus", str(pairs), "--query", TEXTS[2], "--k", "10", "--json"]
    )
    assert output["num_texts"] == 4  # TEXTS[0..3], each once
    assert sorted(m["text"] for m in output["results"][0]["matches"]) == sorted(TEXTS[:4])


def test_table_corpus_with_text_and_id_columns(tmp_path, search_recipe, model_dir):
    table = tmp_path / "questions.csv"
    table.write_text("qid,question\n" + "".join(f"q{i},{text}\n" for i, text in enumerate(TEXTS)), encoding="utf-8")
    flags = ["--model_name_or_path", str(model_dir), "--corpus", str(table), "--query", TEXTS[5], "--k", "1"]
    output = search_recipe.main([*flags, "--text_column", "question", "--id_column", "qid"])
    assert output["results"][0]["matches"][0]["id"] == "q5"
    with pytest.raises(ValueError, match="--text_column 'body' is not a column"):
        search_recipe.main([*flags, "--text_column", "body"])


def test_needs_a_corpus_or_a_saved_index(tmp_path, search_recipe, model_dir):
    with pytest.raises(ValueError, match="pass --corpus to build an index"):
        search_recipe.main(
            ["--model_name_or_path", str(model_dir), "--query", "x", "--index_dir", str(tmp_path / "empty")]
        )


def test_refuses_a_non_empty_index_dir_before_encoding(tmp_path, search_recipe, model_dir, corpus_file):
    (tmp_path / "notes.txt").write_text("mine")
    flags = ["--model_name_or_path", str(model_dir), "--corpus", str(corpus_file), "--query", "x"]
    with pytest.raises(FileExistsError, match="holds no index: choose an empty folder"):
        search_recipe.main([*flags, "--index_dir", str(tmp_path)])
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
