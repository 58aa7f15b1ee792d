import os
import subprocess
import sys
import textwrap

import pytest

from hfsiamese.utils import cpu_threads
from hfsiamese.utils.cpu_threads import apply_cpu_threads, available_cores, choose_cpu_threads, threads_set_by_user


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("OMP_NUM_THREADS", "ACCELERATE_DYNAMO_BACKEND", "LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cpu_threads, "available_cores", lambda: 8)
    return monkeypatch


def test_no_variable_uses_every_core(clean_env):
    assert choose_cpu_threads().num_threads == 8


def test_cores_are_shared_by_local_processes(clean_env):
    clean_env.setenv("LOCAL_WORLD_SIZE", "4")
    choice = choose_cpu_threads()
    assert choice.num_threads == 2 and "4 local process" in choice.reason


def test_explicit_num_threads_wins(clean_env):
    clean_env.setenv("OMP_NUM_THREADS", "3")
    assert choose_cpu_threads(5).num_threads == 5
    with pytest.raises(ValueError, match="num_threads must be at least 1"):
        choose_cpu_threads(0)


def test_variable_outside_a_launcher_is_the_users(clean_env):
    clean_env.setenv("OMP_NUM_THREADS", "3")
    assert threads_set_by_user() and choose_cpu_threads().num_threads == 3


def test_launcher_default_is_not_the_users(clean_env):
    # Under accelerate launch, OMP_NUM_THREADS=1 that the launcher's own environment lacked is its default.
    clean_env.setenv("OMP_NUM_THREADS", "1")
    clean_env.setenv("ACCELERATE_DYNAMO_BACKEND", "NO")
    clean_env.setattr(cpu_threads, "_launcher_environment", lambda: {"PATH": "/usr/bin"})
    assert not threads_set_by_user()
    assert choose_cpu_threads().num_threads == 8


def test_user_variable_under_a_launcher_is_kept(clean_env):
    clean_env.setenv("OMP_NUM_THREADS", "1")
    clean_env.setenv("ACCELERATE_DYNAMO_BACKEND", "NO")
    clean_env.setattr(cpu_threads, "_launcher_environment", lambda: {"OMP_NUM_THREADS": "1"})
    assert threads_set_by_user() and choose_cpu_threads().num_threads == 1


def test_unreadable_launcher_environment_respects_the_variable(clean_env):
    clean_env.setenv("OMP_NUM_THREADS", "1")
    clean_env.setenv("ACCELERATE_DYNAMO_BACKEND", "NO")
    clean_env.setattr(cpu_threads, "_launcher_environment", lambda: None)
    assert threads_set_by_user()


def test_apply_sets_torch_threads(clean_env):
    import torch

    before = torch.get_num_threads()
    try:
        assert apply_cpu_threads(1).num_threads == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="not Linux: reads /proc")
@pytest.mark.slow
def test_real_accelerate_launch_gets_every_core(tmp_path):
    script = tmp_path / "threads.py"
    script.write_text(
        textwrap.dedent(
            """
        from hfsiamese.utils.cpu_threads import apply_cpu_threads
        import torch
        print("THREADS", apply_cpu_threads().num_threads, torch.get_num_threads())
        """
        )
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", str(script)]
    out = subprocess.run(launcher, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    line = next(line for line in out.stdout.splitlines() if line.startswith("THREADS"))
    assert line.split()[1:] == [str(available_cores())] * 2
