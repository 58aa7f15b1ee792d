"""
recipes/accelerate/fsdp.yaml and deepspeed_zero{2,3}.yaml on 2 CPU processes: the sharded run trains the
weights the DDP run trains, so the in-batch gather and the gradient reduction are right under sharding.

accelerate itself runs FSDP and DeepSpeed on GPUs only (on CPU processes it silently runs DDP), so these
runs go through `sharded_on_cpu.py`, which sets accelerate's state as on GPUs and runs the recipe unchanged
(gloo instead of NCCL, no mixed precision). What is compared: with the same seed, data and initial weights
(a tiny random BERT, no dropout), 2 steps of plain SGD (the update is the gradient, so a wrong gradient
shows) with the in-batch `multiple_negatives_ranking` loss, the saved weights of the sharded run equal those
of the DDP run (tests/losses/test_gather_two_processes.py shows DDP equal to one process on the whole batch).
The control run without gathering differs, so the comparison can fail. The saves are full checkpoints that
load with `from_pretrained`. DeepSpeed comes with the test extra (for users it is the `deepspeed` extra); its
CPU accelerator talks over gloo (the shim leaves out its shared-memory all-reduce, which inference alone uses).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from safetensors.torch import load_file

from hfsiamese import SiameseModel
from tests.conftest import REPO_ROOT
from tests.helpers import (
    TEARDOWN_ABORT,
    TRAIN,
    TeardownAbortRetried,
    accelerate_launch,
    free_port,
    recipe_flags,
    retry_teardown_abort,
    run_offline,
)

pytestmark = pytest.mark.slow  # every test here starts processes that import the library, or trains for real

SHIM = Path(__file__).with_name("sharded_on_cpu.py")
CONFIGS = REPO_ROOT / "recipes" / "accelerate"


def flags(model_dir: Path) -> list[str]:
    return recipe_flags(
        dict(
            encoder_type="transformer", model_name_or_path=model_dir, max_length=16, encoder_dropout=0.0,
            loss="multiple_negatives_ranking", max_train_pairs=64, max_eval_pairs=16, per_device_train_batch_size=8,
            max_steps=2, optim="sgd", learning_rate=1.0, warmup_steps=0, seed=7, eval_strategy="no",
            save_strategy="no", disable_tqdm=True,
        )
    )  # fmt: skip


def run_sharded(config: str, model_dir: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    """The recipe under `accelerate launch --config_file recipes/accelerate/<config>.yaml`, 2 CPU processes."""
    command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(CONFIGS / f"{config}.yaml"),
               "--num_processes", "2", "--mixed_precision", "no", "--main_process_port", free_port(), str(SHIM),
               *flags(model_dir), *extra, "--output_dir", str(out)]  # fmt: skip
    return run_offline(command, cwd=out.parent, timeout=300, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")


def launch_sharded(config: str, model_dir: Path, out: Path, *extra: str) -> str:
    """`run_sharded`, which must succeed (a second try after the teardown abort above only, reported); its stdout."""

    def launch() -> subprocess.CompletedProcess:
        shutil.rmtree(out, ignore_errors=True)  # a second try starts in a fresh folder
        return run_sharded(config, model_dir, out, *extra)

    result = retry_teardown_abort(launch, config)
    assert result.returncode == 0, result.stderr[-4000:]
    return result.stdout


def test_a_teardown_abort_is_run_again_once_and_reported(monkeypatch, tmp_path):
    """The retry above fires only for that abort, and visibly (a warning in pytest's summary), never silently."""
    this_module = sys.modules[__name__]
    aborted = subprocess.CompletedProcess([], -6, "", f"step 2 done\n{TEARDOWN_ABORT}\n")
    outcomes = iter([aborted, subprocess.CompletedProcess([], 0, "trained", "")])
    monkeypatch.setattr(this_module, "run_sharded", lambda *args: next(outcomes))
    with pytest.warns(TeardownAbortRetried, match=r"(?s)the fsdp launch aborted with .*exit status -6.*step 2 done"):
        assert launch_sharded("fsdp", tmp_path, tmp_path / "out") == "trained"
    failed = subprocess.CompletedProcess([], 1, "", "error: something else")
    monkeypatch.setattr(this_module, "run_sharded", lambda *args: failed)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TeardownAbortRetried)  # any other failure is not run again
        with pytest.raises(AssertionError, match="error: something else"):
            launch_sharded("fsdp", tmp_path, tmp_path / "out")


def max_difference(a: Path, b: Path) -> float:
    first, second = load_file(a / "model.safetensors"), load_file(b / "model.safetensors")
    assert first.keys() == second.keys()
    return max((first[key].float() - second[key].float()).abs().max().item() for key in first)


@pytest.fixture(scope="module")
def ddp_run(tiny_bert_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("ddp") / "run"
    command = [*accelerate_launch(2), str(TRAIN), *flags(tiny_bert_dir), "--output_dir", str(out)]
    result = run_offline(command, cwd=out.parent, timeout=300, ACCELERATE_USE_CPU="1", OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stderr[-4000:]
    return out


def test_fsdp_trains_the_ddp_weights_and_saves_a_plain_checkpoint(ddp_run, tiny_bert_dir, tmp_path):
    out = tmp_path / "fsdp"
    stdout = launch_sharded("fsdp", tiny_bert_dir, out)
    assert "prepared: FSDPSiameseModel DTensor" in stdout  # FSDP2 did shard the parameters
    assert max_difference(out, ddp_run) < 1e-5
    # A full checkpoint naming our own modeling code, not the class FSDP2 swapped in.
    config = json.loads((out / "config.json").read_text())
    assert config["auto_map"]["AutoModel"] == "modeling_siamese.SiameseModel"
    assert not list(out.glob("_fsdp*.py"))
    SiameseModel.from_pretrained(out)


def test_fsdp_without_gathering_trains_other_weights(ddp_run, tiny_bert_dir, tmp_path):
    """Control: each process's own negatives only give another gradient, so the comparison above can fail."""
    out = tmp_path / "fsdp_local"
    launch_sharded("fsdp", tiny_bert_dir, out, "--gather_across_devices", "false")
    assert max_difference(out, ddp_run) > 1e-3


@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_zero_trains_the_ddp_weights(ddp_run, tiny_bert_dir, tmp_path, stage):
    out = tmp_path / f"zero{stage}"
    stdout = launch_sharded(f"deepspeed_zero{stage}", tiny_bert_dir, out)
    # ZeRO-3 partitions the weights themselves (empty local tensors); ZeRO-2 keeps them whole.
    assert f"prepared: DeepSpeedEngine Parameter {'(0,)' if stage == 3 else ''}" in stdout
    assert max_difference(out, ddp_run) < 1e-5
    SiameseModel.from_pretrained(out)


def test_sentence_transformers_export_is_refused_before_training_under_fsdp(tiny_bert_dir, tmp_path):
    """The export reads the live model, whose weights FSDP leaves sharded: the run says so instead of failing late."""
    out = tmp_path / "fsdp_export"
    result = run_sharded("fsdp", tiny_bert_dir, out, "--export_sentence_transformers", str(tmp_path / "st"))
    assert result.returncode != 0
    assert "error: --export_sentence_transformers does not work under FSDP" in result.stderr
    assert not (out / "model.safetensors").exists()
