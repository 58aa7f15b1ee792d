"""Two CPU processes training on two data sets: at every step both draw their batch from the same data set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.helpers import accelerate_launch, retry_teardown_abort

WORKER = Path(__file__).with_name("multi_dataset_worker.py")
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_both_processes_draw_one_data_set_per_step(tmp_path):
    env = {**os.environ, "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1", "HF_DATASETS_OFFLINE": "1"}

    def launch() -> subprocess.CompletedProcess:
        for stale in tmp_path.iterdir():  # a second try starts from an empty folder
            shutil.rmtree(stale) if stale.is_dir() else stale.unlink()
        command = [*accelerate_launch(2), str(WORKER), str(tmp_path)]  # a free port each time
        return subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=240)

    result = retry_teardown_abort(launch, "several-data-sets")
    assert result.returncode == 0, result.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    assert [rank["world_size"] for rank in ranks] == [2, 2]
    first, second = (rank["batches"] for rank in ranks)
    assert len(first) == len(second) == 5
    assert [batch["datasets"] for batch in first] == [batch["datasets"] for batch in second]
    assert all(len(batch["datasets"]) == 1 for batch in first)  # no batch mixes data sets
    assert {batch["datasets"][0] for batch in first} == {0, 1}  # both data sets trained
    for batch in first + second:  # group-aware inside each data set
        assert len(set(batch["groups"])) == len(batch["groups"])
