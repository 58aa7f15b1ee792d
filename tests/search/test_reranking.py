"""Retrieve-then-rerank: `DuplicateIndex.search` / `find_duplicates` with a cross-encoder, the helpers, and the app's search."""

from __future__ import annotations

import itertools
import json
import math
from types import SimpleNamespace

import pytest
import torch

from hfsiamese.cli.app_page import DuplicateSearch
from hfsiamese.cross_encoder.model import CrossEncoder
from hfsiamese.search import DuplicateIndex, rerank_matches, rerank_pairs
from hfsiamese.search.reranking import DEFAULT_RERANK_K, default_rerank_k
from tests.conftest import TEXTS

# The stub's preference: a fixed order of the corpus (TEXTS[0] first), unrelated to the bi-encoder's random embeddings.
PREFERENCE = {text: i + 1 for i, text in enumerate(reversed(TEXTS))}


def stub_score(a: str, b: str) -> float:
    """
    The stub cross-encoder's score: 1 for the same text, else mostly the preference of `b`, then of `a`: below
    0.9, and different for every ordered pair of texts, so that every expected order is free of ties.
    """
    return 1.0 if a == b else 0.1 * PREFERENCE.get(b, 0) + 0.01 * PREFERENCE.get(a, 0)


class StubCrossEncoder:
    """A cross-encoder whose scores the test controls (`stub_score`), recording each `score_pairs` call."""

    def __init__(self, threshold: float | None = None, calibration: dict | None = None) -> None:
        self.config = SimpleNamespace(threshold=threshold, calibration=calibration)
        self.name_or_path = "stub-cross-encoder"
        self.calls: list[tuple[list[str], list[str], dict]] = []

    def score_pairs(self, texts_a, texts_b, **kwargs):
        self.calls.append((list(texts_a), list(texts_b), kwargs))
        return torch.tensor([stub_score(a, b) for a, b in zip(texts_a, texts_b)])


QUERIES = [TEXTS[4], "how can i lose weight ?"]


@pytest.fixture
def index(tiny_lstm, word_tokenizer):
    # A cosine threshold of the bi-encoder: its decisions must not survive reranking.
    return DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, threshold=0.0)


def test_search_returns_the_top_k_of_the_candidates_by_cross_encoder_score(index):
    stub = StubCrossEncoder(threshold=0.5)
    candidates = index.search(QUERIES, k=5)  # what the bi-encoder retrieves for rerank_k=5
    results = index.search(QUERIES, k=3, cross_encoder=stub, rerank_k=5)
    assert len(stub.calls) == 1 and len(stub.calls[0][0]) == 2 * 5  # every pair of every query in one call
    for query, found, matches in zip(QUERIES, candidates, results):
        expected = sorted(found, key=lambda m: -stub_score(query, m["text"]))[:3]
        assert [m["id"] for m in matches] == [m["id"] for m in expected]
        assert [m["score"] for m in matches] == pytest.approx([stub_score(query, m["text"]) for m in expected])
        assert [m["retrieval_score"] for m in matches] == pytest.approx([m["score"] for m in expected])
        assert [m["is_duplicate"] for m in matches] == [stub_score(query, m["text"]) >= 0.5 for m in expected]
        assert set(matches[0]) == {"id", "text", "score", "retrieval_score", "is_duplicate"}
    # The same query in the corpus: the cross-encoder's 1.0, first whatever the bi-encoder thought.
    assert results[0][0]["text"] == TEXTS[4] and results[0][0]["score"] == 1.0


def test_reranking_the_whole_index_finds_what_the_bi_encoder_ranks_low(index):
    stub = StubCrossEncoder()
    query = "how can i lose weight ?"
    best = max(TEXTS, key=lambda text: stub_score(query, text))
    bi_encoder_top = [m["text"] for m in index.search(query, k=2)]
    assert best not in bi_encoder_top  # else this test shows nothing
    matches = index.search(query, k=2, cross_encoder=stub, rerank_k=len(TEXTS))
    assert [m["text"] for m in matches] == sorted(TEXTS, key=lambda text: -stub_score(query, text))[:2]
    assert "is_duplicate" not in matches[0]  # the stub has no threshold; the bi-encoder's decision is dropped


def test_threshold_is_the_cross_encoders(index):
    stub = StubCrossEncoder(threshold=0.95)
    matches = index.search(TEXTS[4], k=4, cross_encoder=stub, rerank_k=8)
    assert [m["is_duplicate"] for m in matches] == [m["score"] >= 0.95 for m in matches]
    assert sum(m["is_duplicate"] for m in matches) == 1  # only the same text reaches 0.95
    told = index.search(TEXTS[4], k=4, cross_encoder=stub, rerank_k=8, threshold=0.5)
    assert [m["is_duplicate"] for m in told] == [m["score"] >= 0.5 for m in told]
    assert sum(m["is_duplicate"] for m in told) > 1
    with pytest.raises(ValueError, match=r"cross-encoder score in \[0, 1\]"):
        index.search(TEXTS[4], cross_encoder=stub, threshold=-0.5)


def test_default_rerank_k_and_its_limits(index):
    assert default_rerank_k(1) == DEFAULT_RERANK_K and default_rerank_k(30) == 60
    stub = StubCrossEncoder()
    index.search(TEXTS[0], k=2, cross_encoder=stub)
    assert len(stub.calls[0][0]) == len(TEXTS)  # max(2k, 20) candidates, capped at the index's size
    with pytest.raises(ValueError, match=r"rerank_k \(2\) must be at least k \(3\)"):
        index.search(TEXTS[0], k=3, cross_encoder=stub, rerank_k=2)
    with pytest.raises(ValueError, match="rerank_k applies only with a cross_encoder"):
        index.search(TEXTS[0], k=3, rerank_k=5)
    assert len(stub.calls) == 1  # refused before any scoring


def test_an_object_without_score_pairs_is_refused(index):
    with pytest.raises(TypeError, match="score_pairs"):
        index.search(TEXTS[0], cross_encoder=object())
    with pytest.raises(TypeError, match="must be a CrossEncoder .* score_pairs.*got int"):
        DuplicateIndex(cross_encoder=42)
    with pytest.raises(TypeError, match="score_pairs"):
        rerank_matches(object(), ["q"], [[{"text": "t", "score": 0.1}]])
    with pytest.raises(TypeError, match="score_pairs"):
        rerank_pairs(42, [])


def test_rerank_matches_checks_its_inputs():
    stub = StubCrossEncoder()
    with pytest.raises(ValueError, match="one list per query"):
        rerank_matches(stub, ["a", "b"], [[]])

    class Short(StubCrossEncoder):
        def score_pairs(self, texts_a, texts_b, **kwargs):
            return torch.zeros(len(texts_a) - 1)

    with pytest.raises(ValueError, match="returned 1 scores for 2 pairs"):
        rerank_matches(Short(), ["q"], [[{"text": "a", "score": 0.2}, {"text": "b", "score": 0.1}]])
    assert rerank_matches(stub, ["q"], [[]]) == [[]] and stub.calls == []  # nothing to score, no call


def test_a_calibrated_cross_encoder_gives_probabilities(index):
    stub = StubCrossEncoder(calibration={"method": "platt", "coef": 10.0, "intercept": -5.0})
    matches = index.search(TEXTS[4], k=3, cross_encoder=stub, rerank_k=8)
    expected = [1.0 / (1.0 + math.exp(-(10.0 * m["score"] - 5.0))) for m in matches]
    assert [m["probability"] for m in matches] == pytest.approx(expected, abs=1e-6)


def test_the_real_cross_encoder_reranks_by_its_own_scores(index, tiny_cross_encoder, tiny_cross_encoder_dir):
    with torch.no_grad():  # the random tiny model scores every pair about alike: spread its scores
        tiny_cross_encoder.model.classifier.weight.mul_(200.0)
    candidates = index.search(QUERIES, k=6)
    scores = [
        tiny_cross_encoder.score_pairs([q] * len(found), [m["text"] for m in found])
        for q, found in zip(QUERIES, candidates)
    ]
    values = torch.cat(scores).sort().values
    cut = int((values[1:] - values[:-1]).argmax())  # the threshold in the widest gap: no pair sits near it
    tiny_cross_encoder.config.threshold = float(values[cut] + values[cut + 1]) / 2
    results = index.search(QUERIES, k=4, cross_encoder=tiny_cross_encoder, rerank_k=6)
    for found, expected, matches in zip(candidates, scores, results):
        by_text = dict(zip((m["text"] for m in found), expected.tolist()))
        cosine = {m["text"]: m["score"] for m in found}
        assert [m["score"] for m in matches] == pytest.approx([by_text[m["text"]] for m in matches], abs=1e-5)
        assert [m["score"] for m in matches] == sorted(m["score"] for m in matches)[::-1]
        assert sorted(m["score"] for m in matches) == pytest.approx(sorted(expected.tolist())[-4:], abs=1e-5)
        assert [m["retrieval_score"] for m in matches] == pytest.approx([cosine[m["text"]] for m in matches])
        assert [m["is_duplicate"] for m in matches] == [
            m["score"] >= tiny_cross_encoder.config.threshold for m in matches
        ]
    # A folder is loaded (the saved tiny cross-encoder, unscaled and without a threshold).
    from_folder = index.search(QUERIES[0], k=4, cross_encoder=str(tiny_cross_encoder_dir), rerank_k=6)
    saved = CrossEncoder.from_pretrained(tiny_cross_encoder_dir)
    assert [m["score"] for m in from_folder] == pytest.approx(
        saved.rank(QUERIES[0], [m["text"] for m in from_folder]).tolist(), abs=1e-6
    )
    assert "is_duplicate" not in from_folder[0]


def test_an_index_keeps_a_default_reranker_but_does_not_save_it(tiny_lstm, word_tokenizer, tmp_path):
    stub = StubCrossEncoder(threshold=0.5)
    index = DuplicateIndex.build(TEXTS, tiny_lstm, word_tokenizer, cross_encoder=stub)
    assert index.search(TEXTS[2], k=2, rerank_k=8) == index.search(TEXTS[2], k=2, cross_encoder=stub, rerank_k=8)
    assert "retrieval_score" in index.search(TEXTS[2], k=2)[0]
    index.save(tmp_path / "index")
    assert "cross_encoder" not in json.loads((tmp_path / "index" / "index_config.json").read_text())
    loaded = DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer)
    assert loaded.cross_encoder is None and "retrieval_score" not in loaded.search(TEXTS[2], k=2)[0]
    again = DuplicateIndex.load(tmp_path / "index", tiny_lstm, word_tokenizer, cross_encoder=stub)
    assert again.search(TEXTS[2], k=2, rerank_k=8) == index.search(TEXTS[2], k=2, rerank_k=8)


def expected_pairs(threshold: float) -> list[tuple[int, int, float]]:
    """Every pair (i, j), i before j, whose stub score reaches `threshold`, best first: what mining all pairs must give."""
    pairs = [(i, j, stub_score(TEXTS[i], TEXTS[j])) for i, j in itertools.combinations(range(len(TEXTS)), 2)]
    return sorted((p for p in pairs if p[2] >= threshold), key=lambda p: -p[2])


def test_find_duplicates_with_a_cross_encoder(index):
    stub = StubCrossEncoder(threshold=0.6)
    everything = -1.0  # as candidates, every pair (k = len - 1 is exhaustive)
    found = index.find_duplicates(k=len(TEXTS) - 1, cross_encoder=stub, candidate_threshold=everything)
    expected = expected_pairs(0.6)
    assert expected and len(expected) < len(TEXTS) * (len(TEXTS) - 1) // 2  # the cross-encoder's threshold decides
    assert [(p["id_a"], p["id_b"]) for p in found] == [(i, j) for i, j, _ in expected]
    assert [p["score"] for p in found] == pytest.approx([s for _, _, s in expected])
    cosines = {(p["id_a"], p["id_b"]): p["score"] for p in index.find_duplicates(everything, k=len(TEXTS) - 1)}
    assert [p["retrieval_score"] for p in found] == pytest.approx([cosines[(p["id_a"], p["id_b"])] for p in found])
    assert len(stub.calls) == 1 and len(stub.calls[0][0]) == len(cosines)  # all candidates in one call

    stricter = index.find_duplicates(0.8, k=len(TEXTS) - 1, cross_encoder=stub, candidate_threshold=everything)
    assert [(p["id_a"], p["id_b"]) for p in stricter] == [(i, j) for i, j, _ in expected_pairs(0.8)]

    # By default the candidates are the bi-encoder's own duplicates (cosine >= the index's threshold, 0.0).
    bi_encoder = {(p["id_a"], p["id_b"]) for p in index.find_duplicates(k=len(TEXTS) - 1)}
    default = index.find_duplicates(k=len(TEXTS) - 1, cross_encoder=stub)
    assert {(p["id_a"], p["id_b"]) for p in default} == {(i, j) for i, j, _ in expected if (i, j) in bi_encoder}


def test_find_duplicates_thresholds_with_a_cross_encoder(index):
    calibration = {"method": "platt", "coef": 10.0, "intercept": -5.0}
    stub = StubCrossEncoder(calibration=calibration)
    with pytest.raises(ValueError, match="no threshold to decide pairs with the cross-encoder"):
        index.find_duplicates(cross_encoder=stub)
    assert stub.calls == []
    # P(duplicate) >= 0.9 is score >= (logit(0.9) + 5) / 10 = 0.7197...
    found = index.find_duplicates(
        k=len(TEXTS) - 1, cross_encoder=stub, candidate_threshold=-1.0, probability_threshold=0.9
    )
    assert [(p["id_a"], p["id_b"]) for p in found] == [(i, j) for i, j, _ in expected_pairs((math.log(9) + 5) / 10)]
    assert all(p["probability"] >= 0.9 for p in found)
    with pytest.raises(ValueError, match="candidate_threshold applies only with a cross_encoder"):
        index.find_duplicates(candidate_threshold=0.2)
    no_cosine_threshold = DuplicateIndex.build(TEXTS, index.model, index.tokenizer)
    with pytest.raises(ValueError, match="no cosine threshold for the bi-encoder's candidate pairs"):
        no_cosine_threshold.find_duplicates(0.5, cross_encoder=stub)


def test_the_app_reranks_and_decides_with_the_cross_encoder(index, tiny_cross_encoder):
    stub = StubCrossEncoder(threshold=0.95)
    app = DuplicateSearch(index.model, index, k=3, cross_encoder=stub, rerank_k=8)
    verdict, table = app.search(TEXTS[4])
    assert verdict.startswith("**Already asked**") and "threshold 0.950" in verdict
    header, _, first, second, _ = table.splitlines()
    assert header.startswith("| # | score | cosine | duplicate |")
    assert TEXTS[4] in first and first.startswith("| 1 | 1.000 |") and "| yes |" in first
    assert f"| 2 | {stub_score(TEXTS[4], TEXTS[0]):.3f} |" in second and "| no |" in second  # the stub's favourite
    with pytest.raises(ValueError, match="at least k"):
        DuplicateSearch(index.model, index, k=3, cross_encoder=stub, rerank_k=2)

    tiny_cross_encoder.config.threshold = 0.5
    pair_app = DuplicateSearch(index.model, index, k=3, cross_encoder=tiny_cross_encoder)
    score = float(tiny_cross_encoder.score_pairs([TEXTS[0]], [TEXTS[1]])[0])
    verdict = pair_app.check_pair(TEXTS[0], TEXTS[1])
    assert f"score {score:.3f}" in verdict and "threshold 0.500" in verdict
    assert verdict.startswith("**Duplicates**" if score >= 0.5 else "**Not duplicates**")


def test_the_app_from_its_flags(tmp_path, tiny_lstm, word_tokenizer, tiny_cross_encoder_dir):
    import gradio as gr

    from hfsiamese.cli.app_page import AppArguments, app_from_arguments

    tiny_lstm.save_pretrained(tmp_path / "model")
    word_tokenizer.save_pretrained(tmp_path / "model")
    corpus = tmp_path / "questions.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    flags = {"model_name_or_path": str(tmp_path / "model"), "corpus": str(corpus), "k": 3}

    def page(**more):
        blocks = app_from_arguments(AppArguments(**flags, **more))
        return " ".join(block.value or "" for block in blocks.blocks.values() if isinstance(block, gr.Markdown))

    assert f"reranked by `{tiny_cross_encoder_dir}`" in page(cross_encoder=str(tiny_cross_encoder_dir))
    refused = page(cross_encoder=str(tmp_path / "model"))  # a bi-encoder given as the cross-encoder
    assert "Could not load" in refused and "no cross-encoder" in refused
    # a rerank_k below k is refused with the flags, before the index is built (the page once showed it as its error)
    with pytest.raises(ValueError, match=r"rerank_k \(2\) must be at least k \(3\)"):
        page(cross_encoder=str(tiny_cross_encoder_dir), rerank_k=2)
