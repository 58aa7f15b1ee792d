"""CONTRIBUTING.md's recipe for a new store, as printed: its code builds a store that the index runs on."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from hfsiamese.search import DuplicateIndex, VectorStore
from tests.conftest import TEXTS

CONTRIBUTING = Path(__file__).resolve().parents[2] / "CONTRIBUTING.md"


def recipe_code() -> str:
    """The one Python block of the section "Adding a search store"."""
    text = CONTRIBUTING.read_text(encoding="utf-8")
    section = text.split("## Adding a search store", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert len(blocks) == 1, f"expected one python block in the store recipe, found {len(blocks)}"
    return blocks[0]


@pytest.fixture
def recipe_store(tmp_path, monkeypatch):
    """The recipe's module, written to a file and imported, and its one `DatabaseStore` subclass."""
    path = tmp_path / "recipe_store.py"
    path.write_text(recipe_code(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("recipe_store", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "recipe_store", module)
    spec.loader.exec_module(module)
    from hfsiamese.search.stores.base import DatabaseStore

    (store_class,) = [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, DatabaseStore) and value is not DatabaseStore
    ]
    return store_class


def test_the_recipe_store_instantiates_and_is_a_vector_store(recipe_store, tmp_path):
    store = recipe_store.open(tmp_path / "db", collection="questions", embedding_dim=4, api_key=None)
    assert isinstance(store, VectorStore) and store.database and not store.numbered_rows
    store.add([3, 7], ["a", "b"], np.eye(4, dtype=np.float32)[:2], [{"site": "x"}, {"site": "y"}])
    assert len(store) == 2 and store.contains([7, 8]) == [True, False] and store.id_type == "int"
    assert [m["id"] for m in store.search(np.eye(4, dtype=np.float32)[:1], 1, filter={"site": "y"})[0]] == [7]
    with pytest.raises(ValueError, match="already in the collection"):  # refused before anything is written
        store.add([9, 3], ["c", "d"], np.eye(4, dtype=np.float32)[:2])
    assert len(store) == 2
    store.check_search_filter({"site": ["x", 1, True]})  # the base class's shared rules: the recipe writes none
    with pytest.raises(TypeError, match="float"):
        store.check_search_filter({"site": 1.5})


def test_an_index_runs_on_the_recipe_store(recipe_store, tmp_path, tiny_lstm, word_tokenizer):
    """What step 3 (`backends.open_store`) would do, done by a patch: the index searches, filters, adds, deletes
    and keeps duplicate groups in the recipe's store alone."""
    exact = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, threshold=0.5)
    dim = tiny_lstm.config.sentence_embedding_dim
    store = recipe_store.open(tmp_path / "db", collection="questions", embedding_dim=dim, api_key=None)
    sites = [{"site": "cooking" if i % 2 else "python"} for i in range(len(TEXTS))]
    with mock.patch("hfsiamese.search.duplicate_index.open_store", return_value=store):
        index = DuplicateIndex.build(
            TEXTS, tiny_lstm, word_tokenizer, store="lancedb", database=tmp_path / "db", metadata=sites, threshold=0.5
        )
    assert index.store is store and len(store) == len(TEXTS)
    for got, want in zip(index.search(TEXTS[:3], k=4), exact.search(TEXTS[:3], k=4)):
        assert [m["id"] for m in got] == [m["id"] for m in want]
    assert all(m["site"] == "cooking" for m in index.search(TEXTS[1], k=len(TEXTS), filter={"site": "cooking"}))
    groups = index.find_groups()
    assert store.read_group_rows() is not None and groups.num_questions == len(TEXTS)
    (assigned,) = index.add([TEXTS[0]], ids=[100], assign_groups=True)
    assert assigned["id"] == 100 and index.contains([100]) == [True]
    assert index.delete([100, 0]) == 2 and len(index) == len(TEXTS) - 1
    assert 0 not in index.groups.questions() and 100 not in index.groups.questions()
