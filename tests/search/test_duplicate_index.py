import json
import logging
import sys

import datasets
import pytest
import torch

from hfsiamese import SiameseConfig, SiameseModel
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from hfsiamese.search import DuplicateIndex
from tests.conftest import QQP_FILE, TEXTS


@pytest.fixture(scope="module")
def qqp_texts():
    """40 distinct real questions: enough for ranking and mining to be non-trivial."""
    seen = {}
    for line in QQP_FILE.read_text(encoding="utf-8").splitlines():
        for text in line.split("\t")[1:3]:
            seen.setdefault(text.strip(), None)
        if len(seen) >= 40:
            break
    return list(seen)[:40]


@pytest.fixture(scope="module")
def qqp_model(qqp_texts):
    tokenizer = train_word_tokenizer(qqp_texts, vocab_size=400, model_max_length=64)
    torch.manual_seed(0)
    config = SiameseConfig(
        encoder_type="lstm", vocab_size=len(tokenizer), embedding_dim=8, hidden_size=6, pad_token_id=0, threshold=0.9
    )
    return SiameseModel(config), tokenizer


def brute_force(model, tokenizer, queries, corpus, k):
    scores = model.encode(queries, tokenizer) @ model.encode(corpus, tokenizer).T
    return scores.topk(min(k, len(corpus)), dim=1)


def test_build_from_list_keeps_texts_ids_and_embeddings(tiny_lstm, word_tokenizer):
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, batch_size=3)
    assert len(index) == len(TEXTS)
    assert index.texts == TEXTS and index.ids == list(range(len(TEXTS)))
    torch.testing.assert_close(index.embeddings, tiny_lstm.encode(TEXTS, word_tokenizer))
    assert index.embedding_dim == tiny_lstm.config.sentence_embedding_dim


def test_build_from_dataset_with_id_column(tiny_lstm, word_tokenizer):
    dataset = datasets.Dataset.from_dict({"question": TEXTS, "qid": [f"q{i}" for i in range(len(TEXTS))]})
    index = DuplicateIndex.build(dataset, tiny_lstm, word_tokenizer, text_column="question", id_column="qid")
    assert index.ids == [f"q{i}" for i in range(len(TEXTS))] and index.texts == TEXTS
    match = index.search(TEXTS[3], k=1)[0]
    assert match["id"] == "q3" and match["text"] == TEXTS[3]
    with pytest.raises(KeyError, match="'text' is not a column"):
        DuplicateIndex.build(dataset, tiny_lstm, word_tokenizer)


@pytest.mark.parametrize("chunks", [{}, {"query_chunk_size": 1, "corpus_chunk_size": 7}])
def test_search_matches_brute_force(qqp_texts, qqp_model, chunks):
    model, tokenizer = qqp_model
    queries = ["how do i learn python ?", "why is the sky blue ?", qqp_texts[5]]
    index = DuplicateIndex.build(qqp_texts, model, tokenizer, **chunks)
    results = index.search(queries, k=4)
    expected_scores, expected_rows = brute_force(model, tokenizer, queries, qqp_texts, 4)
    assert len(results) == len(queries)
    for matches, scores, rows in zip(results, expected_scores, expected_rows):
        assert [m["id"] for m in matches] == rows.tolist()
        assert [m["text"] for m in matches] == [qqp_texts[r] for r in rows.tolist()]
        torch.testing.assert_close(torch.tensor([m["score"] for m in matches]), scores)
        assert [m["is_duplicate"] for m in matches] == (scores >= 0.9).tolist()
    assert results[2][0]["text"] == qqp_texts[5]


def test_single_query_k_capping_and_tensor_form(tiny_lstm, word_tokenizer):
    index = DuplicateIndex.build(TEXTS[:3], tiny_lstm, word_tokenizer)
    single = index.search("how do i learn python ?", k=10)
    assert isinstance(single, list) and isinstance(single[0], dict) and len(single) == 3  # capped at len(index)
    assert "is_duplicate" not in single[0]  # the model has no threshold
    assert [m["is_duplicate"] for m in index.search("how do i learn python ?", k=3, threshold=-1.0)] == [True] * 3
    scores, rows = index.search_embeddings(tiny_lstm.encode(["why is the sky blue ?"], word_tokenizer), k=2)
    assert scores.shape == rows.shape == (1, 2) and rows.dtype == torch.long
    assert index.search([], k=2) == []


def test_add_appends_and_rejects_duplicate_ids(tiny_lstm, word_tokenizer):
    index = DuplicateIndex.build(TEXTS[:4], tiny_lstm, word_tokenizer)
    index.add(TEXTS[4:6])
    assert index.ids == [0, 1, 2, 3, 4, 5]
    index.add([TEXTS[6]], ids=[100])
    assert index.search(TEXTS[6], k=1)[0]["id"] == 100
    torch.testing.assert_close(index.embeddings, tiny_lstm.encode(TEXTS[:7], word_tokenizer))
    with pytest.raises(ValueError, match=r"ids already in the index: \[100\]"):
        index.add([TEXTS[7]], ids=[100])
    with pytest.raises(ValueError, match=r"duplicate ids among the new texts: \[7\]"):
        index.add(TEXTS[:2], ids=[7, 7])
    with pytest.raises(TypeError, match="this index has int ids"):
        index.add([TEXTS[7]], ids=["x"])
    assert len(index) == 7  # nothing was added by the failed calls

    named = DuplicateIndex.build(TEXTS[:2], tiny_lstm, word_tokenizer, ids=["a", "b"])
    with pytest.raises(ValueError, match="string ids: pass ids="):
        named.add([TEXTS[2]])


def test_save_load_round_trip(tmp_path, tiny_lstm, word_tokenizer):
    tiny_lstm.config.threshold = 0.5
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, ids=[f"q{i}" for i in range(len(TEXTS))])
    index.save(tmp_path / "index")
    config = json.loads((tmp_path / "index" / "index_config.json").read_text())
    assert config["embedding_dim"] == tiny_lstm.config.sentence_embedding_dim and config["num_texts"] == len(TEXTS)
    assert config["threshold"] == 0.5

    loaded = DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer)
    assert loaded.ids == index.ids and loaded.texts == index.texts and loaded.threshold == 0.5
    assert torch.equal(loaded.embeddings, index.embeddings)
    assert loaded.search(TEXTS[:3], k=3) == index.search(TEXTS[:3], k=3)
    loaded.add(["how do i boil an egg ?"], ids=["new"])
    loaded.save(tmp_path / "index", overwrite=True)  # over the folder it was loaded from
    again = DuplicateIndex.load(tmp_path / "index")
    assert again.ids[-1] == "new" and len(again) == len(TEXTS) + 1

    # Without a model: tensors and mining work, embedding new texts says what is missing.
    assert again.search_embeddings(index.embeddings[:1], k=1)[1].tolist() == [[0]]
    with pytest.raises(ValueError, match="needs a model"):
        again.search("why is the sky blue ?")


def test_load_checks_the_model_dimension(tmp_path, tiny_lstm, word_tokenizer):
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer).save(tmp_path)
    other = SiameseModel(
        SiameseConfig(encoder_type="lstm", vocab_size=len(word_tokenizer), embedding_dim=8, hidden_size=5)
    )
    dims = (tiny_lstm.config.sentence_embedding_dim, other.config.sentence_embedding_dim)
    assert dims[0] != dims[1]
    with pytest.raises(ValueError, match=rf"holds {dims[0]}-dimensional embeddings .* gives {dims[1]}-dimensional"):
        DuplicateIndex.load(tmp_path, other, word_tokenizer)


def test_save_refuses_a_non_empty_folder(tmp_path, tiny_lstm, word_tokenizer):
    (tmp_path / "notes.txt").write_text("mine")
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer)
    with pytest.raises(FileExistsError, match="is not empty: pass overwrite=True"):
        index.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    index.save(tmp_path, overwrite=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"  # other files are left alone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "embeddings.npy", "index_config.json", "notes.txt"]


def test_missing_or_corrupted_files_are_named(tmp_path, tiny_lstm, word_tokenizer):
    with pytest.raises(FileNotFoundError, match="no index folder"):
        DuplicateIndex.load(tmp_path / "nowhere")
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer).save(tmp_path)

    embeddings = tmp_path / "embeddings.npy"
    good = embeddings.read_bytes()
    embeddings.write_bytes(good[: len(good) // 2])
    for mmap in (True, False):
        with pytest.raises(ValueError, match=r"embeddings\.npy is corrupted"):
            DuplicateIndex.load(tmp_path, mmap=mmap)
    embeddings.write_bytes(good)

    config = tmp_path / "index_config.json"
    config.write_text("{not json")
    with pytest.raises(ValueError, match=r"index_config\.json is corrupted"):
        DuplicateIndex.load(tmp_path)
    config.unlink()
    with pytest.raises(FileNotFoundError, match=r"index_config\.json is missing"):
        DuplicateIndex.load(tmp_path)


def test_truncated_corpus_is_reported(tmp_path, tiny_lstm, word_tokenizer):
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer).save(tmp_path)
    (arrow,) = (tmp_path / "corpus").glob("*.arrow")
    arrow.write_bytes(arrow.read_bytes()[:50])
    with pytest.raises(ValueError, match=r"corpus is corrupted"):
        DuplicateIndex.load(tmp_path)


def test_faiss_backend_gives_the_exact_top_k(qqp_texts, qqp_model):
    model, tokenizer = qqp_model
    queries = qqp_texts[::7] + ["how do i learn python ?"]
    exact = DuplicateIndex.build(qqp_texts, model, tokenizer)
    exact_scores, exact_rows = exact.search_embeddings(model.encode(queries, tokenizer), k=5)
    faiss_scores, faiss_rows = exact.search_embeddings(model.encode(queries, tokenizer), k=5, store="faiss")
    assert torch.equal(faiss_rows, exact_rows)
    torch.testing.assert_close(faiss_scores, exact_scores, atol=1e-5, rtol=0)

    on_faiss = DuplicateIndex.build(qqp_texts, model, tokenizer, store="faiss")
    on_faiss.search(queries[:1], k=1)
    on_faiss.add(["a brand new question about faiss ?"])  # the FAISS index is rebuilt with the new row
    assert on_faiss.search("a brand new question about faiss ?", k=1)[0]["id"] == len(qqp_texts)


def test_faiss_backend_without_faiss_names_the_extra(monkeypatch, tiny_lstm, word_tokenizer):
    monkeypatch.setitem(sys.modules, "faiss", None)  # makes `import faiss` fail
    with pytest.raises(ImportError, match=r'needs the faiss package: .*pip install -e "\.\[faiss\]"'):
        DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, store="faiss")
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer)
    with pytest.raises(ImportError, match="faiss"):
        index.search(TEXTS[0], store="faiss")


def _brute_force_pairs(embeddings, threshold):
    scores = embeddings @ embeddings.T
    n = len(embeddings)
    return {(i, j): scores[i, j].item() for i in range(n) for j in range(i + 1, n) if scores[i, j] >= threshold}


def test_find_duplicates_matches_brute_force(qqp_texts, qqp_model):
    model, tokenizer = qqp_model
    index = DuplicateIndex.build(qqp_texts, model, tokenizer, query_chunk_size=7, corpus_chunk_size=9)
    all_scores = (index.embeddings @ index.embeddings.T).triu(1)
    values = all_scores[all_scores != 0].sort(descending=True).values
    threshold = ((values[30] + values[31]) / 2).item()  # midway between two scores: no pair sits on it
    expected = _brute_force_pairs(index.embeddings, threshold)
    assert len(expected) == 31

    pairs = index.find_duplicates(threshold, k=len(qqp_texts) - 1)
    assert {(p["id_a"], p["id_b"]): p["score"] for p in pairs}.keys() == expected.keys()
    for pair in pairs:
        assert pair["score"] == pytest.approx(expected[(pair["id_a"], pair["id_b"])], abs=1e-5)
        assert pair["id_a"] < pair["id_b"]
        assert pair["text_a"] == qqp_texts[pair["id_a"]] and pair["text_b"] == qqp_texts[pair["id_b"]]
    assert [p["score"] for p in pairs] == sorted((p["score"] for p in pairs), reverse=True)


def test_find_duplicates_top_k_cap_warns(qqp_texts, qqp_model, caplog):
    model, tokenizer = qqp_model
    index = DuplicateIndex.build(qqp_texts, model, tokenizer)
    exhaustive = {(p["id_a"], p["id_b"]) for p in index.find_duplicates(0.0, k=len(qqp_texts))}
    with caplog.at_level(logging.WARNING, logger="hfsiamese.search.duplicate_index"):
        capped = {(p["id_a"], p["id_b"]) for p in index.find_duplicates(0.0, k=1)}
    assert capped < exhaustive  # a subset: the cap only ever drops pairs
    assert "raise k" in caplog.text


def test_find_duplicates_threshold_defaults_to_the_model(tiny_lstm, word_tokenizer):
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer)
    with pytest.raises(ValueError, match="no threshold"):
        index.find_duplicates()
    tiny_lstm.config.threshold = 0.8
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer)
    expected = _brute_force_pairs(index.embeddings, 0.8)
    assert {(p["id_a"], p["id_b"]) for p in index.find_duplicates(k=len(TEXTS))} == expected.keys()


def test_classifier_threshold_is_not_used_as_a_cosine_threshold(word_tokenizer):
    config = SiameseConfig(
        encoder_type="lstm",
        vocab_size=len(word_tokenizer),
        embedding_dim=8,
        hidden_size=6,
        classifier_head=True,
        threshold=0.5,
    )
    index = DuplicateIndex.build(TEXTS, SiameseModel(config), word_tokenizer)
    assert index.threshold is None and "is_duplicate" not in index.search(TEXTS[0], k=1)[0]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda m, t: DuplicateIndex.build([], m, t), ValueError, "empty corpus"),
        (lambda m, t: DuplicateIndex.build(TEXTS, m, t, ids=[1, 2]), ValueError, "got 8 texts but 2 ids"),
        (lambda m, t: DuplicateIndex.build("one text", m, t), TypeError, "not a single string"),
        (
            lambda m, t: DuplicateIndex.build(TEXTS, m, t).search(None),
            TypeError,
            "^queries must be a list of strings, got NoneType$",  # was "'NoneType' object is not iterable"
        ),
        (lambda m, t: DuplicateIndex.build(["fine", "  "], m, t), ValueError, r"corpus\[1\] is empty"),
        (lambda m, t: DuplicateIndex.build(["a", "b"], m, t, ids=[1, "b"]), TypeError, "all integers or all strings"),
        (lambda m, t: DuplicateIndex.build(TEXTS, m, t, store="annoy"), ValueError, "store must be one of"),
        (
            lambda m, t: DuplicateIndex.build(TEXTS, m, t).search(TEXTS[0], k=0),
            ValueError,
            "k must be an integer of at least 1",
        ),
        (lambda m, t: DuplicateIndex.build(TEXTS, m, t).find_duplicates(0.5, k=0), ValueError, "k must be"),
        (lambda m, t: DuplicateIndex.build(TEXTS, m, t).find_duplicates(1.5), ValueError, r"must lie in \[-1, 1\]"),
        (lambda m, t: DuplicateIndex(m, t).search(TEXTS[0]), ValueError, "the index is empty"),
        (lambda m, t: DuplicateIndex(m, t).save("unused"), ValueError, "the index is empty"),
        (
            lambda m, t: DuplicateIndex.build(TEXTS, m, t).search_embeddings(torch.zeros(2, 3)),
            ValueError,
            r"shape \(num_queries, 6\)",  # tiny_lstm: a unidirectional LSTM of 6 units
        ),
    ],
)
def test_bad_input_gets_a_clear_error(tiny_lstm, word_tokenizer, call, error, message):
    with pytest.raises(error, match=message):
        call(tiny_lstm, word_tokenizer)


def test_find_duplicates_by_calibrated_probability(tmp_path, qqp_texts, qqp_model):
    model, tokenizer = qqp_model
    model.config.calibration = {"method": "platt", "coef": 10.0, "intercept": -9.0}
    try:
        index = DuplicateIndex.build(qqp_texts, model, tokenizer)
    finally:
        model.config.calibration = None
    everything = index.find_duplicates(threshold=-1.0, k=len(qqp_texts) - 1)
    assert all(
        pair["probability"]
        == pytest.approx(1 / (1 + torch.exp(torch.tensor(9.0 - 10.0 * pair["score"]))).item(), abs=1e-5)
        for pair in everything
    )
    p = _between([pair["probability"] for pair in everything])
    kept = index.find_duplicates(k=len(qqp_texts) - 1, probability_threshold=p)
    assert {(d["id_a"], d["id_b"]) for d in kept} == {
        (d["id_a"], d["id_b"]) for d in everything if d["probability"] >= p
    }
    index.save(tmp_path / "index")
    loaded = DuplicateIndex.load(tmp_path / "index")  # without the model: the map was saved with the index
    assert loaded.find_duplicates(k=len(qqp_texts) - 1, probability_threshold=p) == kept
    with pytest.raises(ValueError, match="not both"):
        index.find_duplicates(threshold=0.5, probability_threshold=p)
    with pytest.raises(ValueError, match="needs a model calibrated to probabilities"):
        DuplicateIndex.build(qqp_texts[:5], model, tokenizer).find_duplicates(probability_threshold=0.5)


def _between(probabilities):
    """A probability threshold halfway between two middle distinct values: no pair sits on the cut."""
    values = sorted(set(probabilities))
    middle = len(values) // 2
    return (values[middle - 1] + values[middle]) / 2


def test_an_index_refuses_a_model_other_than_the_one_that_built_it(tmp_path, tiny_lstm, word_tokenizer, caplog):
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer).save(tmp_path / "index")
    torch.manual_seed(1)  # the same architecture and size, other weights: comparable shapes, meaningless scores
    other = SiameseModel(tiny_lstm.config)
    with pytest.raises(ValueError, match=r"was built with another model .* embeds its probe questions differently"):
        DuplicateIndex.load(tmp_path / "index", other, word_tokenizer)
    # The same weights from a moved folder pass, without a warning about the name.
    tiny_lstm.save_pretrained(tmp_path / "moved")
    moved = SiameseModel.from_pretrained(tmp_path / "moved")
    with caplog.at_level(logging.WARNING):
        loaded = DuplicateIndex.load(tmp_path / "index", moved, word_tokenizer)
    assert loaded.search(TEXTS[:1], k=1)[0][0]["text"] == TEXTS[0] and not caplog.records
    # Saved again without a model, the fingerprint stays with the index.
    DuplicateIndex.load(tmp_path / "index").save(tmp_path / "copy")
    with pytest.raises(ValueError, match="was built with another model"):
        DuplicateIndex.load(tmp_path / "copy", other, word_tokenizer)


def test_truncate_dim_builds_a_smaller_index_and_is_saved_with_it(tmp_path, tiny_lstm, word_tokenizer):
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, truncate_dim=4)
    assert index.embeddings.shape == (len(TEXTS), 4)
    assert torch.allclose(index.embeddings, tiny_lstm.encode(TEXTS, word_tokenizer, truncate_dim=4))
    index.save(tmp_path / "index")
    loaded = DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer)
    assert loaded.truncate_dim == 4 and loaded.search(TEXTS[:2], k=2) == index.search(TEXTS[:2], k=2)
    with pytest.raises(ValueError, match="truncate_dim must be an integer from 1 to the embedding size 6"):
        DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, truncate_dim=7)
