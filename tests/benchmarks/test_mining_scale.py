"""benchmarks/training/mining_scale.py on tiny models: both `hfsiamese mine` runs happen, each with its own peak
memory, and the rescored run scores candidates the plain one only ranks (a threshold of 0 would drop them all)."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.common import harness
from hfsiamese.data import load_pairs
from hfsiamese.evaluation import question_corpus
from tests.benchmarks import save_tiny_lstm
from tests.helpers import run_offline

SCRIPT = harness.REPO / "benchmarks" / "training" / "mining_scale.py"


@pytest.mark.slow
def test_plain_and_rescored_runs_with_their_memory(tmp_path, tiny_cross_encoder_dir):
    questions, _ = question_corpus(load_pairs(str(harness.EMBEDDED_PAIRS)))
    save_tiny_lstm(questions, tmp_path / "model")  # the synthetic questions are recombinations of these words
    args = [
        sys.executable,
        str(SCRIPT),
        "--model_name_or_path",
        "model",
        "--cross_encoder",
        str(tiny_cross_encoder_dir),
    ]
    args += ["--num_pairs", "300", "--num_negatives", "3", "--max_rank", "5", "--output_dir", "out"]
    args += ["--cross_encoder_threshold", "0.5"]
    result = run_offline(args, cwd=tmp_path, OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "mining_scale.json").read_text())
    assert 250 < report["pairs"]["questions"] < 400
    plain, rescored = report["runs"]["plain"], report["runs"]["rescored"]
    assert plain["queries"] == rescored["queries"] > 50
    assert plain["negatives"] == 3 * plain["queries"]  # nothing vetted: every query gets its 3 from the top 5
    assert rescored["negatives"] <= plain["negatives"]
    for row in (plain, rescored):
        assert row["seconds"] > 0 and row["command_peak_rss_mib"] > 100  # the command's, not the stage's few MiB
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["mining_scale.json", "mining_scale.md"]
    assert "| rescored by " in (tmp_path / "out" / "mining_scale.md").read_text()
