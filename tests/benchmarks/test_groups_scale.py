"""benchmarks/search/groups_scale.py at a tiny size: every stage runs in its own process, the held-out questions are
assigned one call each, and `--reuse_index` keeps the work folder's index instead of building it again."""

from __future__ import annotations

import json
import sys

from benchmarks.common import harness
from tests.helpers import run_offline

SCRIPT = harness.REPO / "benchmarks" / "search" / "groups_scale.py"


def test_groups_then_assignment_then_a_reused_index(tmp_path):
    args = [sys.executable, str(SCRIPT), "--num_texts", "600", "--num_sources", "60", "--num_assign", "20"]
    args += [
        "--guard",
        "mean",
        "--community_timeout",
        "0",
        "--workdir",
        str(tmp_path / "work"),
        "--output_dir",
        str(tmp_path / "out"),
    ]
    result = run_offline(args, cwd=tmp_path, OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {row["stage"]: row for row in map(json.loads, (s for s in result.stdout.splitlines() if s.startswith("{")))}
    assert list(rows) == ["index", "groups mean", "assign"]
    assert rows["index"]["num_texts"] == 580  # 20 held out for the assign stage
    assign = rows["assign"]
    assert assign["index_size"] == 580 and assign["questions"] == 19  # the first call is set-up, not timed
    assert 0 < assign["p50_ms"] <= assign["p99_ms"] and 0 <= assign["joined_a_group"] <= 1
    assert 0 <= rows["groups mean"]["f1"] <= 1 and rows["groups mean"]["largest_group"] >= 2
    again = run_offline([*args, "--reuse_index"], cwd=tmp_path, OMP_NUM_THREADS="1")
    assert again.returncode == 0, again.stderr[-3000:]
    stages = [json.loads(s)["stage"] for s in again.stdout.splitlines() if s.startswith("{")]
    assert stages == ["groups mean", "assign"]  # the index of the first run, not built again
