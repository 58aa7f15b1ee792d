"""`store` names where an index keeps its vectors, `backend` the model's runtime; a store's old name given as `backend`
still works until 0.3, warned."""

from __future__ import annotations

import warnings

import pytest

from hfsiamese.search import DuplicateIndex
from hfsiamese.search.backends import STORES, store_and_runtime
from tests.conftest import TEXTS


@pytest.mark.parametrize("store", STORES)
def test_a_store_named_as_backend_moves_to_store_with_a_warning(store):
    with pytest.warns(FutureWarning, match=rf"backend='{store}' is renamed store='{store}'; .* goes in hfsiamese 0.3"):
        assert store_and_runtime(None, store) == (store, None)
    with pytest.warns(FutureWarning, match=rf"--backend {store} is renamed --store {store}"):
        assert store_and_runtime(None, store, flag=True) == (store, None)


def test_a_runtime_and_the_new_name_pass_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store_and_runtime("faiss", "auto") == ("faiss", "auto")
        assert store_and_runtime("lancedb", None) == ("lancedb", None)
        assert store_and_runtime(None, None) == (None, None)


def test_two_different_stores_are_refused():
    with pytest.raises(ValueError, match="--backend faiss .deprecated. and --store exact name different stores"):
        store_and_runtime("exact", "faiss", flag=True)
    with pytest.warns(FutureWarning):  # the same store twice is only the old name
        assert store_and_runtime("faiss", "faiss") == ("faiss", None)


def test_the_index_takes_the_old_keyword_and_the_new(tiny_lstm, word_tokenizer):
    with pytest.warns(FutureWarning, match="backend='faiss' is renamed store='faiss'"):
        old = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, backend="faiss")
    new = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, store="faiss")
    assert old.store_name == new.store_name == "faiss" and "store='faiss'" in repr(new)
    assert old.search(TEXTS[1], k=3) == new.search(TEXTS[1], k=3)
    with pytest.warns(FutureWarning, match="backend is now store_name"):
        assert new.backend == "faiss"
    with pytest.warns(FutureWarning, match="backend='exact' is renamed store='exact'"):
        exact = new.search_embeddings(new.encode([TEXTS[1]]), k=3, backend="exact")
    assert exact[1].tolist() == new.search_embeddings(new.encode([TEXTS[1]]), k=3, store="exact")[1].tolist()


def test_a_runtime_needs_a_model_folder(tiny_lstm, word_tokenizer):
    with pytest.raises(ValueError, match="backend='auto' chooses how a model folder is loaded: pass the folder"):
        DuplicateIndex(tiny_lstm, word_tokenizer, backend="auto")


def test_a_saved_index_loads_with_its_store_under_either_name(tmp_path, tiny_lstm, word_tokenizer):
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, store="faiss").save(tmp_path)
    assert DuplicateIndex.load(tmp_path, tiny_lstm, word_tokenizer).store_name == "faiss"  # saved as "backend"
    with pytest.warns(FutureWarning, match="backend='exact' is renamed store='exact'"):
        assert DuplicateIndex.load(tmp_path, tiny_lstm, word_tokenizer, backend="exact").store_name == "exact"
