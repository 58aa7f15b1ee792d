"""A mining run in a shards folder (`hfsiamese.mining.mining_shards`): stopped and run again, it keeps what it
finished and returns what an unstopped run returns; a folder of another run is refused before any work."""

from __future__ import annotations

import hashlib

import datasets
import numpy as np
import pytest

from hfsiamese.mining import NegativeFilters, mine_negatives, negative_mining as mining_module
from hfsiamese.mining.mining_shards import MiningFolder
from tests.conftest import TEXTS
from tests.mining.stand_ins import TableCrossEncoder

PAIRS = datasets.Dataset.from_dict(
    {
        "question1": [TEXTS[0], TEXTS[2], TEXTS[4], TEXTS[6], TEXTS[1]],
        "question2": [TEXTS[1], TEXTS[3], TEXTS[5], TEXTS[7], TEXTS[3]],
        "label": [1, 1, 1, 0, 0],
    }
)
FILTERS = NegativeFilters(num_negatives=2)


def mined_arrays(mined) -> dict[str, np.ndarray]:
    fields = ["query_codes", "positive_codes", "positive_scores", "negative_codes", "negative_scores"]
    arrays = {name: getattr(mined, name) for name in fields}
    if mined.cross_encoder_scores is not None:
        arrays["cross_encoder_scores"] = mined.cross_encoder_scores
    return arrays


def assert_same(mined, expected) -> None:
    assert mined.texts == expected.texts
    got, want = mined_arrays(mined), mined_arrays(expected)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)  # NaN where no negative, in both


def files(folder) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.rglob("*") if p.is_file()
    }


class Stop(Exception):
    pass


@pytest.mark.parametrize("rescored", [False, True], ids=["bi-encoder", "cross-encoder"])
def test_a_run_stopped_mid_search_resumes_and_returns_what_an_unstopped_run_returns(
    rescored, tiny_lstm, word_tokenizer, tmp_path, monkeypatch
):
    cross = {"cross_encoder": TableCrossEncoder({(TEXTS[0], TEXTS[3]): 0.9})} if rescored else {}
    options = {"filters": FILTERS, "query_chunk_size": 1, "shard_size": 2, **cross}
    unstopped = mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=tmp_path / "whole", **options)
    searched = []
    chunk = mining_module._ChunkSearch.chunk

    def stopping(self, texts, queries, positives):
        if len(searched) == 1:
            raise Stop  # the second chunk: the first is written
        searched.append(queries.tolist())
        return chunk(self, texts, queries, positives)

    monkeypatch.setattr(mining_module._ChunkSearch, "chunk", stopping)
    shards = tmp_path / "shards"
    with pytest.raises(Stop):
        mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=shards, **options)
    assert sorted(p.name for p in (shards / "negatives").iterdir()) == ["shard-00000.parquet"]
    monkeypatch.setattr(mining_module._ChunkSearch, "chunk", chunk)

    encoded = []
    encode = type(tiny_lstm).encode
    monkeypatch.setattr(type(tiny_lstm), "encode", lambda self, texts, *a, **k: encoded.extend(texts) or encode(self, texts, *a, **k))  # fmt: skip
    resumed = mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=shards, **options)
    assert_same(resumed, unstopped)
    assert set(encoded) <= {"How do I learn Python?", "What is the capital of France?"}  # the probes, no question


def test_a_run_stopped_while_embedding_resumes_from_its_embedding_shards(tiny_lstm, word_tokenizer, tmp_path):
    options = {"filters": FILTERS, "query_chunk_size": 2, "shard_size": 2}
    unstopped = mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=tmp_path / "whole", **options)
    shards = tmp_path / "shards"

    class StoppingModel(type(tiny_lstm)):  # stops at the second embedding shard (of 2 questions)
        def encode(self, texts, *args, **kwargs):
            if len(texts) == 2 and (shards / "embeddings" / "shard-00000.parquet").is_file():
                raise Stop
            return super().encode(texts, *args, **kwargs)

    stopping = StoppingModel(tiny_lstm.config)
    stopping.load_state_dict(tiny_lstm.state_dict())
    with pytest.raises(Stop):
        mine_negatives(PAIRS, stopping.eval(), word_tokenizer, shards_dir=shards, **options)
    assert not (shards / "mining.json").exists() and not (shards / "negatives").exists()
    resumed = mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=shards, **options)
    assert_same(resumed, unstopped)


def test_a_folder_of_another_run_is_refused_before_any_work(tiny_lstm, word_tokenizer, tmp_path, monkeypatch):
    shards = tmp_path / "shards"
    options = {"filters": FILTERS, "query_chunk_size": 2, "shard_size": 2}
    mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=shards, **options)
    before = files(shards)

    def no_work(*args, **kwargs):
        raise AssertionError("encoded or searched before the refusal")

    monkeypatch.setattr(mining_module, "_build_index", no_work)
    refusals = [
        (
            {"filters": NegativeFilters(num_negatives=3)},
            r'filters=\{"num_negatives": 2, .*\(this run: \{"num_negatives": 3, ',
        ),
        ({"query_chunk_size": 1}, r"query_chunk_size=2 \(this run: 1\)"),
        ({"store": "faiss"}, r'backend="exact" \(this run: "faiss"\)'),
        ({"cross_encoder": TableCrossEncoder({})}, r"cross_encoder=null"),
    ]
    for change, message in refusals:
        with pytest.raises(ValueError, match=f"{shards} holds a mining run of {message}.*: mine into another"):
            mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=shards, **{**options, **change})
    other_pairs = datasets.Dataset.from_dict({**PAIRS.to_dict(), "question2": [*PAIRS["question2"][:4], "why ?"]})
    with pytest.raises(ValueError, match="holds a mining run of other questions"):
        mine_negatives(other_pairs, tiny_lstm, word_tokenizer, shards_dir=shards, **options)
    assert files(shards) == before


def test_chunks_searched_on_other_embeddings_are_refused(tiny_lstm, word_tokenizer, tmp_path):
    shards = tmp_path / "shards"
    options = {"filters": FILTERS, "query_chunk_size": 2, "shard_size": 2}
    mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=shards, **options)
    manifest = shards / "embeddings" / "shards.json"
    manifest.write_text(manifest.read_text().replace('"shard_size": 2', '"shard_size": 2 '))  # another manifest
    with pytest.raises(ValueError, match="holds chunks searched on other embeddings"):
        mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=shards, **options)
    (shards / "mining.json").unlink()
    with pytest.raises(FileExistsError, match="holds mined chunks but no mining.json"):
        mine_negatives(PAIRS, tiny_lstm, word_tokenizer, shards_dir=shards, **options)


def test_chunks_round_trip_and_a_damaged_one_is_named(tmp_path):
    folder = MiningFolder(tmp_path / "shards")
    folder.negatives_dir.mkdir(parents=True)
    codes = np.array([[3, -1], [4, 5]])
    positive = np.array([0.5, 0.25], dtype=np.float32)
    negative = np.array([[0.125, np.nan], [0.0625, 0.03125]], dtype=np.float32)
    cross = np.array([[0.9, 0.1, np.nan], [0.8, 0.2, 0.3]], dtype=np.float32)
    for rescores in (None, cross):
        folder.write_chunk(0, (codes, positive, negative, rescores))
        read = folder.read_chunk(0, 2, 2, rescores is not None)
        for got, want in zip(read, (codes, positive, negative, rescores)):
            np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match=r"should hold 3 rows of .*found 2 rows.*delete it and run the mining again"):
        folder.read_chunk(0, 3, 2, True)
    with pytest.raises(ValueError, match="column negative_codes should be 4 wide"):
        folder.read_chunk(0, 2, 4, True)
    (folder.negatives_dir / "shard-00000.parquet").write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="cannot be read as Parquet"):
        folder.read_chunk(0, 2, 2, True)


def test_remove_leaves_what_it_did_not_write(tiny_lstm, word_tokenizer, tmp_path):
    shards = tmp_path / "shards"
    mine_negatives(PAIRS, tiny_lstm, word_tokenizer, filters=FILTERS, shards_dir=shards, shard_size=2)
    (shards / "notes.txt").write_text("mine")
    MiningFolder(shards).remove()
    assert sorted(p.name for p in shards.iterdir()) == ["notes.txt"]
    (shards / "notes.txt").unlink()
    mine_negatives(PAIRS, tiny_lstm, word_tokenizer, filters=FILTERS, shards_dir=shards, shard_size=2)
    MiningFolder(shards).remove()
    assert not shards.exists()
