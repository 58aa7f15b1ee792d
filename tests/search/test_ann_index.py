"""Quantised and approximate FAISS search (`store="faiss"`), memory-mapped embeddings and deletes, against exact search."""

from __future__ import annotations

import json

import faiss
import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.models.siamese import SiameseConfig, SiameseModel
from hfsiamese.search import DuplicateIndex
from hfsiamese.search.stores.ann_index import EXACT_UP_TO, AnnSpec, default_nlist
from tests.conftest import TEXTS

DIM = 32


@pytest.fixture(scope="module")
def static_model(word_tokenizer_module):
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="static", vocab_size=len(word_tokenizer_module), embedding_dim=DIM, pad_token_id=0
    )
    return SiameseModel(config), word_tokenizer_module


@pytest.fixture(scope="module")
def word_tokenizer_module():
    return train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)


def clustered(num_rows: int, seed: int = 0, num_clusters: int = 40) -> np.ndarray:
    """L2-normalised vectors around the same random centres (whatever the seed): neighbours that mean something,
    as real embeddings have; `seed` draws other members of those clusters (queries)."""
    centres = np.random.default_rng(0).standard_normal((num_clusters, DIM))
    rng = np.random.default_rng(seed + 1)
    vectors = centres[rng.integers(0, num_clusters, num_rows)] + 0.6 * rng.standard_normal((num_rows, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def index_of(vectors: np.ndarray, model, **options) -> DuplicateIndex:
    model, tokenizer = model
    index = DuplicateIndex(model, tokenizer, **options)
    index.add_embeddings([f"text {i}" for i in range(len(vectors))], vectors)
    return index


def recall_at(found: torch.Tensor, exact: torch.Tensor) -> float:
    hits = sum(len(set(f.tolist()) & set(e.tolist())) for f, e in zip(found, exact))
    return hits / exact.numel()


@pytest.mark.parametrize(
    ("options", "min_recall"),
    [
        ({"quantization": "none", "structure": "flat"}, 1.0),
        ({"quantization": "int8", "structure": "flat"}, 0.98),
        ({"quantization": "binary", "structure": "flat", "rescore_multiplier": 10}, 0.93),
        ({"quantization": "pq", "structure": "flat", "rescore_multiplier": 10}, 0.95),
        ({"quantization": "none", "structure": "hnsw"}, 0.95),
        # nprobe < nlist: an IVF search that visits 4 of its 32 cells (the default nprobe would visit all of them).
        ({"ann": AnnSpec(quantization="int8", structure="ivf", nlist=32, nprobe=4)}, 0.95),
        ({"ann": AnnSpec(quantization="binary", structure="ivf", nlist=16, nprobe=8, rescore_multiplier=10)}, 0.9),
        ({"ann": AnnSpec(quantization="binary", structure="hnsw", rescore_multiplier=10)}, 0.93),
    ],
)
@pytest.mark.slow
def test_quantised_and_approximate_search_find_the_exact_neighbours(static_model, options, min_recall):
    corpus, queries = clustered(2000), torch.from_numpy(clustered(50, seed=1))
    index = index_of(corpus, static_model, store="faiss", **options)
    _, exact_rows = index.search_embeddings(queries, k=10, store="exact")
    scores, rows = index.search_embeddings(queries, k=10)
    assert recall_at(rows, exact_rows) >= min_recall
    cells = probed_cells(index)
    assert cells is None or cells[0] < cells[1], cells  # an IVF search here is approximate: some cells unvisited
    # Quantised candidates are rescored: every score returned is the exact cosine of its row.
    found = rows >= 0
    true = torch.einsum("qd,qkd->qk", queries, torch.from_numpy(corpus)[rows.clamp(min=0)])
    torch.testing.assert_close(scores[found], true[found], atol=1e-5, rtol=0)
    assert torch.all(scores[:, :-1] >= scores[:, 1:] - 1e-6)  # best first


def probed_cells(index: DuplicateIndex) -> tuple[int, int] | None:
    """(nprobe, nlist) of the FAISS index behind a searched `index`, as FAISS holds them; None when it is not IVF."""

    built = index._ann.index
    if isinstance(built, faiss.IndexBinary):
        ivf = built if isinstance(built, faiss.IndexBinaryIVF) else None
    else:
        ivf = faiss.try_extract_index_ivf(built)
    return None if ivf is None else (int(ivf.nprobe), int(ivf.nlist))


def test_ivf_visits_only_nprobe_cells(static_model):
    """
    Control for the IVF cases above: without clusters (directions uniform on the sphere) a neighbour is as often
    in an unvisited cell, so 4 of 32 cells miss many that all 32 find: the probe count is honoured, and the
    clustered corpus's recall above is an approximation that holds, not an exhaustive search.
    """
    rng = np.random.default_rng(5)
    corpus, queries = (rng.standard_normal((n, DIM)) for n in (2000, 50))
    corpus, queries = ((v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32) for v in (corpus, queries))
    queries = torch.from_numpy(queries)
    recalls = {}
    for nprobe in (4, 32):
        index = index_of(
            corpus,
            static_model,
            store="faiss",
            ann=AnnSpec(quantization="int8", structure="ivf", nlist=32, nprobe=nprobe),
        )
        _, exact_rows = index.search_embeddings(queries, k=10, store="exact")
        recalls[nprobe] = recall_at(index.search_embeddings(queries, k=10)[1], exact_rows)
        assert probed_cells(index) == (nprobe, 32)
    assert recalls[4] < 0.8 and recalls[32] == 1.0, recalls


def test_binary_rescoring_beats_the_codes_alone(static_model):
    corpus, queries = clustered(2000), torch.from_numpy(clustered(50, seed=1))
    _, exact_rows = index_of(corpus, static_model).search_embeddings(queries, k=10)
    narrow = index_of(
        corpus, static_model, store="faiss", quantization="binary", structure="flat", rescore_multiplier=1
    )
    wide = index_of(corpus, static_model, store="faiss", quantization="binary", structure="flat", rescore_multiplier=10)
    assert recall_at(wide.search_embeddings(queries, k=10)[1], exact_rows) > recall_at(
        narrow.search_embeddings(queries, k=10)[1], exact_rows
    )


def test_auto_settings_follow_the_corpus_size():
    assert AnnSpec().resolved(1000, 384) == AnnSpec(quantization="none", structure="flat")
    large = AnnSpec().resolved(EXACT_UP_TO + 1, 384)
    assert (large.quantization, large.structure, large.nlist) == ("binary", "ivf", default_nlist(EXACT_UP_TO + 1))
    assert default_nlist(10_000) == 256 and default_nlist(10_000_000) == 4096 and default_nlist(100) == 2
    with pytest.raises(ValueError, match="divisible by 8"):
        AnnSpec(quantization="binary").resolved(10, 12)
    with pytest.raises(ValueError, match="quantization must be one of"):
        AnnSpec(quantization="int4")
    with pytest.raises(ValueError, match="pq_bytes must divide"):
        AnnSpec(quantization="pq", pq_bytes=5).resolved(10, 32)


def test_faiss_options_are_refused_on_other_backends(static_model):
    model, tokenizer = static_model
    with pytest.raises(ValueError, match='apply to store="faiss"'):
        DuplicateIndex(model, tokenizer, quantization="binary")
    with pytest.raises(ValueError, match="either as ann=AnnSpec"):
        DuplicateIndex(model, tokenizer, store="faiss", ann=AnnSpec(), quantization="int8")


def test_rows_are_added_to_the_faiss_index_without_a_rebuild(static_model):
    corpus = clustered(600)
    index = index_of(corpus[:500], static_model, store="faiss", quantization="int8", structure="ivf")
    index.search_embeddings(torch.from_numpy(corpus[:1]), k=1)  # builds and trains the FAISS index
    built = index._ann
    index.add_embeddings([f"more {i}" for i in range(100)], corpus[500:], ids=list(range(500, 600)))
    assert index._ann is built and len(built) == 600
    scores, rows = index.search_embeddings(torch.from_numpy(corpus[550:551]), k=1)
    assert rows.item() == 550 and scores.item() == pytest.approx(1.0, abs=1e-5)


def test_a_saved_faiss_index_loads_without_rebuilding_and_memory_maps_the_embeddings(tmp_path, static_model):
    corpus, queries = clustered(1500), torch.from_numpy(clustered(20, seed=1))
    index = index_of(corpus, static_model, store="faiss", quantization="binary", structure="ivf")
    before = index.search_embeddings(queries, k=5)
    index.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ann.faiss", "corpus", "embeddings.npy", "index_config.json"]

    loaded = DuplicateIndex.load(tmp_path, *static_model)
    assert loaded.store_name == "faiss" and loaded.memory_mapped and loaded._ann is not None
    assert loaded._ann.spec == index._ann.spec
    after = loaded.search_embeddings(queries, k=5)
    assert torch.equal(after[1], before[1])
    torch.testing.assert_close(after[0], before[0])

    in_memory = DuplicateIndex.load(tmp_path, *static_model, mmap=False)
    assert not in_memory.memory_mapped
    other = DuplicateIndex.load(
        tmp_path, *static_model, quantization="int8", structure="flat"
    )  # asked for other settings
    assert other._ann is None and other.search_embeddings(queries, k=5)[1].shape == (20, 5)
    exact = DuplicateIndex.load(tmp_path, *static_model, store="exact")
    assert exact.store_name == "exact"


def test_a_memory_mapped_index_grows_and_is_searched_exactly(tmp_path, static_model):
    corpus, queries = clustered(900), torch.from_numpy(clustered(10, seed=1))
    index_of(corpus[:800], static_model).save(tmp_path)
    assert not DuplicateIndex.load(tmp_path, *static_model).memory_mapped  # exact: in memory unless asked
    loaded = DuplicateIndex.load(tmp_path, *static_model, mmap=True)
    assert loaded.memory_mapped
    loaded.add_embeddings([f"more {i}" for i in range(100)], corpus[800:], ids=list(range(800, 900)))
    everything = index_of(corpus, static_model)
    for k in (1, 10):
        scores, rows = loaded.search_embeddings(queries, k=k)
        want_scores, want_rows = everything.search_embeddings(queries, k=k)
        assert torch.equal(rows, want_rows)
        torch.testing.assert_close(scores, want_scores)
    # Saving over the folder it is memory-mapped from writes the grown index whole.
    loaded.save(tmp_path, overwrite=True)
    again = DuplicateIndex.load(tmp_path, *static_model, mmap=True)
    assert len(again) == 900 and torch.equal(again.embeddings, torch.from_numpy(corpus))


def test_find_duplicates_through_faiss_matches_the_exact_mining(static_model):
    rng = np.random.default_rng(3)
    corpus = clustered(400)
    twins = corpus[:40] + 0.02 * rng.standard_normal((40, DIM)).astype(np.float32)
    twins /= np.linalg.norm(twins, axis=1, keepdims=True)
    vectors = np.concatenate([corpus, twins])
    exact = index_of(vectors, static_model).find_duplicates(threshold=0.97, k=5)
    approximate = index_of(vectors, static_model, store="faiss", quantization="int8", structure="hnsw").find_duplicates(
        threshold=0.97, k=5
    )
    assert {(p["id_a"], p["id_b"]) for p in approximate} == {(p["id_a"], p["id_b"]) for p in exact}
    assert len(exact) >= 40


def test_delete_removes_texts_from_every_search(tmp_path, static_model):
    corpus = clustered(300)
    for options in ({}, {"store": "faiss", "quantization": "binary", "structure": "flat"}):
        index = index_of(corpus, static_model, **options)
        index.search_embeddings(torch.from_numpy(corpus[:1]), k=1)
        assert index.delete([5, 7, 12345]) == 2  # unknown ids are ignored
        assert len(index) == 298 and 5 not in index.ids and 7 not in index.ids
        _, rows = index.search_embeddings(torch.from_numpy(corpus[[5, 7]]), k=3)
        assert all(index.ids[r] not in (5, 7) for r in rows.flatten().tolist())
        with pytest.raises(ValueError, match="ids already in the index"):
            index.add_embeddings(["again"], corpus[:1], ids=[0])
        index.add_embeddings(["back"], corpus[5:6], ids=[5])  # a deleted id can be used again
        assert index.search_embeddings(torch.from_numpy(corpus[5:6]), k=1)[1].item() == len(index) - 1


def test_metadata_and_filters_need_a_database(static_model):
    model, tokenizer = static_model
    index = DuplicateIndex(model, tokenizer)
    with pytest.raises(ValueError, match="need a database backend"):
        index.add(["How do I learn Python?"], metadata=[{"site": "stackoverflow"}])
    index.add(["How do I learn Python?"])
    with pytest.raises(ValueError, match="filter= needs a database store"):
        index.search("python", filter={"site": "stackoverflow"})


def test_format_1_folders_are_still_read(tmp_path, static_model):
    corpus = clustered(50)
    index_of(corpus, static_model).save(tmp_path)
    config_file = tmp_path / "index_config.json"
    config = json.loads(config_file.read_text())
    config["format_version"] = 1
    config.pop("backend")
    config_file.write_text(json.dumps(config))
    (tmp_path / "embeddings.npy").unlink()
    save_file({"embeddings": torch.from_numpy(corpus)}, tmp_path / "embeddings.safetensors")
    loaded = DuplicateIndex.load(tmp_path, *static_model)
    assert torch.equal(loaded.embeddings, torch.from_numpy(corpus))
    assert loaded.search_embeddings(torch.from_numpy(corpus[3:4]), k=1)[1].item() == 3


def test_a_build_in_shards_is_the_build_in_memory_kept_on_disk(tmp_path, qqp_like_texts, static_model):
    model, tokenizer = static_model
    in_memory = DuplicateIndex.build(qqp_like_texts, model, tokenizer)
    sharded = DuplicateIndex.build(qqp_like_texts, model, tokenizer, shards_dir=tmp_path / "shards", shard_size=16)
    assert sharded.memory_mapped and len(sharded) == len(qqp_like_texts)
    torch.testing.assert_close(sharded.embeddings, in_memory.embeddings, atol=1e-6, rtol=0)
    assert sharded.search(qqp_like_texts[:3], k=3) == in_memory.search(qqp_like_texts[:3], k=3)

    # Started again after a crash that cost one shard: only that shard is encoded again.
    (tmp_path / "shards" / "embeddings.npy").unlink()
    (tmp_path / "shards" / "shard-00001.parquet").unlink()
    kept = (tmp_path / "shards" / "shard-00002.parquet").stat().st_mtime_ns
    again = DuplicateIndex.build(qqp_like_texts, model, tokenizer, shards_dir=tmp_path / "shards", shard_size=16)
    assert (tmp_path / "shards" / "shard-00002.parquet").stat().st_mtime_ns == kept
    torch.testing.assert_close(again.embeddings, in_memory.embeddings, atol=1e-6, rtol=0)
    again.save(tmp_path / "index")
    assert len(DuplicateIndex.load(tmp_path / "index", model, tokenizer)) == len(qqp_like_texts)


@pytest.fixture(scope="module")
def qqp_like_texts():
    return [f"{TEXTS[i % len(TEXTS)]} number {i}" for i in range(60)]


def test_mining_a_grown_memory_mapped_index_pairs_the_new_rows_too(tmp_path, static_model):
    corpus = clustered(300)
    index_of(corpus, static_model).save(tmp_path)
    loaded = DuplicateIndex.load(
        tmp_path, *static_model, mmap=True, corpus_chunk_size=128
    )  # several pieces, a 1-row tail
    loaded.add_embeddings(["twin of 7"], corpus[7:8], ids=[300])
    pairs = {(p["id_a"], p["id_b"]) for p in loaded.find_duplicates(threshold=0.999, k=3)}
    assert (7, 300) in pairs
    everything = index_of(np.concatenate([corpus, corpus[7:8]]), static_model)
    assert pairs == {(p["id_a"], p["id_b"]) for p in everything.find_duplicates(threshold=0.999, k=3)}


@pytest.mark.parametrize("num_queries", [2, 8, 40])
def test_a_batch_over_an_exact_index_is_one_pass_with_faiss_own_results(num_queries, monkeypatch):
    """A batch FAISS would search query by query (faiss >= 1.15 below num_queries * dim = 128,000, which on a few
    cores reads the rows once per query) is searched in one pass over FAISS's own rows: the rows and scores FAISS
    returns, over blocks of rows smaller than the index so that the merge across blocks is exercised."""
    from hfsiamese.search.stores import ann_index
    from hfsiamese.search.stores.ann_index import FaissAnnIndex

    generator = np.random.default_rng(num_queries)
    rows = generator.standard_normal((1000, 48)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    queries = generator.standard_normal((num_queries, 48)).astype(np.float32)
    index = FaissAnnIndex(AnnSpec(quantization="none", structure="flat"), 48)
    index.add(rows)
    one_pass = []
    searched = index._exact_search_in_one_pass
    monkeypatch.setattr(ann_index, "ROWS_PER_BLOCK", 300)
    monkeypatch.setattr(index, "_exact_search_in_one_pass", lambda *a: one_pass.append(1) or searched(*a))
    scores, found = index.search(queries, 7)
    expected_scores, expected_rows = index.index.search(queries, 7)  # FAISS itself
    assert one_pass == [1] and found.dtype == np.int64 and scores.dtype == np.float32
    assert (found == expected_rows).all() and np.allclose(scores, expected_scores, atol=1e-5)
    assert len(index.search(queries, 5000)[1][0]) == 1000  # n capped at the rows, as FAISS's


def test_a_lone_query_or_another_index_kind_is_searched_by_faiss(monkeypatch):
    from hfsiamese.search.stores.ann_index import FaissAnnIndex

    rows = np.random.default_rng(0).standard_normal((600, 16)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    for spec in (AnnSpec(quantization="none", structure="flat"), AnnSpec(quantization="int8", structure="flat")):
        index = FaissAnnIndex(spec, 16)
        index.train(rows)
        index.add(rows)
        monkeypatch.setattr(index, "_exact_search_in_one_pass", lambda *a: pytest.fail("not FAISS's own search"))
        index.search(rows[:1], 3)
        if spec.quantization == "int8":
            index.search(rows[:8], 3)
    index = FaissAnnIndex(AnnSpec(quantization="none", structure="flat"), 16)
    index.add(rows)
    assert index._scans_once_per_query(8) and not index._scans_once_per_query(128_000 // 16)  # faiss 1.15's default
    users = faiss.cvar.distance_compute_blas_threshold
    faiss.cvar.distance_compute_blas_threshold = 1  # the user asks FAISS for its one-pass product at any size
    try:
        monkeypatch.setattr(index, "_exact_search_in_one_pass", lambda *a: pytest.fail("not FAISS's own search"))
        assert index.search(rows[:8], 3)[1][:, 0].tolist() == list(range(8))
    finally:
        faiss.cvar.distance_compute_blas_threshold = users


@pytest.mark.parametrize(
    "quantization, structure", [("none", "flat"), ("int8", "ivf"), ("binary", "ivf"), ("int8", "hnsw")]
)
def test_memory_bytes_is_the_serialised_size_counted_without_a_copy(quantization, structure, monkeypatch):
    """What the index holds is counted as FAISS writes it out, never held whole (a 10M-row index doubled in memory
    when it was serialised to be measured): the figure is the serialised size, to the byte."""
    from hfsiamese.search.stores.ann_index import FaissAnnIndex

    vectors = clustered(2000)
    spec = AnnSpec(quantization=quantization, structure=structure, nlist=16).resolved(len(vectors), DIM)
    ann = FaissAnnIndex(spec, DIM)
    ann.train(vectors)
    ann.add(vectors)
    serialize = faiss.serialize_index_binary if quantization == "binary" else faiss.serialize_index
    serialised = serialize(ann.index).nbytes

    def held_whole(*args):
        raise AssertionError("the index was serialised into memory to be measured")

    monkeypatch.setattr(faiss, "serialize_index", held_whole)
    monkeypatch.setattr(faiss, "serialize_index_binary", held_whole)
    assert ann.memory_bytes() == serialised > 2000
