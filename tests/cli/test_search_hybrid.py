"""`hfsiamese search --hybrid`: keyword + dense search from the command line, kept with a saved index."""

import pytest

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.search import main
from tests.conftest import TEXTS


@pytest.fixture
def model_dir(tmp_path, tiny_lstm, word_tokenizer):
    tiny_lstm.save_pretrained(tmp_path / "model")
    word_tokenizer.save_pretrained(tmp_path / "model")
    return tmp_path / "model"


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("hybrid_corpus") / "questions.txt"
    path.write_text("\n".join(TEXTS), encoding="utf-8")
    return path


def test_hybrid_flag_builds_saves_and_reuses(tmp_path, model_dir, corpus_file, capsys):
    base = ["--model_name_or_path", str(model_dir), "--query", "sky blue", "--k", "2", "--threshold", "0.9"]
    base += ["--index_dir", str(tmp_path / "index")]
    built = main([*base, "--corpus", str(corpus_file), "--hybrid", "weighted", "--lexical_weight", "0.5", "--json"])
    assert built["hybrid"] == "weighted"
    best = built["results"][0]["matches"][0]
    assert best["text"] == TEXTS[4] and best["lexical_score"] > 0 and "hybrid_score" in best
    assert best["is_duplicate"] == (best["score"] >= 0.9)  # the cosine decides
    capsys.readouterr()
    assert main(base)["results"] == built["results"]  # the saved index searches as it was saved
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "Query: sky blue" and " (fused " in printed[1] and f"[4] {TEXTS[4]}" in printed[1]
    dense = main([*base, "--hybrid", "none"])
    assert "hybrid" not in dense and "hybrid_score" not in dense["results"][0]["matches"][0]
    assert main([*base, "--hybrid", "rrf"])["hybrid"] == "rrf"


def test_hybrid_flags_are_checked(tmp_path, model_dir, corpus_file):
    base = ["--model_name_or_path", str(model_dir), "--corpus", str(corpus_file), "--query", "sky"]
    with pytest.raises(UsageError, match="--rrf_k and --lexical_weight apply with --hybrid rrf or weighted"):
        main([*base, "--lexical_weight", "0.5"])
    with pytest.raises(ValueError, match=r"lexical_weight applies to hybrid=\"weighted\""):
        main([*base, "--hybrid", "rrf", "--lexical_weight", "0.5"])
    with pytest.raises(UsageError, match="argument --hybrid: invalid choice: 'bm25'"):
        main([*base, "--hybrid", "bm25"])
