"""benchmarks/training/multiprocess_runs.py: a 2-process CPU launch that checkpoints and evaluates exits cleanly,
and its output folder is what one process would have written (test_recipes.py covers a plain launch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

SCRIPT = REPO_ROOT / "benchmarks" / "training" / "multiprocess_runs.py"


def test_one_two_process_run_is_clean(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "1", "--num_processes", "2"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["failures"] == {}, report
    assert result.returncode == 0 and report["runs"] == report["clean_exits"] == 1


def test_unclean_runs_are_reported(tmp_path):
    """The script's checks can fail: a flag the recipe refuses makes the launch exit non-zero."""
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", "1", "--", "--no_such_flag", "1"],
        cwd=tmp_path, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.returncode == 1 and report["clean_exits"] == 0
    assert "exit status" in report["failures"]["0"][0]
