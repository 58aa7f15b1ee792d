"""The suite's own rule (tests/conftest.py): a process a test starts does not outlive it."""

import subprocess
import sys

import psutil
import pytest

from tests.conftest import _reap


def test_a_process_left_running_fails_the_test_and_is_killed():
    reaper = _reap("function", "a careless test", grace=0.5)
    next(reaper)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(
        pytest.fail.Exception, match=r"a careless test left 1 process\(es\) running \(now killed\): pid"
    ):
        next(reaper, None)
    child.wait(timeout=10)  # already reaped by the check: this only returns at once
    assert not psutil.pid_exists(child.pid)


def test_a_re_parented_worker_is_found_by_its_mark():
    """A launcher killed before its worker: the worker is no one's child any more, and still found."""
    reaper = _reap("function", "a killed launch", grace=0.5)
    next(reaper)
    code = (
        "import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], "
        "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
    )
    worker = psutil.Process(int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout))
    assert worker.is_running() and worker.ppid() != psutil.Process().pid
    with pytest.raises(pytest.fail.Exception, match=r"left 1 process\(es\) running"):
        next(reaper, None)
    psutil.wait_procs([worker], timeout=10)
    assert not worker.is_running()


def test_processes_that_end_pass():
    reaper = _reap("function", "a tidy test", grace=0.5)
    next(reaper)
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    assert next(reaper, "done") == "done"
