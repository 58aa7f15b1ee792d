"""`hfsiamese search --store lancedb --vector_index`: the database's approximate vector index built once, tuned to
`--recall_target`, kept for every later process; the flags refused in one line before anything is written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.search import main as search_main
from hfsiamese.search import DuplicateIndex
from hfsiamese.search.stores.lancedb_store import LanceDBStore
from tests.cli.test_cli_search_backend import folder_with_int8  # noqa: F401 - the tiny model folder, a fixture
from tests.conftest import TEXTS


@pytest.fixture
def questions(tmp_path):
    """1,200 distinct questions made of the tiny model's words (a vector index needs 1,000 rows or more)."""
    words = sorted({word for text in TEXTS for word in text.split()})
    rng = np.random.default_rng(0)
    texts = list(dict.fromkeys(" ".join(rng.choice(words, size=7)) for _ in range(1_400)))[:1_200]
    path = tmp_path / "questions.txt"
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return str(path)


def test_the_vector_index_is_built_tuned_and_kept_for_later_searches(folder_with_int8, questions, tmp_path, capsys):  # noqa: F811
    database, index_dir = tmp_path / "db", tmp_path / "index"
    model = ["--model_name_or_path", str(folder_with_int8), "--store", "lancedb", "--database", str(database)]
    flags = [*model, "--corpus", questions, "--index_dir", str(index_dir), "--query", TEXTS[0], "--json"]
    search_main([*flags, "--vector_index", "--recall_target", "0.8"])
    built = json.loads(capsys.readouterr().out)
    settings = built["vector_index"]
    assert settings["rows"] == built["num_texts"] == 1_200 and settings["recall_target"] == 0.8
    assert settings["recall"] >= 0.8 and len(built["results"][0]["matches"]) == 5
    assert LanceDBStore.open(database).vector_index.nprobes == settings["nprobes"]  # kept in the table
    search_main([*model, "--index_dir", str(index_dir), "--query", TEXTS[0], "--json"])  # loaded: searched through it
    again = json.loads(capsys.readouterr().out)
    assert "vector_index" not in again and again["num_texts"] == 1_200


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--vector_index"], "--vector_index applies to --store lancedb"),
        (
            ["--store", "lancedb", "--recall_target", "0.9"],
            "--recall_target applies to --store faiss, or to --store lancedb with --vector_index",
        ),
        (
            ["--store", "lancedb", "--vector_index", "--recall_target", "2"],
            r"--recall_target must be a number in \(0, 1\]",
        ),
    ],
)
def test_the_flags_are_refused_before_anything_is_written(folder_with_int8, questions, tmp_path, extra, message):  # noqa: F811
    flags = ["--model_name_or_path", str(folder_with_int8), "--corpus", questions, "--query", TEXTS[0]]
    if "lancedb" in extra:
        flags += ["--database", str(tmp_path / "db")]
    with pytest.raises(UsageError, match=message):
        search_main([*flags, "--index_dir", str(tmp_path / "index"), *extra])
    assert not (tmp_path / "db").exists() and not (tmp_path / "index").exists()


def test_an_index_of_another_store_refuses_a_vector_index(folder_with_int8):  # noqa: F811
    from transformers import AutoTokenizer

    from hfsiamese import load_model

    index = DuplicateIndex.build(TEXTS, load_model(folder_with_int8), AutoTokenizer.from_pretrained(folder_with_int8))
    with pytest.raises(ValueError, match=r"a vector index is built inside a LanceDB database .*not store='exact'"):
        index.build_vector_index()
