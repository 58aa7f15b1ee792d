"""`DuplicateIndex` on a vector database (`store="lancedb"` / `"qdrant"`, their embedded modes): the same API as in memory."""

from __future__ import annotations

import re

import pytest
import torch

from hfsiamese.search import DuplicateIndex
from tests.conftest import TEXTS

BACKENDS = ["lancedb", "qdrant"]  # both in the test extra: a missing one fails, it is not skipped
SITES = ["cooking" if i % 2 else "python" for i in range(len(TEXTS))]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


def build(backend, tmp_path, model, tokenizer, **options):
    return DuplicateIndex.build(
        TEXTS,
        model,
        tokenizer,
        store=backend,
        database=tmp_path / "db",
        metadata=[{"site": s} for s in SITES],
        **options,
    )


def test_search_finds_what_the_exact_index_finds(backend, tmp_path, tiny_lstm, word_tokenizer):
    exact = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, threshold=0.5)
    with build(backend, tmp_path, tiny_lstm, word_tokenizer, threshold=0.5) as index:
        assert len(index) == len(TEXTS) and sorted(index.ids) == list(range(len(TEXTS)))
        for got, want in zip(index.search(TEXTS[:3], k=4), exact.search(TEXTS[:3], k=4)):
            assert [m["id"] for m in got] == [m["id"] for m in want]
            assert [m["is_duplicate"] for m in got] == [m["is_duplicate"] for m in want]
            torch.testing.assert_close(
                torch.tensor([m["score"] for m in got]), torch.tensor([m["score"] for m in want]), atol=1e-5, rtol=0
            )
        assert {m["site"] for m in index.search(TEXTS[0], k=len(TEXTS))} == {"python", "cooking"}


def test_check_filter_refuses_what_search_refuses_without_searching(backend, tmp_path, tiny_lstm, word_tokenizer):
    with build(backend, tmp_path, tiny_lstm, word_tokenizer) as index:
        index.check_filter({"site": ["cooking", 3, True]})
        index.check_filter(None)
        for bad, error in (({"site": 1.5}, TypeError), ({"": "x"}, TypeError), ({"site": [None]}, TypeError)):
            with pytest.raises(error) as refused:
                index.check_filter(bad)
            with pytest.raises(error, match=re.escape(str(refused.value))):  # the same words as the search's
                index.search(TEXTS[0], k=1, filter=bad)
    with pytest.raises(ValueError, match="needs a database store"):
        DuplicateIndex.build(TEXTS[:2], tiny_lstm, word_tokenizer).check_filter({"site": "x"})


def test_filters_add_and_delete_without_a_rebuild(backend, tmp_path, tiny_lstm, word_tokenizer, monkeypatch):
    """No rebuild: the same store all along; `add` embeds and writes only the new row, `delete` writes none."""
    with build(backend, tmp_path, tiny_lstm, word_tokenizer) as index:
        found = index.search(TEXTS[1], k=len(TEXTS), filter={"site": "cooking"})
        assert found and all(m["site"] == "cooking" for m in found)
        assert len(index.search(TEXTS[1], k=len(TEXTS), filter={"site": ["cooking", "python"]})) == len(TEXTS)

        store, rows_before = index._store, {m["id"]: m["text"] for m in index.search(TEXTS[0], k=len(TEXTS))}
        embedded, written = [], []  # every text the model embeds, every row the store is given, from here on
        encode, store_add = index._encode, store.add
        monkeypatch.setattr(index, "_encode", lambda texts, **kw: (embedded.extend(texts), encode(texts, **kw))[1])
        monkeypatch.setattr(store, "add", lambda ids, *args: (written.extend(ids), store_add(ids, *args))[1])

        index.add(["How do I bake bread at home?"], ids=[100], metadata=[{"site": "baking"}])
        assert (embedded, written) == (["How do I bake bread at home?"], [100]) and len(index) == len(TEXTS) + 1
        (best,) = index.search("How do I bake bread at home?", k=1, filter={"site": "baking"})
        assert best["id"] == 100 and best["score"] == pytest.approx(1.0, abs=1e-5)
        with pytest.raises(ValueError, match="already"):
            index.add(["again"], ids=[100])

        embedded.clear()
        assert index.delete([0, 100, 999]) == 2
        assert embedded == [] and written == [100]  # nothing embedded or written again
        assert len(index) == len(TEXTS) - 1 and index._store is store
        rows_after = {m["id"]: m["text"] for m in index.search(TEXTS[0], k=len(TEXTS))}
        assert rows_after == {i: text for i, text in rows_before.items() if i != 0}


def test_an_index_reopens_from_its_folder_with_every_row(backend, tmp_path, tiny_lstm, word_tokenizer):
    index = build(backend, tmp_path, tiny_lstm, word_tokenizer, threshold=0.5)
    index.add(["How do I bake bread at home?"], ids=[100], metadata=[{"site": "baking"}])
    before = index.search(TEXTS[2], k=3)
    index.save(tmp_path / "index")
    index.close()
    assert sorted(p.name for p in (tmp_path / "index").iterdir()) == [
        "index_config.json"
    ]  # the rows are in the database

    with DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer) as again:
        assert again.store_name == backend and len(again) == len(TEXTS) + 1
        after = again.search(TEXTS[2], k=3)
        assert [(m["id"], m["text"], m["site"]) for m in after] == [(m["id"], m["text"], m["site"]) for m in before]
        assert [m["score"] for m in after] == pytest.approx([m["score"] for m in before], abs=1e-5)
        assert again.threshold == 0.5


def test_find_duplicates_mines_the_collection(backend, tmp_path, tiny_lstm, word_tokenizer):
    exact = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer).find_duplicates(threshold=0.5, k=3)
    with build(backend, tmp_path, tiny_lstm, word_tokenizer) as index:
        mined = index.find_duplicates(threshold=0.5, k=3)
    assert {(p["id_a"], p["id_b"]) for p in mined} == {(p["id_a"], p["id_b"]) for p in exact}


def test_database_options_are_checked(backend, tmp_path, tiny_lstm, word_tokenizer):
    with pytest.raises(ValueError, match="needs database="):
        DuplicateIndex(tiny_lstm, word_tokenizer, store=backend)
    with pytest.raises(ValueError, match="database= applies to"):
        DuplicateIndex(tiny_lstm, word_tokenizer, database=tmp_path)
    with build(backend, tmp_path, tiny_lstm, word_tokenizer) as index:
        with pytest.raises(ValueError, match="row numbers"):
            index.search_embeddings(torch.zeros(1, index.embedding_dim))
        with pytest.raises(ValueError, match=r"reserved key\(s\) \['score'\]"):  # before anything is written
            index.add(["a", "b"], metadata=[{"site": "x"}, {"score": 1}])
        assert len(index) == len(TEXTS)
    with pytest.raises(ValueError, match="already holds"):
        build(backend, tmp_path, tiny_lstm, word_tokenizer)
