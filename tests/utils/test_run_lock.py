"""The output folder's lock: one live run per folder; a dead run's lock is taken over."""

import json
import os
import socket
import subprocess
import sys

import pytest

from hfsiamese.utils.run_lock import LOCK_NAME, OutputDirInUseError, RunLock, pid_alive


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_second_lock_on_a_folder_is_refused_naming_the_owner(tmp_path):
    with RunLock(tmp_path / "run") as first:
        record = json.loads((tmp_path / "run" / LOCK_NAME).read_text())
        assert record["pid"] == os.getpid() and record["host"] == socket.gethostname()
        with pytest.raises(OutputDirInUseError, match=rf"in use by another run \(pid {os.getpid()} on "):
            RunLock(tmp_path / "run").acquire()
        assert first.held
    assert not (tmp_path / "run" / LOCK_NAME).exists()  # released on exit
    RunLock(tmp_path / "run").acquire()  # free again


def test_stale_lock_of_a_dead_process_is_taken_over(tmp_path, caplog):
    pid = dead_pid()
    assert not pid_alive(pid)
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "started": "x"}))
    lock = RunLock(tmp_path)
    lock.acquire()
    assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    lock.release()


def test_lock_from_another_host_is_never_guessed_stale(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": dead_pid(), "host": "another-host", "started": "x"}))
    with pytest.raises(OutputDirInUseError, match="on another-host"):
        RunLock(tmp_path).acquire()
    assert (tmp_path / LOCK_NAME).exists()


def test_disabled_lock_on_other_processes_writes_nothing(tmp_path):
    with RunLock(tmp_path / "run", enabled=False):
        assert not (tmp_path / "run").exists()
