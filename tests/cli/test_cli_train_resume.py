"""`hfsiamese train` SIGKILLed mid-epoch and resumed trains the uninterrupted run's batches: the same losses, exactly.

One uninterrupted run from a pair file is the reference; two runs (one from the pair file, one from the folder
`hfsiamese prepare` wrote of it, whose rows are the same) are killed after a checkpoint mid-epoch 2 and resumed with
`--resume_from_checkpoint auto`. On a CPU with one thread every logged loss after the checkpoint must equal the
reference's to the last bit: the group-aware batches of the resumed epoch (`NoDuplicateGroupSampler`, a function of
seed and epoch), the batches skipped, dropout's random state and the optimizer's all restored exactly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hfsiamese.cli.prepare import main as prepare_command
from tests.conftest import QQP_FILE
from tests.helpers import TINY_LSTM_BASE, offline_env, recipe_flags

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

# 150 pairs: 135 training pairs, 9 batches of 16 an epoch. Checkpoints at steps 6 and 12 (a third into epoch 2);
# the killed runs are stopped at step 14, so resuming from checkpoint-12 repeats steps 13 and 14 too.
CHECKPOINT, KILL_AT, STEPS = 12, 14, 20
FLAGS = dict(
    TINY_LSTM_BASE,  # lstm_qqp's dropout (0.2) and loss (contrastive ranking, in-batch term) are kept
    max_length=16,
    max_steps=STEPS,
    warmup_steps=2,
    logging_steps=1,
    save_strategy="steps",
    save_steps=6,
    save_total_limit=3,
    eval_strategy="no",
    max_eval_pairs=50,
)
ENV = dict(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # one thread: float sums in one order, run after run

# `hfsiamese train` with a callback that, once step KILL_AT is done, writes a marker and waits to be killed.
WRAPPER = """
import runpy, sys, time
import transformers.trainer
from transformers import TrainerCallback

class WaitForKill(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == {step}:
            open({marker!r}, "w").close()
            time.sleep(600)

transformers.trainer.DEFAULT_CALLBACKS.append(WaitForKill())
sys.argv = ["hfsiamese", "train", *sys.argv[1:]]
runpy.run_module("hfsiamese.cli.main", run_name="__main__")
"""


def start(cwd: Path, train_file: Path, output_dir: Path, *extra: str, wrapper: Path | None = None) -> subprocess.Popen:
    """`hfsiamese train lstm_qqp` on `train_file` (through `wrapper` when given), its output in a log beside it."""
    program = [str(wrapper)] if wrapper else ["-m", "hfsiamese.cli.main", "train"]
    args = [sys.executable, *program, "lstm_qqp", "--train_file", str(train_file), *recipe_flags(FLAGS, output_dir)]
    log = (cwd / f"{output_dir.name}-{'resumed' if extra else 'run'}.log").open("w")
    return subprocess.Popen(
        [*args, *extra], cwd=cwd, env=offline_env(**ENV), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )


def finished(process: subprocess.Popen, timeout: float = 300) -> None:
    returncode = process.wait(timeout=timeout)
    assert returncode == 0, Path(process.stdout.name).read_text()[-4000:]  # type: ignore[union-attr]


def kill_when_past_checkpoint(process: subprocess.Popen, marker: Path, checkpoint: Path, timeout: float = 300) -> None:
    """Wait for `checkpoint` to be written and the run to stop at the marker's step, then SIGKILL its processes."""
    deadline = time.monotonic() + timeout
    try:
        while not (marker.exists() and checkpoint.is_dir()):
            if process.poll() is not None:
                raise AssertionError(f"the run ended before step {KILL_AT}: " + Path(process.stdout.name).read_text())  # type: ignore[union-attr]
            assert time.monotonic() < deadline, f"step {KILL_AT} not reached in {timeout}s"
            time.sleep(0.1)
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL


def logged_losses(output_dir: Path) -> dict[int, float]:
    history = json.loads((output_dir / "trainer_state.json").read_text())["log_history"]
    return {entry["step"]: entry["loss"] for entry in history if "loss" in entry}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resume")
    pairs = tmp / "pairs.tsv"
    pairs.write_text("".join(QQP_FILE.read_text(encoding="utf-8").splitlines(keepends=True)[:150]), encoding="utf-8")
    prepared = tmp / "prepared"
    prepare_command(["lstm_qqp", "--train_file", str(pairs), "--output_dir", str(prepared)])
    sources = {"pair_file": pairs, "prepared_folder": prepared}
    markers = {name: tmp / f"{name}-reached-step-{KILL_AT}" for name in sources}
    straight = start(tmp, pairs, tmp / "straight")  # beside the killed runs: one thread each, on the machine's cores
    killed = {
        name: start(tmp, source, tmp / name, wrapper=waiting_wrapper(tmp / f"wait_for_kill_{name}.py", markers[name]))
        for name, source in sources.items()
    }
    checkpoints = {}
    for name, process in killed.items():
        kill_when_past_checkpoint(process, markers[name], tmp / name / f"checkpoint-{CHECKPOINT}")
        checkpoints[name] = json.loads((tmp / name / f"checkpoint-{CHECKPOINT}" / "trainer_state.json").read_text())
    resumed = {
        name: start(tmp, source, tmp / name, "--resume_from_checkpoint", "auto") for name, source in sources.items()
    }
    finished(straight)
    for process in resumed.values():
        finished(process)
    return dict(tmp=tmp, checkpoints=checkpoints)


def waiting_wrapper(script: Path, marker: Path) -> Path:
    script.write_text(WRAPPER.format(step=KILL_AT, marker=str(marker)))
    return script


@pytest.mark.parametrize("source", ["pair_file", "prepared_folder"])
def test_a_run_killed_mid_epoch_resumes_with_the_uninterrupted_losses(runs, source):
    epoch = runs["checkpoints"][source]["epoch"]
    assert 1 < epoch < 2, f"checkpoint-{CHECKPOINT} should be mid-epoch 2, is at epoch {epoch}"
    expected = logged_losses(runs["tmp"] / "straight")
    got = logged_losses(runs["tmp"] / source)
    assert sorted(expected) == list(range(1, STEPS + 1))
    after = {step: loss for step, loss in expected.items() if step > CHECKPOINT}
    # Exactly equal, not approximately: any difference in a batch, in dropout or in the optimizer shows here.
    assert {step: got.get(step) for step in after} == after
    assert {step: got[step] for step in expected if step <= CHECKPOINT} == {
        step: loss for step, loss in expected.items() if step <= CHECKPOINT
    }
