"""benchmarks/search/groups_scale.py at a tiny size: every stage runs in its own process, the held-out questions are
assigned one call each, and `--reuse_index` keeps the work folder's index instead of building it again."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks.common import harness
from tests.helpers import run_offline

SCRIPT = harness.REPO / "benchmarks" / "search" / "groups_scale.py"


@pytest.mark.slow
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
    assert list(rows) == ["index", "groups mean", "assign mean"]
    assert rows["index"]["num_texts"] == 580  # 20 held out for the assign stage
    assign = rows["assign mean"]
    assert assign["index_size"] == 580 and assign["questions"] == 19  # the first call is set-up, not timed
    assert 0 < assign["p50_ms"] <= assign["p99_ms"] and 0 <= assign["joined_a_group"] <= 1
    assert 0 <= rows["groups mean"]["f1"] <= 1 and rows["groups mean"]["largest_group"] >= 2
    again = run_offline([*args, "--reuse_index"], cwd=tmp_path, OMP_NUM_THREADS="1")
    assert again.returncode == 0, again.stderr[-3000:]
    stages = [json.loads(s)["stage"] for s in again.stdout.splitlines() if s.startswith("{")]
    assert stages == ["groups mean", "assign mean"]  # the index of the first run, not built again


@pytest.mark.slow
def test_the_cross_encoder_guard_groups_within_its_budget_and_assigns_through_it(tmp_path, tiny_cross_encoder_dir):
    args = [sys.executable, str(SCRIPT), "--num_texts", "300", "--num_sources", "30", "--num_assign", "10"]
    args += ["--guard", "cross_encoder", "--cross_encoder", str(tiny_cross_encoder_dir)]
    args += ["--cross_encoder_threshold", "0.5", "--cross_encoder_budget", "50", "--check_size", "2"]
    args += ["--community_timeout", "0", "--workdir", str(tmp_path / "work"), "--output_dir", str(tmp_path / "out")]
    result = run_offline(args, cwd=tmp_path, OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = {row["stage"]: row for row in map(json.loads, (s for s in result.stdout.splitlines() if s.startswith("{")))}
    assert list(rows) == ["index", "groups cross_encoder", "assign cross_encoder"]
    assert 0 < rows["groups cross_encoder"]["cross_encoder_calls"] <= 15  # the budget: 50 per 1,000 of 290, rounded up
    assert rows["assign cross_encoder"]["questions"] == 9
    table = (tmp_path / "out" / "groups_scale.md").read_text()
    assert "groups cross_encoder" in table and "assign cross_encoder" in table


def test_the_cross_encoder_guard_without_a_cross_encoder_is_refused_before_anything_is_written(tmp_path):
    args = [sys.executable, str(SCRIPT), "--guard", "cross_encoder", "--workdir", str(tmp_path / "work")]
    result = run_offline(args, cwd=tmp_path)
    assert result.returncode == 2
    assert "--guard cross_encoder needs --cross_encoder" in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "work").exists()


def test_the_assigned_guards_are_the_default_one_and_the_cross_encoders():
    """The script names `find_groups`' default guard without importing hfsiamese: its starting process stays light."""
    from benchmarks.search import groups_scale
    from hfsiamese.search.groups.guards import DEFAULT_GUARD

    assert groups_scale.ASSIGNED_GUARDS == (DEFAULT_GUARD, "cross_encoder")
    code = f"import sys; sys.path.insert(0, {str(harness.REPO)!r}); import benchmarks.search.groups_scale; print(sorted(m for m in sys.modules if m.startswith(('hfsiamese', 'torch'))))"
    result = run_offline([sys.executable, "-c", code], cwd=harness.REPO)
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stderr[-2000:] or result.stdout
