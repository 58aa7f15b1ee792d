"""A refused sharded build writes nothing: ids and metadata are checked before the first shard is encoded and before
the first row is written (a refusal found only at a later shard would leave the shards before it behind, in the
shards folder and in a database), and the corrected retry builds."""

from __future__ import annotations

import pytest

from hfsiamese.search import DuplicateIndex
from tests.conftest import TEXTS
from tests.helpers import folder_state

CORPUS = [f"{TEXTS[i % len(TEXTS)]} number {i}" for i in range(12)]
SITES = [{"site": "a"}] * 11

BAD_INPUTS = {
    "ids of two kinds": ({"ids": [*range(11), "11"]}, TypeError, r"ids must be all integers or all strings"),
    "repeated ids": ({"ids": [0, *range(11)]}, ValueError, r"duplicate ids among the new texts: \[0\]"),
    "fewer ids than texts": ({"ids": list(range(11))}, ValueError, r"got 12 texts but 11 ids"),
    "fewer metadata than texts": ({"metadata": SITES}, ValueError, r"got 12 texts but 11 metadata dicts"),
    "a reserved metadata key": (
        {"metadata": [*SITES, {"text": "b"}]},
        ValueError,
        r"metadata\[11\] uses the reserved key",
    ),
}
# What only the database checks, in the last shard's rows: refused before the first shard's rows are written.
DATABASE_REFUSALS = {
    "an id beyond int64": (
        {"ids": [*range(11), 2**63]},
        ValueError,
        r"does not fit in 64 bits \(LanceDB stores int64\)",
    ),
    "a nested metadata value": (
        {"metadata": [*SITES, {"site": {"a": 1}}]},
        TypeError,
        r"metadata\[11\]\['site'\] holds dict",
    ),
    "a key the engine refuses": ({"metadata": [*SITES, {"a.b": 1}]}, ValueError, r"metadata\[11\]"),
}


def build(store: str, tmp_path, model, tokenizer, **given) -> DuplicateIndex:
    database = {"database": tmp_path / "db"} if store == "lancedb" else {}
    return DuplicateIndex.build(
        CORPUS, model, tokenizer, shards_dir=tmp_path / "shards", shard_size=5, store=store, **database, **given
    )


def refused_then_built(store, bad, tmp_path, model, tokenizer) -> None:
    given, error, match = bad
    if store == "lancedb":  # the collection opened (empty) first: what the refusal must leave as it is
        DuplicateIndex(model, tokenizer, store="lancedb", database=tmp_path / "db").close()
    before = folder_state(tmp_path)
    with pytest.raises(error, match=match):
        build(store, tmp_path, model, tokenizer, **given)
    assert folder_state(tmp_path) == before
    retry = {"metadata": [*SITES, {"site": "b"}]} if store == "lancedb" else {}
    with build(store, tmp_path, model, tokenizer, **retry) as index:
        assert sorted(index.ids) == list(range(12)) and (tmp_path / "shards" / "shard-00002.parquet").is_file()


@pytest.mark.parametrize("store", ["exact", "lancedb"])
@pytest.mark.parametrize("bad", list(BAD_INPUTS))
def test_a_refused_sharded_build_writes_no_shard(store, bad, tmp_path, tiny_lstm, word_tokenizer):
    refused_then_built(store, BAD_INPUTS[bad], tmp_path, tiny_lstm, word_tokenizer)


def test_metadata_for_an_in_process_store_is_refused_before_a_shard(tmp_path, tiny_lstm, word_tokenizer):
    given = {"metadata": [*SITES, {"site": "b"}]}
    refused_then_built("exact", (given, ValueError, r"need a database backend"), tmp_path, tiny_lstm, word_tokenizer)


@pytest.mark.parametrize("bad", list(DATABASE_REFUSALS))
def test_rows_a_database_refuses_in_the_last_shard_are_refused_before_the_first(
    bad, tmp_path, tiny_lstm, word_tokenizer
):
    refused_then_built("lancedb", DATABASE_REFUSALS[bad], tmp_path, tiny_lstm, word_tokenizer)


@pytest.mark.parametrize("store", ["lancedb", "qdrant"])
def test_a_build_refused_for_its_ids_makes_no_database_collection(store, tmp_path, tiny_lstm, word_tokenizer):
    """The ids are checked before the store is opened: a refused build left an empty collection in the database."""
    with pytest.raises(ValueError, match=r"duplicate ids among the new texts: \[0\]"):
        DuplicateIndex.build(CORPUS, tiny_lstm, word_tokenizer, ids=[0, *range(11)], store=store, database=tmp_path)
    assert folder_state(tmp_path) == {}
    with DuplicateIndex.build(CORPUS, tiny_lstm, word_tokenizer, store=store, database=tmp_path) as index:  # retry
        assert sorted(index.ids) == list(range(12))
