"""benchmarks/search/search_scale.py's corpora and table: near-copy clusters of real questions, the faiss-auto rows."""

from __future__ import annotations

from argparse import Namespace

import numpy as np

from benchmarks.common import harness
from benchmarks.search.make_pairs_file import real_questions
from benchmarks.search.scale_corpora import make_corpus, near_copy
from benchmarks.search.scale_rows import COLUMNS, HEADER, HEADING, SECTION, table

SOURCE = harness.EMBEDDED_PAIRS


def test_near_copies_are_distinct_clusters_of_the_real_questions_and_hold_the_queries_out():
    corpus, queries = make_corpus("near_copies", SOURCE, 30_000, 50, seed=0)
    real = {" ".join(words) for words in real_questions(SOURCE)}
    assert len(corpus) == len(set(corpus)) == 30_000 and not set(corpus) & set(queries)
    assert set(queries) <= real and len(queries) == 50
    kept_real = [text for text in corpus if text in real]
    assert len(kept_real) == len(real) - 50  # every real question but the queries, then its near-copies
    copies = corpus[len(kept_real) :]
    assert not set(copies) & real
    lengths = {text: len(text.split()) for text in kept_real}
    # A near-copy is within two edits of a real question: a word or two fewer, or as many words.
    assert np.mean([len(c.split()) for c in copies]) < np.mean(list(lengths.values())) + 0.5
    _, recombined_queries = make_corpus("recombined", SOURCE, 30_000, 50, seed=0)
    assert recombined_queries == queries  # the same held-out questions on both corpora
    assert make_corpus("near_copies", SOURCE, 30_000, 50, seed=0) == (corpus, queries)  # seeded


def test_a_near_copy_drops_swaps_or_replaces_a_word_or_two():
    rng = np.random.default_rng(0)
    question = ["how", "do", "i", "learn", "python", "quickly"]
    copies = [near_copy(question, rng, ["zebra"]) for _ in range(300)]
    assert all(len(question) - 2 <= len(copy) <= len(question) for copy in copies)
    assert all(set(copy) <= set(question) | {"zebra"} for copy in copies)
    replaced = [copy for copy in copies if "zebra" in copy]
    dropped = [copy for copy in copies if len(copy) < len(question)]
    swapped = [c for c in copies if sorted(c) == sorted(question) and c != question]  # the same words, reordered
    assert replaced and dropped and swapped and all(c.count("zebra") <= 2 for c in replaced)


def test_the_auto_rows_put_the_own_measurement_and_the_untuned_build_beside_the_truth(tmp_path):
    args = Namespace(model_name_or_path="outputs/lstm_qqp", corpus="near_copies", num_texts=1_000_000)
    encode = {"seconds": 300.0, "texts_per_s": 3333, "dim": 256}
    search = {"recall_at_k": 0.962, "same_top_k": 0.7, "p50_ms": 3.0, "p99_ms": 9.5, "peak_rss_mib": 900}
    build = {"seconds": 110.0, "faiss_mib": 260.0, "disk_index_mib": 260, "disk_embeddings_mib": 977,
             "disk_texts_mib": 60, "settings": "int8 codes in 4096 IVF lists (256 probed), 8x rescoring",
             "own_recall": 0.958, "own_p99_ms": 1.9, "tuned": True}  # fmt: skip
    exact_build = {"seconds": 5.0, "faiss_mib": None, "disk_index_mib": 0, "disk_embeddings_mib": 977,
                   "disk_texts_mib": 60}  # fmt: skip
    results = {
        "faiss-auto-tuned": {"build": build, "build_untuned": {"seconds": 100.0}, "search": search},
        "exact": {"build": exact_build, "search": search},
    }
    lines = table(args, encode, results)
    assert lines[0] == HEADER and len(lines) == 4 and all(line.count(" | ") == len(COLUMNS) - 1 for line in lines[2:])
    auto = lines[2].split(" | ")
    assert auto[COLUMNS.index("build s (untuned: tuning's share)")] == "110.0 (100.0: +10.0%)"
    own = "int8 codes in 4096 IVF lists (256 probed), 8x rescoring: 0.958, 1.9 (tuned)"
    assert auto[COLUMNS.index("settings: own recall@10, own p99 ms (no encoding)")] == own
    assert auto[COLUMNS.index("recall@10 vs exact")] == "0.9620" and auto[COLUMNS.index("corpus")] == "near_copies"
    exact = lines[3].split(" | ")
    assert exact[COLUMNS.index("build s (untuned: tuning's share)")] == "5.0" and "–" in exact

    readme = tmp_path / "README.md"
    readme.write_text("# Benchmarks\n\n## Duplicate search at scale (`search_scale.py`)\n\n| old | table |\n")
    harness.add_table_rows(HEADING, HEADER, lines[2:], SECTION, readme=readme)
    harness.add_table_rows(HEADING, HEADER, lines[3:], SECTION, readme=readme)  # a later run: same table
    text = readme.read_text()
    assert text.count(HEADER) == 1 and text.endswith(lines[2] + "\n" + lines[3] + "\n" + lines[3] + "\n")
    assert "| old | table |" in text
