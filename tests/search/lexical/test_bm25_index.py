"""The BM25 side: rare words weigh most, rows sharing no word are not matches, saved and loaded as built."""

import json
import sys

import pytest

from hfsiamese.search.lexical.bm25_index import LEXICAL_DIR_NAME, Bm25Index, remove_saved, tokenize

TEXTS = [
    "how do i update windows",
    "windows update fails with error 0x80070005",
    "why is the sky blue",
    "how do i update my phone",
]


def test_tokens_are_lower_case_words_without_stopwords():
    assert tokenize(["How do I fix Error 0x80070005 on the Windows?"]) == [
        ["how", "do", "fix", "error", "0x80070005", "windows"]
    ]


def test_a_rare_word_weighs_most_and_rows_sharing_no_word_are_left_out():
    index = Bm25Index.build(TEXTS)
    scores, rows = index.topk(["update fails 0x80070005", "the sky", "nothing in common"], 3)
    assert rows.shape == (3, 3) and rows[0, 0] == 1
    assert rows[1].tolist() == [2, -1, -1] and scores[1, 1:].tolist() == [0.0, 0.0]
    assert rows[2].tolist() == [-1, -1, -1]
    assert (scores[0, :-1] >= scores[0, 1:]).all() and index.topk(["windows"], 10)[1].shape == (1, 4)


def test_saved_and_loaded_alike_and_a_mismatch_is_not_taken(tmp_path):
    index = Bm25Index.build(TEXTS)
    index.save(tmp_path)
    loaded = Bm25Index.load(tmp_path, len(TEXTS))
    queries = ["update windows", "blue sky"]
    assert [a.tolist() for a in loaded.topk(queries, 4)] == [a.tolist() for a in index.topk(queries, 4)]
    assert Bm25Index.load(tmp_path, len(TEXTS) + 1) is None  # another number of rows: rebuilt by the caller
    settings = tmp_path / LEXICAL_DIR_NAME / "hfsiamese_lexical.json"
    settings.write_text(json.dumps({"num_texts": len(TEXTS), "stopwords": None}), encoding="utf-8")
    assert Bm25Index.load(tmp_path, len(TEXTS)) is None  # another tokenisation
    remove_saved(tmp_path)
    assert not (tmp_path / LEXICAL_DIR_NAME).exists() and Bm25Index.load(tmp_path, len(TEXTS)) is None


def test_texts_without_a_single_word_match_nothing(tmp_path):
    index = Bm25Index.build(["the", "a an", "?"])
    scores, rows = index.topk(["the sky", ""], 2)
    assert rows.tolist() == [[-1, -1], [-1, -1]] and scores.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    index.save(tmp_path)
    assert Bm25Index.load(tmp_path, 3).topk(["sky"], 5)[1].tolist() == [[-1, -1, -1]]


def test_without_bm25s_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "bm25s", None)
    with pytest.raises(ImportError, match=r"hybrid= .* needs the bm25s package: .*\[lexical\]"):
        Bm25Index.build(TEXTS)
