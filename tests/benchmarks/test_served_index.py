"""The correctness scripts' `--index_dir`: a site's database index is copied before the service writes to it."""

from __future__ import annotations

import pytest

from benchmarks.serving.served_index import copied_index, rows_and_groups
from hfsiamese.search import DuplicateIndex
from tests.conftest import TEXTS
from tests.service.running_service import lancedb_index_dir, tiny_model_dir


def test_the_copy_is_written_to_and_the_index_it_came_from_is_not(tmp_path, word_tokenizer):
    model_dir = tiny_model_dir(tmp_path / "model", word_tokenizer)
    original = lancedb_index_dir(tmp_path / "site", model_dir)
    before = rows_and_groups(original, str(model_dir))
    copy = copied_index(str(original), str(model_dir), tmp_path / "work")
    assert copy == tmp_path / "work" / "index" and rows_and_groups(copy, str(model_dir)) == before
    index = DuplicateIndex.load(copy, str(model_dir))
    try:
        assert index.database == str(tmp_path / "work" / "db")
        index.add(["a question only the copy holds"], [100])
    finally:
        index.close()
    assert len(rows_and_groups(copy, str(model_dir))[0]) == len(TEXTS) + 1
    assert rows_and_groups(original, str(model_dir)) == before


def test_an_index_kept_in_its_folder_is_refused(tmp_path, word_tokenizer):
    model_dir = tiny_model_dir(tmp_path / "model", word_tokenizer)
    index = DuplicateIndex.build(TEXTS, str(model_dir), ids=list(range(len(TEXTS))))
    index.save(tmp_path / "folder_index")
    with pytest.raises(SystemExit, match="keeps its rows in its folder: give an index in a database"):
        copied_index(str(tmp_path / "folder_index"), str(model_dir), tmp_path / "work")
    assert not (tmp_path / "work").exists()
