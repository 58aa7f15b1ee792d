"""The table of `search_scale.py`: one row per configuration, beside the index's own measurement of itself.

The `faiss-auto*` rows carry what issue 37 asks to read off one run: the settings the index chose and the recall it
measured on its own corpus (`index.recall_report`) beside the recall against the exact truth of the held-out
queries, and the build time with tuning beside the same settings built without it (`build_untuned`).
"""

from __future__ import annotations

from typing import Any

from benchmarks.common.harness import machine, markdown_table, today

HEADING = "## Duplicate search at scale, per model and corpus (`search_scale.py`)"
COLUMNS = (
    "date", "machine", "model", "dim", "corpus", "texts", "config", "encode s (texts/s)",
    "build s (untuned: tuning's share)", "disk MiB (index / embeddings / texts)", "FAISS MiB in memory",
    "settings: own recall@10, own p99 ms (no encoding)", "search peak RSS MiB", "recall@10 vs exact", "same top-10",
    "p50 ms", "p99 ms", "find_duplicates s (pairs)",
)  # fmt: skip
HEADER = markdown_table(COLUMNS, [])[0]
SECTION = f"""{HEADING}

Issue 37: the scale benchmark per model (the LSTM recipe's, a static student, MiniLM) and per corpus
(`--corpus recombined`: real QQP questions topped up with recombinations; `near_copies`: real questions and dense
clusters of seeded near-copies of them), 200 real questions held out as queries. "own recall@10" is what the FAISS
index measured on 300 rows of its own corpus and 300 between-row queries when it was built
(`index.recall_report`); "recall@10 vs exact" is the share of the exact float32 top 10 of the held-out queries
that `index.search` returned, ties counted as found (query encoding in the latency). "untuned" is the same chosen settings built with `recall_target=None` (nothing tuned or measured).

{HEADER}
|{"---|" * len(COLUMNS)}
"""


def build_cell(build: dict[str, Any], untuned: dict[str, Any] | None) -> str:
    """`412 (398: +3.5%)`: the build with tuning, and without it where it was run."""
    if untuned is None:
        return f"{build['seconds']:.1f}"
    share = (build["seconds"] - untuned["seconds"]) / max(untuned["seconds"], 1e-9)
    return f"{build['seconds']:.1f} ({untuned['seconds']:.1f}: {share:+.1%})"


def measured_cell(build: dict[str, Any]) -> str:
    """`int8 codes in 4096 IVF lists (256 probed), 8x rescoring: 0.962, 1.9 ms (tuned)`, or – without FAISS."""
    if "settings" not in build:
        return "–"
    p99 = "–" if build.get("own_p99_ms") is None else f"{build['own_p99_ms']:.1f}"
    tuned = " (tuned)" if build.get("tuned") else ""
    return f"{build['settings']}: {build['own_recall']:.3f}, {p99}{tuned}"


def row_cells(args: Any, encode: dict[str, Any], config: str, stages: dict[str, dict[str, Any]]) -> list[str]:
    """The cells of one configuration's row."""
    build, search, mine = stages["build"], stages["search"], stages.get("mine")
    faiss = "–" if build.get("faiss_mib") is None else f"{build['faiss_mib']:.0f}"
    disk = f"{build['disk_index_mib']:.0f} / {build['disk_embeddings_mib']:.0f} / {build['disk_texts_mib']:.0f}"
    mined = f"{mine['seconds']:.0f} ({mine['pairs']:,})" if mine else "–"
    return [today(), machine(), args.model_name_or_path, str(encode.get("dim", "")), args.corpus,
            f"{args.num_texts:,}", f"`{config}`", f"{encode['seconds']:.0f} ({encode['texts_per_s']:,})",
            build_cell(build, stages.get("build_untuned")), disk, faiss, measured_cell(build),
            f"{search['peak_rss_mib']:.0f}", f"{search['recall_at_k']:.4f}", f"{search['same_top_k']:.2f}",
            f"{search['p50_ms']:.1f}", f"{search['p99_ms']:.1f}", mined]  # fmt: skip


def table(args: Any, encode: dict[str, Any], results: dict[str, dict[str, dict[str, Any]]]) -> list[str]:
    """The markdown table: header, rule, one row per configuration (`[2:]`: the rows a notebook table takes)."""
    return markdown_table(COLUMNS, (row_cells(args, encode, c, stages) for c, stages in results.items()))


__all__ = ["COLUMNS", "HEADER", "HEADING", "SECTION", "build_cell", "measured_cell", "row_cells", "table"]
