"""A recipe run killed with SIGKILL mid-epoch and resumed ends where an uninterrupted run ends.

The kill is not timed: a callback (added by a small wrapper around recipes/train.py) writes a marker
file at a chosen step, after a checkpoint was saved, and then waits; the test sends SIGKILL (to the
whole process group) as soon as the marker appears. The resumed run must give the uninterrupted
run's weights, logged losses and metrics, which needs the checkpoint's optimizer/scheduler/RNG
states and the sampler's order of the resumed epoch (a function of seed and epoch) to be restored
exactly: with one process, and with two (where each process restores its own RNG state, and where
the sampler's epoch is only set by SiameseTrainer itself).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from safetensors.torch import load_file

from hfsiamese.utils.run_lock import LOCK_NAME, pid_alive
from tests.helpers import TINY_LSTM_BASE, TRAIN, accelerate_launch, offline_env, recipe_flags, run_offline

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

FLAGS = dict(
    TINY_LSTM_BASE,
    max_length=32,
    max_train_pairs=300,
    max_eval_pairs=100,
    per_device_eval_batch_size=64,
    warmup_steps=2,
    eval_strategy="epoch",
    save_strategy="steps",
    save_total_limit=2,
    loss="hard_negative_triplet",  # duplicate pairs only: the step/epoch positions below count those rows
)
ENV = dict(OMP_NUM_THREADS="1", ACCELERATE_USE_CPU="1")  # added to `offline_env`'s settings
# One process: 9 batches per epoch, 18 steps; checkpoints every 4 steps; killed at step 14, after
# checkpoint-12 (3 steps into epoch 2). Two processes (global batch 32): 5 steps per epoch, 15 steps;
# checkpoints every 2 steps; killed at step 7, after checkpoint-6 (1 step into epoch 2).
SETTINGS = {
    "one_process": dict(processes=1, flags=dict(num_train_epochs=2, save_steps=4, logging_steps=2), kill_at=14, resume_at=12, steps=18),
    "two_processes": dict(processes=2, flags=dict(num_train_epochs=3, save_steps=2, logging_steps=1), kill_at=7, resume_at=6, steps=15),
}  # fmt: skip
# Timing figures differ between any two runs; train_loss is the mean over the steps run by this
# process (transformers restarts that mean on resume), so it is compared through the logged losses.
RUN_DEPENDENT = ("_runtime", "_per_second", "train_loss")

WRAPPER = """
import os, runpy, sys, time
import transformers.trainer
from transformers import TrainerCallback

class StopAndWait(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == {step}:
            open({marker!r}, "w").close()
            time.sleep(600)  # the test sends SIGKILL now

transformers.trainer.DEFAULT_CALLBACKS.append(StopAndWait())
sys.argv = [{train!r}, *sys.argv[1:]]
runpy.run_path({train!r}, run_name="__main__")
"""


def flags(output_dir, **extra):
    return recipe_flags({**FLAGS, **extra}, output_dir)


def launcher(processes):
    """The command that starts a run's processes; several get a free port each launch (accelerate_launch)."""
    return [sys.executable] if processes == 1 else accelerate_launch(processes)


def train(cwd, processes, *args, timeout=600):
    result = run_offline([*launcher(processes), str(TRAIN), *args], cwd, timeout, **ENV)
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def kill_at_step(cwd, processes, args, step, timeout=600):
    """Run the recipe until it finished `step` (and any checkpoint due then), then SIGKILL all its processes."""
    wrapper = cwd / "kill_wrapper.py"
    marker = cwd / f"reached_step_{step}"
    marker.unlink(missing_ok=True)
    wrapper.write_text(WRAPPER.format(step=step, marker=str(marker), train=str(TRAIN)))
    with (cwd / "killed_run.log").open("w") as log:
        process = subprocess.Popen(
            [*launcher(processes), str(wrapper), *args],
            cwd=cwd, env=offline_env(**ENV), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        try:
            while not marker.exists():
                if process.poll() is not None:
                    raise AssertionError(
                        f"the run ended before step {step}:\n{(cwd / 'killed_run.log').read_text()[-4000:]}"
                    )
                if time.monotonic() > deadline:
                    raise AssertionError(f"step {step} not reached in {timeout}s")
                time.sleep(0.2)
        finally:
            # Every process of the launch, as a crash ends them: the launcher's group, and the workers torch's
            # elastic agent starts in sessions of their own (listed before the agent dies and they lose their parent).
            workers = psutil.Process(process.pid).children(recursive=True)
            os.killpg(process.pid, signal.SIGKILL)
            for worker in workers:
                with contextlib.suppress(psutil.NoSuchProcess):
                    worker.kill()
            psutil.wait_procs(workers, timeout=60)
            returncode = process.wait(timeout=60)
            _kill_lock_owner(output_dir_of(args))
    assert returncode == -signal.SIGKILL


def output_dir_of(args):
    return Path(args[args.index("--output_dir") + 1])


def _kill_lock_owner(output_dir, timeout=60):
    """The process that holds the run's lock (the launch's first worker, which torch's elastic agent may start
    in a session of its own, out of the launcher's process group): killed too, as a crash would end it."""
    lock = output_dir / LOCK_NAME
    if not lock.exists():
        return
    pid = json.loads(lock.read_text())["pid"]
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)


def losses_after(output_dir, step):
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return {entry["step"]: entry["loss"] for entry in history if "loss" in entry and entry["step"] > step}


def comparable(results):
    return {k: v for k, v in results.items() if not any(part in k for part in RUN_DEPENDENT)}


@pytest.fixture(scope="module", params=sorted(SETTINGS))
def runs(request, tmp_path_factory):
    setting = SETTINGS[request.param]
    tmp = tmp_path_factory.mktemp(request.param)
    straight, interrupted = tmp / "straight", tmp / "interrupted"
    train(tmp, setting["processes"], *flags(straight, **setting["flags"]))
    kill_at_step(tmp, setting["processes"], flags(interrupted, **setting["flags"]), setting["kill_at"])
    killed_state = {p.name for p in interrupted.iterdir()}
    checkpoint = interrupted / f"checkpoint-{setting['resume_at']}"
    epoch = json.loads((checkpoint / "trainer_state.json").read_text())["epoch"]
    assert 1 < epoch < 2, f"{checkpoint.name} should be mid-epoch 2, is at epoch {epoch}"
    resumed = train(
        tmp, setting["processes"], *flags(interrupted, **setting["flags"]), "--resume_from_checkpoint", "auto"
    )
    return dict(setting, straight=straight, interrupted=interrupted, killed_state=killed_state, resumed=resumed)


def test_killed_run_left_only_complete_checkpoints(runs):
    # save_total_limit=2; no final model, no staging folder; the killed run's lock, which the resumed run takes over
    step, every = runs["resume_at"], runs["flags"]["save_steps"]
    assert runs["killed_state"] == {f"checkpoint-{step - every}", f"checkpoint-{step}", LOCK_NAME}
    assert f"taking over {runs['interrupted']}/{LOCK_NAME}" in runs["resumed"].stderr
    assert not (runs["interrupted"] / LOCK_NAME).exists()
    assert f"resuming from {runs['interrupted']}/checkpoint-{step}" in runs["resumed"].stderr


def test_resumed_run_ends_with_the_uninterrupted_weights(runs):
    expected, got = (
        load_file(runs["straight"] / "model.safetensors"),
        load_file(runs["interrupted"] / "model.safetensors"),
    )
    assert expected.keys() == got.keys()
    for name in expected:
        assert (expected[name] - got[name]).abs().max().item() <= 1e-6, name


def test_resumed_run_logs_the_same_losses_and_metrics(runs):
    straight, interrupted, step = runs["straight"], runs["interrupted"], runs["resume_at"]
    expected_losses = losses_after(straight, step)
    assert max(expected_losses) == runs["steps"] and len(expected_losses) >= 2
    assert losses_after(interrupted, step) == pytest.approx(expected_losses, abs=1e-6)
    expected = comparable(json.loads((straight / "all_results.json").read_text()))
    got = comparable(json.loads((interrupted / "all_results.json").read_text()))
    assert got.keys() == expected.keys() and "eval_average_precision" in got
    assert got == pytest.approx(expected, abs=1e-9)
    for run in (straight, interrupted):
        assert json.loads((run / "trainer_state.json").read_text())["global_step"] == runs["steps"]


def test_auto_without_a_checkpoint_is_a_clear_error(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    (out / "notes.txt").write_text("not a checkpoint")
    result = run_offline([sys.executable, str(TRAIN), *flags(out), "--resume_from_checkpoint", "auto"], tmp_path, **ENV)
    assert result.returncode != 0
    assert "no complete checkpoint-N folder in" in result.stderr and str(out) in result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
