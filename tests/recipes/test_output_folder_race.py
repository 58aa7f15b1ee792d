"""Two trainings launched on one output folder: one runs, the other stops at once; the folder ends complete."""

import json
import subprocess
import sys
import time

from hfsiamese.runs.run_lock import LOCK_NAME
from tests.helpers import TINY_LSTM_BASE, TRAIN, offline_env, recipe_flags

# Long enough that the first run still trains while the second starts up (~6 s): the second must meet a live run.
FLAGS = dict(TINY_LSTM_BASE, max_train_pairs=2000, max_eval_pairs=200, max_steps=600, eval_strategy="no",
             save_strategy="steps", save_steps=200, logging_steps=200)  # fmt: skip


def start(out, tmp_path, *extra):
    command = [sys.executable, str(TRAIN), *recipe_flags(FLAGS, out), "--overwrite_output_dir", "true", *extra]
    return subprocess.Popen(
        command, cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_second_run_on_a_folder_held_by_a_live_run_stops(tmp_path):
    """`--overwrite_output_dir` passes the non-empty check, so only the lock stands between the two runs."""
    out = tmp_path / "run"
    first = start(out, tmp_path)
    deadline = time.monotonic() + 120
    while not (out / LOCK_NAME).exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (out / LOCK_NAME).exists(), first.communicate()[1][-3000:]
    second = start(out, tmp_path, "--seed", "1")
    _, second_err = second.communicate(timeout=300)
    first_running_meanwhile = first.poll() is None
    _, first_err = first.communicate(timeout=600)
    assert first.returncode == 0, first_err[-3000:]
    assert second.returncode == 1 and "Traceback" not in second_err
    assert f"error: output_dir {out} is in use by another run (pid {first.pid} on " in second_err
    assert first_running_meanwhile  # it was refused while the first run was live, not after it ended
    # The folder holds the first run's complete model and no lock.
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == FLAGS["max_steps"] and (out / "model.safetensors").is_file() and (out / "config.json").is_file()
    assert not (out / LOCK_NAME).exists()


def test_two_runs_started_together_one_wins(tmp_path):
    out = tmp_path / "run"
    runs = [start(out, tmp_path), start(out, tmp_path, "--seed", "1")]
    results = [(run.returncode, err) for run in runs for _, err in [run.communicate(timeout=600)]]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], [err[-2000:] for _, err in results]
    loser = next(err for code, err in results if code == 1)
    assert "is in use by another run" in loser or "is not empty" in loser, loser[-2000:]
    assert (out / "model.safetensors").is_file() and (out / "config.json").is_file()
