"""Keyword + dense search in a DuplicateIndex: BM25 finds what the embedding misses, the verdict stays the cosine's,
and the settings and the BM25 index live with the index (saved, loaded, added to, deleted from)."""

import json
import math

import pytest
import torch

from hfsiamese import SiameseModel
from hfsiamese.cli.app_page import AppArguments, DuplicateSearch, load_or_build_index
from hfsiamese.search import DuplicateIndex
from hfsiamese.search.lexical import hybrid_search_embeddings
from tests.conftest import TEXTS

# Row 0 shares the rare error code with the query but its embedding is far from it; rows 1 and 2 are close.
CORPUS = [
    "windows update fails with error 0x80070005",
    "how do i update windows",
    "best way to patch the os",
    "how do i reset my phone",
    "why is the sky blue",
    "what is the capital of france",
]
COSINES = [0.1, 0.95, 0.93, 0.8, 0.3, 0.2]  # of each row with the query
QUERY = "error 0x80070005 during windows update"


def unit(dim, cosine, axis):
    """A unit vector whose cosine with e0 is `cosine`, the rest along `axis`."""
    vector = torch.zeros(dim)
    vector[0], vector[axis] = cosine, math.sqrt(1 - cosine**2)
    return vector


@pytest.fixture
def rare_word_index(tiny_lstm, word_tokenizer):
    def make(**options):
        dim = tiny_lstm.config.sentence_embedding_dim
        index = DuplicateIndex(tiny_lstm, word_tokenizer, threshold=0.9, **options)
        index.add_embeddings(CORPUS, torch.stack([unit(dim, c, 1 + i % (dim - 1)) for i, c in enumerate(COSINES)]))
        index._encode = lambda texts, **_: torch.stack([unit(dim, 1.0, 1)] * len(texts))  # the query is e0
        return index

    return make


def test_bm25_finds_the_rare_word_match_the_dense_side_misses(rare_word_index):
    assert [m["id"] for m in rare_word_index().search(QUERY, k=2)] == [1, 2]
    for options in ({"hybrid": "rrf"}, {"hybrid": "weighted", "lexical_weight": 0.6}):
        matches = rare_word_index(**options).search(QUERY, k=2)
        assert [m["id"] for m in matches] == [1, 0], options
        # the order is the fused score's; the score and the verdict stay the cosine's
        assert [m["score"] for m in matches] == pytest.approx([0.95, 0.1])
        assert [m["is_duplicate"] for m in matches] == [True, False]
        assert matches[0]["hybrid_score"] >= matches[1]["hybrid_score"] and matches[1]["lexical_score"] > 0


def test_rrf_scores_are_the_hand_computed_ones(rare_word_index):
    index = rare_word_index(hybrid="rrf")
    query = index._encode([QUERY])
    hits = hybrid_search_embeddings(index, [QUERY], query, 3)
    # dense ranks 1, 2, 6 for rows 1, 2, 0; BM25 ranks: row 0 first, row 1 second, the others share no word
    assert hits.rows[0].tolist() == [1, 0, 2]
    expected = [1 / 61 + 1 / 62, 1 / 66 + 1 / 61, 1 / 62]
    assert hits.fused_scores[0].tolist() == pytest.approx(expected)
    assert hits.scores[0].tolist() == pytest.approx([0.95, 0.1, 0.93])
    assert hits.lexical_scores[0, 2] == 0 and hits.lexical_scores[0, 1] > hits.lexical_scores[0, 0] > 0


def test_a_row_left_out_of_both_lists_before_fusion(rare_word_index):
    # a corpus searched with its own texts (as evaluate_retrieval): row 1 left out, the others move up a rank
    index = rare_word_index(hybrid="rrf")
    hits = hybrid_search_embeddings(index, [QUERY], index._encode([QUERY]), 10, exclude_rows=[1])
    assert hits.rows[0].tolist() == [0, 2, 3, 4, 5]  # k capped at the 5 rows left
    assert hits.fused_scores[0, :2].tolist() == pytest.approx([1 / 65 + 1 / 61, 1 / 61])


def test_faiss_backend_searches_alike(rare_word_index):
    exact = rare_word_index(hybrid="rrf").search(QUERY, k=3)
    faiss = rare_word_index(hybrid="rrf", store="faiss", recall_target=None).search(QUERY, k=3)
    assert [m["id"] for m in faiss] == [m["id"] for m in exact]
    assert [m["hybrid_score"] for m in faiss] == pytest.approx([m["hybrid_score"] for m in exact])


def test_find_duplicates_takes_bm25_neighbours_as_candidates_decided_by_the_cosine(tiny_lstm, word_tokenizer):
    # A-B and C-D are each other's nearest (0.99); A-C (0.95) is nobody's nearest, but A and C share a rare word
    dim = tiny_lstm.config.sentence_embedding_dim
    a, b = unit(dim, 1.0, 1), unit(dim, 0.99, 1)
    c = 0.95 * a + math.sqrt(1 - 0.95**2) * torch.eye(dim)[2]
    d = 0.99 * c + math.sqrt(1 - 0.99**2) * torch.eye(dim)[3]
    texts = ["xj9000 printer offline", "the device stopped answering", "xj9000 keeps jamming", "sheets get stuck"]

    def pairs(threshold, **options):
        index = DuplicateIndex(tiny_lstm, word_tokenizer, **options)
        index.add_embeddings(texts, torch.stack([a, b, c, d]))
        return [(p["id_a"], p["id_b"], round(p["score"], 4)) for p in index.find_duplicates(threshold, k=1)]

    assert pairs(0.9) == [(0, 1, 0.99), (2, 3, 0.99)]
    assert pairs(0.9, hybrid="rrf") == [(0, 1, 0.99), (2, 3, 0.99), (0, 2, 0.95)]
    assert pairs(0.96, hybrid="rrf") == pairs(0.96)  # a BM25 neighbour below the cosine threshold is no pair


def test_saved_and_loaded_with_its_settings_and_bm25_index(tiny_lstm, word_tokenizer, tmp_path):
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, hybrid="weighted", lexical_weight=0.5)
    expected = index.search(["how do i learn python ?", "sky blue"], k=3)
    index.save(tmp_path / "index")
    config = json.loads((tmp_path / "index" / "index_config.json").read_text())
    assert config["hybrid"] == {"method": "weighted", "lexical_weight": 0.5}
    assert (tmp_path / "index" / "lexical_bm25").is_dir()
    loaded = DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer)
    assert loaded.hybrid == "weighted" and loaded._hybrid.lexical_weight == 0.5
    assert "store='exact', hybrid='weighted', model=" in repr(loaded)
    assert loaded._lexical._bm25 is not None  # taken from the folder, not rebuilt
    assert loaded.search(["how do i learn python ?", "sky blue"], k=3) == expected
    # told otherwise at load: dense only, or another rule
    assert (
        "hybrid_score"
        not in DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer, hybrid=None).search(TEXTS[0], k=1)[0]
    )
    assert DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer, hybrid="rrf")._hybrid.rrf_k == 60
    # a folder whose BM25 index is missing is rebuilt from its texts, alike
    DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer).save(tmp_path / "copy")
    import shutil

    shutil.rmtree(tmp_path / "copy" / "lexical_bm25")
    assert (
        DuplicateIndex.load(tmp_path / "copy", tiny_lstm, word_tokenizer).search(
            ["how do i learn python ?", "sky blue"], k=3
        )
        == expected
    )
    # saved without hybrid over it: the BM25 index goes, the config has no hybrid entry (as before hybrid existed)
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer).save(tmp_path / "index", overwrite=True)
    assert not (tmp_path / "index" / "lexical_bm25").exists()
    assert "hybrid" not in json.loads((tmp_path / "index" / "index_config.json").read_text())


def test_a_damaged_hybrid_entry_is_an_error_naming_the_file(tiny_lstm, word_tokenizer, tmp_path):
    DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, hybrid="rrf").save(tmp_path)
    config_file = tmp_path / "index_config.json"
    config = json.loads(config_file.read_text())
    config_file.write_text(json.dumps({**config, "hybrid": {"method": "bm42"}}))
    with pytest.raises(ValueError, match=r"index_config.json has a damaged 'hybrid' entry"):
        DuplicateIndex.load(tmp_path, tiny_lstm, word_tokenizer)


def test_add_and_delete_keep_the_bm25_side_in_step(tiny_lstm, word_tokenizer):
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, hybrid="rrf")
    assert all(m["lexical_score"] == 0 for m in index.search("zyxel router", k=len(TEXTS)))
    index.add(["zyxel router keeps rebooting"], ids=[100])
    best = index.search("zyxel router", k=3)[0]
    assert best["id"] == 100 and best["lexical_score"] > 0
    index.delete([0, 1])  # rows shift: BM25 rows must follow
    best = index.search("zyxel router", k=3)[0]
    assert (best["id"], best["text"]) == (100, "zyxel router keeps rebooting") and best["lexical_score"] > 0
    assert index._lexical.index_of(index._store).num_texts == len(index) == len(TEXTS) - 1
    index.delete([100])
    assert all(m["lexical_score"] == 0 for m in index.search("zyxel router", k=len(index)))


@pytest.mark.parametrize(
    "options, message",
    [
        ({"hybrid": "bm25"}, r"hybrid must be None, 'rrf' or 'weighted', got 'bm25'"),
        ({"hybrid": "rrf", "lexical_weight": 0.5}, r"lexical_weight applies to hybrid=\"weighted\""),
        ({"hybrid": "weighted", "rrf_k": 10}, r"rrf_k applies to hybrid=\"rrf\""),
        ({"hybrid": "weighted", "lexical_weight": 1.5}, r"lexical_weight must be a number in \[0, 1\]"),
        ({"hybrid": "rrf", "rrf_k": 0}, r"rrf_k must be a positive integer"),
        ({"rrf_k": 60}, r"rrf_k and lexical_weight apply only with hybrid="),
    ],
)
def test_refusals_are_one_line(tiny_lstm, options, message):
    with pytest.raises(ValueError, match=message) as caught:
        DuplicateIndex(tiny_lstm, **options)
    assert "\n" not in str(caught.value)


def test_qdrant_is_refused(tiny_lstm, tmp_path):
    pytest.importorskip("qdrant_client")
    with pytest.raises(ValueError, match=r'hybrid= needs a keyword index: .* "lancedb" .*, not \'qdrant\''):
        DuplicateIndex(tiny_lstm, store="qdrant", database=tmp_path / "db", hybrid="rrf")


def test_the_app_verdict_follows_the_best_cosine_not_the_fused_order(rare_word_index, tiny_lstm):
    index = rare_word_index(hybrid="weighted", lexical_weight=1.0)  # BM25 order: row 0 (cosine 0.1) first
    verdict, table = DuplicateSearch(tiny_lstm, index, k=2).search(QUERY)
    assert verdict.startswith("**Already asked** — the best match scores 0.950")
    assert CORPUS[0] in table.splitlines()[2] and CORPUS[1] in table.splitlines()[3]


def test_the_app_builds_a_hybrid_index(tmp_path, tiny_lstm, word_tokenizer):
    tiny_lstm.save_pretrained(tmp_path / "model")
    word_tokenizer.save_pretrained(tmp_path / "model")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TEXTS), encoding="utf-8")
    args = AppArguments(model_name_or_path=str(tmp_path / "model"), corpus=str(corpus), hybrid="rrf")
    model = SiameseModel.from_pretrained(tmp_path / "model")
    index = load_or_build_index(args, model)
    assert index.hybrid == "rrf"
    verdict, table = DuplicateSearch(model, index, k=2).search(TEXTS[4])
    assert verdict.startswith("Closest earlier question") and TEXTS[4] in table.splitlines()[2]
    with pytest.raises(ValueError, match="--rrf_k and --lexical_weight apply with --hybrid rrf or weighted"):
        load_or_build_index(AppArguments(model_name_or_path=str(tmp_path / "model"), corpus=str(corpus), rrf_k=5))


def test_lancedb_uses_its_full_text_index_under_the_same_filter(tiny_lstm, word_tokenizer, tmp_path):
    pytest.importorskip("lancedb")
    dim = tiny_lstm.config.sentence_embedding_dim
    vectors = torch.stack([unit(dim, c, 1 + i % (dim - 1)) for i, c in enumerate(COSINES)])
    sites = [{"site": "a" if i else "b"} for i in range(len(CORPUS))]  # row 0 alone on site b

    def index_with(**options):
        index = DuplicateIndex(
            tiny_lstm, word_tokenizer, threshold=0.9, store="lancedb", database=tmp_path / "db", **options
        )
        index._encode = lambda texts, **_: torch.stack([unit(dim, 1.0, 1)] * len(texts))
        return index

    index = index_with(hybrid="rrf", collection="hybrid")
    index.add_embeddings(CORPUS, vectors, metadata=sites)
    matches = index.search(QUERY, k=2)
    assert [m["id"] for m in matches] == [1, 0] and [m["is_duplicate"] for m in matches] == [True, False]
    assert matches[1]["score"] == pytest.approx(0.1) and matches[1]["site"] == "b" and matches[1]["lexical_score"] > 0
    assert [m["id"] for m in index.search(QUERY, k=2, filter={"site": "a"})] == [1, 2]  # BM25 filtered alike
    in_process = DuplicateIndex(tiny_lstm, word_tokenizer, hybrid="rrf")
    in_process.add_embeddings(CORPUS, vectors)
    assert index.find_duplicates(0.5, k=1) == in_process.find_duplicates(0.5, k=1)  # mined in memory, BM25 too
    index.add_embeddings(["zyxel router keeps rebooting"], vectors[4:5], ids=[100], metadata=[{"site": "a"}])
    assert any(m["id"] == 100 and m["lexical_score"] > 0 for m in index.search("zyxel", k=3))  # found since added
    index.delete([100])
    assert all(m["id"] != 100 for m in index.search("zyxel", k=6))
    index.save(tmp_path / "saved")
    assert not (tmp_path / "saved" / "lexical_bm25").exists()  # the keyword index is the database's
    index.close()
    loaded = DuplicateIndex.load(tmp_path / "saved")  # (its fingerprint is of the stand-in encoder)
    assert loaded.hybrid == "rrf"
    loaded.close()
    dense = index_with(collection="dense")
    dense.add_embeddings(CORPUS, vectors, metadata=sites)
    assert [m["id"] for m in dense.search(QUERY, k=2)] == [1, 2]
    dense.close()
