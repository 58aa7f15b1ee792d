"""`open_index`: the saved index loaded, or one built from the corpus and saved; the folders it refuses to write."""

from __future__ import annotations

import pytest

from hfsiamese.search.corpus_files import read_corpus
from hfsiamese.search.index_opening import open_index
from hfsiamese.search.stores.index_files import INDEX_CONFIG_NAME
from tests.conftest import TEXTS
from tests.fixtures import saved_tiny_lstm


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "questions.txt"
    path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return lambda: read_corpus(str(path), "auto", None, None, [])


def test_an_index_is_built_saved_then_loaded(tmp_path, word_tokenizer, corpus):
    model_dir = saved_tiny_lstm(tmp_path / "model", word_tokenizer)
    built = open_index(str(model_dir), str(tmp_path / "index"), corpus)
    assert (tmp_path / "index" / INDEX_CONFIG_NAME).is_file() and len(built) == len(TEXTS)
    assert len(open_index(str(model_dir), str(tmp_path / "index"), None)) == len(TEXTS)


def test_the_models_own_folder_is_refused_as_the_index_folder_before_the_corpus_is_read(tmp_path, word_tokenizer):
    # with --overwrite_index_dir the index's files were written among the model's
    model_dir = saved_tiny_lstm(tmp_path / "model", word_tokenizer)
    before = sorted(path.name for path in model_dir.iterdir())

    def corpus():
        raise AssertionError("the corpus was read")

    for overwrite in (False, True):
        with pytest.raises(ValueError, match="^--index_dir .* is the model's own folder: choose another folder"):
            open_index(str(model_dir), str(model_dir) + "/", corpus, overwrite=overwrite)
    assert sorted(path.name for path in model_dir.iterdir()) == before
