"""benchmarks/search/hybrid_retrieval.py on a tiny model: it runs, and the weighted fusion at lexical_weight 0 is the
dense search exactly (the figure `hfsiamese evaluate --retrieval` reports), so the hybrid path ranks as evaluate does."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.common import harness
from hfsiamese.data import load_pairs
from hfsiamese.evaluation import question_corpus
from tests.benchmarks import save_tiny_lstm
from tests.helpers import run_offline

SCRIPT = harness.REPO / "benchmarks" / "search" / "hybrid_retrieval.py"


@pytest.mark.slow
def test_a_markdown_row_and_weighted_at_zero_is_dense(tmp_path):
    questions, _ = question_corpus(load_pairs(str(harness.EMBEDDED_PAIRS)).select(range(300)))
    save_tiny_lstm(questions, tmp_path / "model")
    args = [sys.executable, str(SCRIPT), "--model_name_or_path", str(tmp_path / "model")]
    args += ["--test_file", str(harness.EMBEDDED_PAIRS), "--num_pairs", "300", "--lexical_weight", "0"]
    result = run_offline(args, cwd=tmp_path, OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {row["method"]: row for row in map(json.loads, result.stdout.splitlines()[:3])}
    assert set(rows) == {"dense", "rrf", "weighted"}
    for name in ("mrr@10", "recall@10", "ndcg@10"):
        assert rows["weighted"][name] == rows["dense"][name]
    *_, header, rule, row = result.stdout.splitlines()
    assert rule.startswith("|---|")
    assert header.startswith("| date | machine | command |") and row.count("|") == header.count("|")
    assert f"| {rows['dense']['mrr@10']:.4f} | {rows['rrf']['mrr@10']:.4f} (60) | " in row
