"""A FAISS index measures its own recall against exact search, tunes "auto" to a target, and says when it falls short."""

from __future__ import annotations

import json
import logging
import warnings
from dataclasses import replace

import numpy as np
import pytest
import torch

from hfsiamese.models.siamese import SiameseConfig, SiameseModel
from hfsiamese.search import AnnSpec, DuplicateIndex
from hfsiamese.search.stores.ann_index import index_bytes
from hfsiamese.search.stores.recall_tuning import (
    RecallProbe,
    RecallReport,
    auto_ladder,
    check_recall_target,
    describe,
    fits,
    latencies_ms,
    tie_tolerance,
)

pytest.importorskip("faiss")

# Corpora of a few thousand rows stand in for millions: above this size "auto" leaves exact search and tunes.
SMALL = AnnSpec(exact_up_to=1000)


@pytest.fixture(scope="module")
def models(word_tokenizer_module):
    """Untrained static models of each dimension the tests use (the embeddings are given, never encoded)."""
    made = {}
    for dim in (32, 256, 384):
        config = SiameseConfig(
            encoder_type="static", vocab_size=len(word_tokenizer_module), embedding_dim=dim, pad_token_id=0
        )
        made[dim] = (SiameseModel(config), word_tokenizer_module)
    return made


@pytest.fixture(scope="module")
def word_tokenizer_module():
    from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
    from tests.conftest import TEXTS

    return train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)


def near_copies(dim, topics, per_topic, copies, *, offset=0.0, topic_noise=0.5, copy_noise=0.2, seed=0):
    """L2-normalised rows: topics, questions around each topic, near-copies of each question (a dropped word, a
    swapped pair). `offset`: a direction every row shares (an anisotropic model, whose sign bits barely vary)."""
    rng = np.random.default_rng(seed)
    shared = offset * np.where(rng.random(dim) < 0.5, -1.0, 1.0)
    centres = rng.standard_normal((topics, dim))
    questions = np.repeat(centres, per_topic, axis=0) + topic_noise * rng.standard_normal((topics * per_topic, dim))
    rows = np.repeat(questions, copies, axis=0) + copy_noise * rng.standard_normal((len(questions) * copies, dim))
    rows = shared + rows[rng.permutation(len(rows))]
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def dense_clusters_256(seed=0):
    """Binary codes fail here: 256 dimensions sharing one strong direction, in dense clusters of near-copies."""
    return near_copies(256, 20, 50, 5, offset=2.5, seed=seed)


def separated_384(seed=0):
    """Binary codes suffice here: 384 dimensions, 400 well-separated clusters of 12 near-copies (each row's top 10
    are near-copies of it, none the nearest of the unrelated rows, which no code ranks)."""
    return near_copies(384, 400, 1, 12, topic_noise=0.0, copy_noise=0.3, seed=seed)


def index_of(vectors, models, **options) -> DuplicateIndex:
    model, tokenizer = models[vectors.shape[1]]
    index = DuplicateIndex(model, tokenizer, store="faiss", **options)
    index.add_embeddings([f"text {i}" for i in range(len(vectors))], vectors)
    return index


def held_out_recall(index: DuplicateIndex, vectors: np.ndarray, k: int = 10) -> float:
    """Recall@k measured independently of the index's own probe: other rows as queries, each row's own match dropped."""
    rows = np.random.default_rng(123).choice(len(vectors), 200, replace=False)
    queries = torch.from_numpy(vectors[rows])
    exact = torch.from_numpy(vectors) @ queries.T
    exact[rows, torch.arange(len(rows))] = -torch.inf
    want = exact.T.topk(k, dim=1)
    _, found = index.search_embeddings(queries, k + 1)
    hits = 0
    for row, found_rows, scores in zip(rows, found.tolist(), want.values):
        found_rows = [r for r in found_rows if r != row][:k]
        found_scores = vectors[found_rows] @ vectors[row]
        hits += int((found_scores >= scores[-1].item() - 1e-6).sum())
    return hits / (len(rows) * k)


def test_binary_codes_that_lose_neighbours_are_measured_and_int8_codes_chosen(models, caplog):
    vectors = dense_clusters_256()
    with caplog.at_level(logging.INFO, logger="hfsiamese.search.duplicate_index"), warnings.catch_warnings():
        warnings.simplefilter("error")  # "auto" reaches its target: nothing to warn about
        index = index_of(vectors, models, ann=SMALL)
        index.search_embeddings(torch.from_numpy(vectors[:1]), k=1)  # builds, tunes and measures
    report = index.recall_report
    # Binary codes searched exhaustively at the deepest rescoring fall short: the IVF lists are never built.
    (screen,) = [trial for trial in report.trials if trial["settings"].startswith("binary")]
    assert screen["settings"] == "binary codes searched exhaustively, 32x rescoring" and screen["recall"] < 0.8
    assert screen["screened_out"].startswith("binary codes in 128 IVF lists")
    assert index._ann.spec.quantization == "int8" and report.settings == describe(index._ann.spec)
    assert report.tuned and report.recall == report.trials[-1]["recall"] >= 0.95 and report.meets_target
    assert (report.k, report.num_queries, report.num_texts, report.target) == (10, 600, len(vectors), 0.95)
    assert 0 < report.p50_ms <= report.p99_ms and 20 <= report.timed_queries <= 600
    assert held_out_recall(index, vectors) >= 0.95
    lines = [record.getMessage() for record in caplog.records if "recall@10" in record.getMessage()]
    assert len(lines) == 1 and "int8 codes" in lines[0] and "(target 0.95)" in lines[0]


def test_low_dimensional_embeddings_never_try_binary_codes(models):
    vectors = near_copies(32, 5, 100, 10, copy_noise=0.1)
    index = index_of(vectors, models, ann=SMALL)
    index._ensure_ann()
    report = index.recall_report
    assert not any(trial["settings"].startswith("binary") for trial in report.trials)
    assert index._ann.spec.quantization == "int8" and report.recall >= 0.95
    assert held_out_recall(index, vectors) >= 0.95


def test_codes_that_find_corpus_rows_but_not_between_row_queries_are_refused(models):
    # Dense clusters of near-copies sharing one direction: deeper rescoring of binary codes finds every corpus row's
    # neighbours, not those of a query between two rows (the LSTM recipe over 1.2M QQP near-copies: 0.99 for corpus
    # rows, 0.80 for held-out real questions with these settings; recall_tuning's docstring).
    corpus = near_copies(256, 20, 50, 5, offset=1.5, copy_noise=0.1)
    index = index_of(corpus, models, ann=SMALL)
    index._ensure_ann()
    report = index.recall_report
    deep_binary = report.trials[0]  # binary codes, 32x rescoring: every corpus row's neighbours found
    assert (
        deep_binary["settings"] == "binary codes searched exhaustively, 32x rescoring" and deep_binary["screened_out"]
    )
    assert deep_binary["recall_rows"] >= 0.95 > 0.8 > deep_binary["recall_between"] == deep_binary["recall_sample"]
    assert deep_binary["recall"] < deep_binary["recall_sample"]  # the lower confidence bound of the lower kind
    assert index._ann.spec.quantization == "int8" and min(report.recall_rows, report.recall_between) >= 0.95
    assert "for corpus rows" in report.summary() and "between rows" in report.summary()


def corpus_and_new_questions(dim=256, topics=20, per_topic=50, copies=5, new=200, seed=0):
    """A corpus of near-copy clusters (as `near_copies`, sharing one direction) and `new` questions none of whose
    copies are stored: asked for the first time, their nearest rows are topic-mates, not near-copies of themselves."""
    rng = np.random.default_rng(seed)
    shared = 1.5 * np.where(rng.random(dim) < 0.5, -1.0, 1.0)
    centres = rng.standard_normal((topics, dim))
    questions = np.repeat(centres, per_topic, axis=0) + 0.5 * rng.standard_normal((topics * per_topic, dim))
    held = rng.choice(len(questions), new, replace=False)

    def copies_of(chosen, count):
        rows = shared + np.repeat(chosen, count, axis=0) + 0.1 * rng.standard_normal((len(chosen) * count, dim))
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)

    corpus = copies_of(np.delete(questions, held, axis=0), copies)
    return corpus[rng.permutation(len(corpus))], copies_of(questions[held], 1)


def new_question_recall(index: DuplicateIndex, corpus: np.ndarray, queries: np.ndarray, k: int = 10) -> float:
    """Recall@k of questions the corpus does not hold, against exact search (ties at the k-th score count)."""
    kth = (torch.from_numpy(queries) @ torch.from_numpy(corpus).T).topk(k, dim=1).values[:, -1]
    _, found = index.search_embeddings(torch.from_numpy(queries), k)
    hits = 0
    for query, rows, floor in zip(queries, found.tolist(), kth.tolist()):
        rows = [row for row in rows if row >= 0]
        hits += int((corpus[rows] @ query >= floor - 1e-6).sum())
    return hits / (len(queries) * k)


def test_the_reported_recall_is_a_lower_bound_that_new_questions_reach(models):
    corpus, new = corpus_and_new_questions()
    # Lists probed one at a time: corpus rows find their near-copies in their own list, new questions do not.
    with pytest.warns(UserWarning, match="below the recall target"):
        weak = index_of(corpus, models, ann=replace(SMALL, quantization="int8", structure="ivf", nprobe=1))
        weak._ensure_ann()
    report, reached = weak.recall_report, new_question_recall(weak, corpus, new)
    assert report.recall_rows > reached + 0.03  # measured on corpus rows alone, the recall would overstate
    assert report.confidence == 0.95 and report.recall < report.recall_sample
    assert report.recall <= reached
    # "auto" tunes until the bound, not the sample's figure, reaches the target; new questions reach it too.
    tuned = index_of(corpus, models, ann=SMALL)
    tuned._ensure_ann()
    report = tuned.recall_report
    assert report.recall < report.recall_sample and 0.95 <= report.recall <= new_question_recall(tuned, corpus, new)
    assert "at 95% confidence" in report.summary()


def test_the_lower_bound_is_wilson_s_and_tighter_with_more_queries():
    from scipy.stats import binomtest

    from hfsiamese.search.stores.recall_tuning import recall_lower_bound

    for hits, n in ((50, 100), (290, 300), (300, 300), (3, 10)):
        # a one-sided 95% bound is the low end of a two-sided 90% interval
        assert recall_lower_bound(hits / n, n) == pytest.approx(binomtest(hits, n).proportion_ci(0.9, "wilson").low)
    assert recall_lower_bound(0.97, 300) < recall_lower_bound(0.97, 3000) < 0.97
    assert recall_lower_bound(1.0, 1) < 0.3 and recall_lower_bound(0.5, 0) == 0.0


def test_recall_is_the_lower_of_corpus_rows_and_between_row_queries():
    table = np.eye(4, dtype=np.float32)

    def gather(rows):
        return table[rows]

    between = (table[0] + table[1]) / np.sqrt(2)  # a query that is no row: nothing of its own left out
    probe = RecallProbe(np.array([2, -1]), np.stack([table[2], between]), np.array([[3], [0]]), gather)
    assert probe.num_rows == 1
    assert probe.recall_by_kind(np.array([[2, 3], [0, 3]])) == {"rows": 1.0, "between": 1.0}
    assert probe.recall_by_kind(np.array([[2, 3], [3, 2]])) == {"rows": 1.0, "between": 0.0}
    assert probe.recall(np.array([[2, 3], [1, 3]])) == 1.0  # row 1 ties with row 0 for the between query
    assert probe.recall(np.array([[3, 2], [2, 3]])) == 0.0
    old = RecallReport.from_dict({"recall": 0.97, "num_queries": 300, "settings": "binary codes"})  # measured rows only
    assert old.recall_rows is None and old.recall_between is None and "between rows" not in old.summary()


def test_binary_codes_are_chosen_where_they_suffice(models):
    vectors = separated_384()
    index = index_of(vectors, models, ann=SMALL)
    index._ensure_ann()
    report = index.recall_report
    assert (index._ann.spec.quantization, index._ann.spec.structure) == ("binary", "ivf")
    assert (
        len(report.trials) == 1
        and report.recall >= 0.95
        and report.reason == "auto: the first setting tried reached 0.95"
    )
    assert held_out_recall(index, vectors) >= 0.95


def test_small_corpora_keep_exact_search_unmeasured(models):
    vectors = separated_384()[:500]
    index = index_of(vectors, models)  # fewer texts than AnnSpec.exact_up_to: exact float32
    index._ensure_ann()
    report = index.recall_report
    assert index._ann.spec.is_exact and report.recall == 1.0 and not report.measured and report.p99_ms is None
    assert "exact float32 search up to 200000 texts" in report.reason


def test_an_explicit_setting_below_the_target_is_kept_and_warned_about(tmp_path, models):
    vectors = dense_clusters_256()
    index = index_of(vectors, models, quantization="binary", structure="flat", rescore_multiplier=2)
    with pytest.warns(UserWarning, match=r"finds 0\.\d+ of the exact top 10 .*below the recall target 0\.95"):
        index._ensure_ann()  # built (and measured) at its first need
    assert (index._ann.spec.quantization, index._ann.spec.structure) == ("binary", "flat")
    assert not index.recall_report.tuned and index.recall_report.recall < 0.8 and not index.recall_report.meets_target
    index.save(tmp_path)
    with pytest.warns(UserWarning, match=r"below recall_target=0\.9: index\.rebuild_ann\(\) tunes it"):
        DuplicateIndex.load(tmp_path, *models[256], recall_target=0.9)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        wide = index_of(vectors, models, quantization="int8", structure="flat")  # reaches the target: no warning
        wide._ensure_ann()
        assert wide.recall_report.recall >= 0.95
        unmeasured = index_of(vectors, models, quantization="binary", structure="flat", recall_target=None)
        unmeasured._ensure_ann()
        assert unmeasured.recall_report is None
        loaded = DuplicateIndex.load(tmp_path, *models[256])  # warned when built, against the target it keeps
        assert loaded.recall_target == 0.95 and loaded.recall_report == index.recall_report
        reached = index.recall_report.recall  # the target it was measured to reach: no warning
        assert DuplicateIndex.load(tmp_path, *models[256], recall_target=reached).recall_target == reached


def test_the_figures_survive_save_and_load(tmp_path, models):
    vectors = separated_384()
    index = index_of(vectors, models, ann=SMALL)
    index.save(tmp_path / "index")
    config = json.loads((tmp_path / "index" / "index_config.json").read_text())
    assert config["recall"]["recall"] == index.recall_report.recall and config["ann_asked"]["exact_up_to"] == 1000

    loaded = DuplicateIndex.load(tmp_path / "index", *models[384])
    assert loaded.recall_report == index.recall_report and loaded._ann.spec == index._ann.spec
    assert loaded.ann_spec == SMALL and loaded.recall_target == 0.95  # a rebuild tunes again, from what was asked
    loaded.delete([0])
    assert loaded.recall_report is None  # the FAISS index is rebuilt (and tuned, and measured) at its next need
    loaded.search_embeddings(torch.from_numpy(vectors[1:2]), k=1)
    assert loaded.recall_report.tuned and loaded.recall_report.num_texts == len(vectors) - 1

    # An index saved before indexes measured themselves loads, searches, and can be measured on request.
    for key in ("recall", "ann_asked"):
        config.pop(key)
    (tmp_path / "index" / "index_config.json").write_text(json.dumps(config))
    older = DuplicateIndex.load(tmp_path / "index", *models[384])
    assert older.recall_report is None and older._ann.spec == index._ann.spec
    assert older.search_embeddings(torch.from_numpy(vectors[7:8]), k=1)[1].item() == 7
    assert older.ann_spec == older._ann.spec  # its saved settings: what a rebuild would use
    measured = older.measure_recall()
    assert measured.recall == index.recall_report.recall and measured.num_queries == 600
    older.save(tmp_path / "again")
    assert DuplicateIndex.load(tmp_path / "again", *models[384]).recall_report == measured

    config["recall"] = "0.97"
    (tmp_path / "index" / "index_config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="damaged 'recall' entry"):
        DuplicateIndex.load(tmp_path / "index", *models[384])


def test_a_large_add_is_measured_again_and_a_rebuild_tunes_again(models):
    vectors = separated_384()
    index = index_of(vectors, models, ann=SMALL)
    index._ensure_ann()
    assert index._ann.spec.quantization == "binary"
    drifted = near_copies(384, 20, 50, 5, offset=2.5, seed=1)  # rows whose sign bits barely vary
    index.add_embeddings([f"new {i}" for i in range(1000)], drifted[:1000], ids=range(4800, 5800))
    assert index.recall_report.num_texts == 4800  # 21% more rows: not measured again
    with pytest.warns(
        UserWarning, match=r"below the recall target 0\.95, after growing from 4800 to 7800 texts.*rebuild_ann"
    ):
        index.add_embeddings([f"more {i}" for i in range(2000)], drifted[1000:3000], ids=range(5800, 7800))
    report = index.recall_report
    assert (
        report.num_texts == 7800
        and report.recall < 0.95
        and report.reason.startswith("re-measured after the index grew")
    )

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rebuilt = index.rebuild_ann()
    assert rebuilt.meets_target and rebuilt.num_texts == 7800 and index._ann.spec.quantization == "int8"
    everything = np.concatenate([vectors, drifted[:3000]])
    assert held_out_recall(index, everything) >= 0.95


def test_latency_is_timed_query_by_query_within_a_budget():
    now = [0.0]  # a clock that only the fake search advances

    def search_taking(seconds):
        def search_one(query):
            assert query.shape == (1, 4)
            now[0] += seconds

        return search_one

    queries = np.zeros((300, 4), dtype=np.float32)
    assert latencies_ms(search_taking(0.001), queries, clock=lambda: now[0]) == (1.0, 1.0, 300)
    assert latencies_ms(search_taking(1.0), queries, clock=lambda: now[0]) == (1000.0, 1000.0, 20)  # 10 s: 20 kept


def test_the_ladder_starts_from_the_size_and_dimension_and_ends_exact():
    assert [c.build.is_exact for c in auto_ladder(AnnSpec(), 200_000, 384)] == [True]
    ladder = auto_ladder(AnnSpec(), 2_000_000, 384)
    builds = [(c.build.quantization, c.build.structure) for c in ladder]
    assert builds == [("binary", "ivf"), ("int8", "ivf"), ("int8", "hnsw"), ("int8", "flat"), ("none", "flat")]
    first = ladder[0].searches
    assert [(s.nprobe, s.rescore_multiplier) for s in first] == [(64, 8), (64, 32), (256, 32)]
    assert ladder[0].build.nlist == 4096 and ladder[0].build == first[0]
    assert describe(first[1]) == "binary codes in 4096 IVF lists (64 probed), 32x rescoring"
    graph = ladder[2].searches  # the graph's candidates kept wider first, then deeper rescoring
    assert [(s.ef_search, s.rescore_multiplier) for s in graph] == [(128, 8), (512, 8), (512, 32)]
    assert describe(graph[1]) == "int8 codes in an HNSW graph (M 32, ef 512), 8x rescoring"
    assert describe(ladder[3].searches[0]) == "int8 codes searched exhaustively, 8x rescoring"
    assert len(ladder[3].searches) == 2 and describe(ladder[4].build) == "float32 flat (exact)"
    assert [c.build.quantization for c in auto_ladder(AnnSpec(), 2_000_000, 128)] == ["int8"] * 3 + ["none"]
    few_lists = auto_ladder(AnnSpec(nlist=100, nprobe=64), 2_000_000, 384)[1].searches  # probing all 100 already
    assert [(s.nprobe, s.rescore_multiplier) for s in few_lists] == [(64, 8), (100, 8), (100, 32)]


def test_recall_counts_ties_and_leaves_each_query_own_row_out():
    e = np.eye(3, dtype=np.float32)
    table = np.stack([e[0], e[0], (e[0] + e[1]) / np.sqrt(2), e[2]])  # rows 0 and 1 are the same vector

    def gather(rows):
        return table[rows]

    probe = RecallProbe(np.array([2]), table[[2]], np.array([[0]]), gather)  # row 2's exact top 1: row 0 (tied with 1)
    assert probe.recall(np.array([[2, 1]])) == 1.0  # its own row skipped; row 1 ties with row 0
    assert probe.recall(np.array([[1, 2]])) == 1.0
    assert probe.recall(np.array([[2, 3]])) == 0.0 and probe.recall(np.array([[-1, -1]])) == 0.0
    twin = RecallProbe(np.array([0]), table[[0]], np.array([[1]]), gather)
    assert twin.recall(np.array([[0, 1]])) == 1.0 and twin.recall(np.array([[0, 2]])) == 0.0
    two = RecallProbe(np.array([2]), table[[2]], np.array([[0, 1]]), gather)
    assert two.recall(np.array([[2, 0, 3]])) == 0.5 and two.recall(np.array([[1, 0, 2]])) == 1.0


def test_rows_within_float32_rounding_of_the_kth_score_tie():
    # Near-copies whose embeddings differ in the last bits (the same words summed in another order): a search in
    # float32 may return any of them, and each must count as found, as an exact tie does.
    rng = np.random.default_rng(0)
    base = rng.normal(size=64)
    base /= np.linalg.norm(base)
    copies = base + rng.normal(scale=1e-8, size=(20, 64))  # 20 near-copies, scores a few 1e-8 apart
    far = base + rng.normal(scale=0.2, size=(1, 64))  # clearly below the 10th
    table = np.vstack([base, copies, far / np.linalg.norm(far)]).astype(np.float32)

    def gather(rows):
        return table[rows]

    scores = table[1:21].astype(np.float64) @ table[0].astype(np.float64)
    ranked = 1 + np.argsort(-scores)
    probe = RecallProbe(np.array([0]), table[[0]], ranked[None, :10], gather)
    assert probe.recall(np.concatenate([[0], ranked[10:]])[None, :]) == 1.0  # the other ten near-copies
    assert probe.recall(np.concatenate([[0, 21], ranked[11:]])[None, :]) == 0.9  # one clearly lower row: a miss
    assert tie_tolerance(384) < 3e-5


def test_recall_target_is_checked(models):
    assert check_recall_target(None) is None and check_recall_target(1) == 1.0
    for bad in (0, 1.5, "0.9", True):
        with pytest.raises(ValueError, match=r"recall_target must be a number in \(0, 1\]"):
            check_recall_target(bad)
    with pytest.raises(ValueError, match="recall_target must be"):
        DuplicateIndex(*models[32], store="faiss", recall_target=0)
    exact = index_of(separated_384()[:20], models)
    exact.store_name = "exact"
    with pytest.raises(ValueError, match='only a store="faiss" index'):
        exact.rebuild_ann()
    assert RecallReport.from_dict({"recall": 0.9, "extra": 1}).k == 10


def test_an_int8_hnsw_graph_is_chosen_where_ivf_lists_miss_neighbours(models):
    """Many IVF lists, few probed: a row's neighbours sit in lists it does not probe; the graph finds them."""
    vectors = dense_clusters_256()
    index = index_of(vectors, models, ann=AnnSpec(exact_up_to=1000, nlist=256, nprobe=1))
    index._ensure_ann()
    report, chosen = index.recall_report, index._ann.spec
    assert (chosen.quantization, chosen.structure) == ("int8", "hnsw") and report.meets_target
    ivf = [trial["recall"] for trial in report.trials if "IVF" in trial["settings"]]  # int8's: binary screened out
    assert report.trials[0].get("screened_out", "").startswith("binary codes in 256 IVF lists")
    assert len(ivf) == 3 and max(ivf) < 0.95 and report.trials[-1]["settings"] == report.settings
    assert held_out_recall(index, vectors) >= 0.95


def test_a_memory_budget_skips_the_settings_that_exceed_it(tmp_path, models):
    vectors = dense_clusters_256()
    spec = AnnSpec(exact_up_to=1000, nlist=256, nprobe=1)
    need = {s.build.structure + "/" + s.build.quantization: index_bytes(s.build, len(vectors), 256)
            for s in auto_ladder(spec, len(vectors), 256)}  # fmt: skip
    assert need["flat/int8"] < need["hnsw/int8"] < need["flat/none"]

    # The graph does not fit: int8 codes searched exhaustively instead.
    budget = need["hnsw/int8"] - 1
    index = index_of(vectors, models, ann=replace(spec, max_memory_bytes=budget))
    index._ensure_ann()
    assert (index._ann.spec.quantization, index._ann.spec.structure) == ("int8", "flat")
    assert index._ann.memory_bytes() <= budget and index.recall_report.meets_target
    assert not any("HNSW" in trial["settings"] for trial in index.recall_report.trials)
    index.save(tmp_path / "index")
    assert DuplicateIndex.load(tmp_path / "index", *models[256]).ann_spec.max_memory_bytes == budget

    # Only binary codes fit, and none reaches the target: the closest is kept, and the warning names the budget.
    only_binary = replace(spec, max_memory_bytes=need["ivf/binary"])
    index = index_of(vectors, models, ann=only_binary)
    with pytest.warns(
        UserWarning, match=rf"below the recall target 0\.95: raise max_memory_bytes \(now {need['ivf/binary']}\)"
    ):
        index._ensure_ann()
    report = index.recall_report
    assert index._ann.spec.quantization == "binary" and report.recall == max(t["recall"] for t in report.trials) < 0.95
    assert "within max_memory_bytes" in report.reason and report.settings == describe(index._ann.spec)

    # Nothing fits: one line naming the budget and the smallest need.
    with pytest.raises(
        ValueError,
        match=rf"max_memory_bytes=1000 is too small .* the smallest, binary codes in 256 IVF lists .*, needs {need['ivf/binary']} bytes$",
    ):
        index_of(vectors, models, ann=replace(spec, max_memory_bytes=1000))._ensure_ann()
    # Settings asked for beyond it are refused, measured or not.
    asked = AnnSpec(quantization="none", structure="flat", max_memory_bytes=10_000)
    for target in (0.95, None):
        exact = index_of(vectors, models, ann=asked, recall_target=target)
        with pytest.raises(
            ValueError, match=r"asked for \(float32 flat \(exact\)\) needs 5120000 bytes .*above max_memory_bytes=10000"
        ):
            exact._ensure_ann()
    untargeted = index_of(vectors, models, ann=replace(spec, max_memory_bytes=10_000), recall_target=None)
    with pytest.raises(ValueError, match=r"binary codes in 256 IVF lists .* set a recall_target to have settings"):
        untargeted._ensure_ann()  # "auto" without a target: the size-based choice, unmeasured, must fit too


def test_a_corpus_below_exact_up_to_whose_exact_index_exceeds_the_budget_is_tuned(models):
    vectors = separated_384()[:2000]  # fewer than exact_up_to: exact float32 unless the budget forbids it
    exact_need = index_bytes(AnnSpec(quantization="none", structure="flat"), len(vectors), 384)
    budget = AnnSpec(max_memory_bytes=exact_need // 2)
    assert not fits(AnnSpec(quantization="none", structure="flat", max_memory_bytes=exact_need // 2), 2000, 384)
    index = index_of(vectors, models, ann=budget)
    index._ensure_ann()
    assert not index._ann.spec.is_exact and index._ann.memory_bytes() <= exact_need // 2
    assert index.recall_report.tuned and index.recall_report.meets_target and index.recall_report.measured
