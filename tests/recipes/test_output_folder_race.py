"""Two trainings launched on one output folder: one runs, the other stops at once; the folder ends complete."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from hfsiamese.utils.run_lock import LOCK_NAME
from tests.helpers import TINY_LSTM_BASE, TRAIN, offline_env, recipe_flags

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

# The first run holds the folder for as long as the test keeps it stopped (below), so the schedule can be short.
FLAGS = dict(TINY_LSTM_BASE, max_train_pairs=2000, max_eval_pairs=200, max_steps=20, eval_strategy="no",
             save_strategy="steps", save_steps=10, logging_steps=10)  # fmt: skip


def start(out, tmp_path, *extra, overwrite=True):
    overwriting = ["--overwrite_output_dir", "true"] if overwrite else []
    command = [sys.executable, str(TRAIN), *recipe_flags(FLAGS, out), *overwriting, *extra]
    return subprocess.Popen(
        command, cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def lock_owner(out) -> int | None:
    """The pid the folder's lock file names, once the file is written in full (it is created empty first)."""
    try:
        return json.loads((out / LOCK_NAME).read_text())["pid"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        return None


def test_second_run_on_a_folder_held_by_a_live_run_stops(tmp_path):
    """
    `--overwrite_output_dir` passes the non-empty check, so only the lock stands between the two runs. The test
    waits for the marker (the lock naming the first run), then stops the first run (SIGSTOP) until the second
    has answered: the second meets a live run however fast either machine or run is.
    """
    out = tmp_path / "run"
    first = start(out, tmp_path)
    deadline = time.monotonic() + 120
    while lock_owner(out) is None and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lock_owner(out) == first.pid, first.communicate()[1][-3000:]
    os.kill(first.pid, signal.SIGSTOP)
    try:
        second = start(out, tmp_path, "--seed", "1")
        _, second_err = second.communicate(timeout=300)
        first_running_meanwhile = first.poll() is None
    finally:
        os.kill(first.pid, signal.SIGCONT)
    _, first_err = first.communicate(timeout=600)
    assert first.returncode == 0, first_err[-3000:]
    assert second.returncode == 1 and "Traceback" not in second_err
    assert f"error: output_dir {out} is in use by another run (pid {first.pid} on " in second_err
    assert first_running_meanwhile  # it was refused while the first run was live, not after it ended
    # The folder holds the first run's complete model and no lock.
    state = json.loads((out / "trainer_state.json").read_text())
    assert (
        state["global_step"] == FLAGS["max_steps"]
        and (out / "model.safetensors").is_file()
        and (out / "config.json").is_file()
    )
    assert not (out / LOCK_NAME).exists()


def test_two_runs_started_together_one_wins(tmp_path):
    """
    Whatever the overlap: the later run meets either the live run's lock or, once the first has written, a
    non-empty folder (no `--overwrite_output_dir` here, so a run that ended before the other began counts too).
    """
    out = tmp_path / "run"
    runs = [start(out, tmp_path, overwrite=False), start(out, tmp_path, "--seed", "1", overwrite=False)]
    results = [(run.returncode, err) for run in runs for _, err in [run.communicate(timeout=600)]]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], [err[-2000:] for _, err in results]
    loser = next(err for code, err in results if code == 1)
    assert "is in use by another run" in loser or "is not empty" in loser, loser[-2000:]
    assert (out / "model.safetensors").is_file() and (out / "config.json").is_file()
