"""A launch whose processes did not join one group stops before anything is trained or written."""

import pytest

from hfsiamese.utils.process_group import ProcessGroupError, check_process_group, launched_world_size
from tests.helpers import TRAIN, accelerate_launch, run_offline


def test_launcher_environment_against_the_joined_group():
    assert launched_world_size({}) == 1
    check_process_group(1, {})  # no launcher
    check_process_group(2, {"WORLD_SIZE": "2"})  # joined
    with pytest.raises(
        ProcessGroupError, match=r"started 2 processes .* runs alone as process 0 of 1 .* ACCELERATE_USE_CPU=1"
    ):
        check_process_group(1, {"WORLD_SIZE": "2"})
    with pytest.raises(ProcessGroupError, match="only 2 joined"):
        check_process_group(2, {"WORLD_SIZE": "4", "ACCELERATE_USE_CPU": "1"})


@pytest.mark.slow
def test_launch_whose_processes_do_not_join_stops_at_once(tmp_path, monkeypatch):
    """The README's multi-process command on a CPU machine without ACCELERATE_USE_CPU=1: two lone processes."""
    monkeypatch.delenv("ACCELERATE_USE_CPU", raising=False)
    out = tmp_path / "run"
    command = [*accelerate_launch(2), str(TRAIN), "--output_dir", str(out), "--max_steps", "2"]
    result = run_offline(command, cwd=tmp_path, timeout=300, CUDA_VISIBLE_DEVICES="")
    assert result.returncode != 0
    assert result.stderr.count("error: the launcher started 2 processes (WORLD_SIZE=2)") == 1  # printed once, by rank 0
    assert "set ACCELERATE_USE_CPU=1" in result.stderr
    assert not out.exists()  # nothing trained, nothing written
