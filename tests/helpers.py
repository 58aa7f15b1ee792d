"""Helpers shared by test modules: running the recipes, and a child interpreter without hfsiamese."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import REPO_ROOT

TRAIN = REPO_ROOT / "recipes" / "train.py"
EVALUATE = REPO_ROOT / "recipes" / "evaluate_pairs.py"

# Now and then (about one CPU launch in ten for some launches, none in eight for others) a process of a
# multi-process launch on CPU aborts in C++ with this line after its training steps (a std::thread left joinable
# at teardown, inside torch's gloo/DDP machinery), so a launch that dies so is run once more rather than failing.
# The retry is never silent: it raises `TeardownAbortRetried`, a warning pytest lists in its summary with the
# aborted run's last output, so how often it fires stays visible.
TEARDOWN_ABORT = "terminate called without an active exception"


class TeardownAbortRetried(UserWarning):
    """A multi-process launch aborted at teardown (TEARDOWN_ABORT) and was run a second time."""


def retry_teardown_abort(launch: Callable[[], subprocess.CompletedProcess], what: str) -> subprocess.CompletedProcess:
    """`launch()`, run a second time (reported by a `TeardownAbortRetried` warning) only where the first died of
    TEARDOWN_ABORT; `launch` starts from a clean slate each time (a fresh output folder)."""
    result = launch()
    if result.returncode != 0 and TEARDOWN_ABORT in result.stderr:
        warnings.warn(
            TeardownAbortRetried(
                f"the {what} launch aborted with {TEARDOWN_ABORT!r} (exit status {result.returncode}) and is run "
                f"again; its last output:\n{result.stderr[-1500:]}"
            ),
            stacklevel=3,
        )
        result = launch()
    return result


# The model and batch size of the tiny LSTM recipe runs; each test adds the data sizes and schedule it needs.
TINY_LSTM_BASE = dict(
    embedding_dim=16, hidden_size=16, vocab_size=2000, per_device_train_batch_size=16, disable_tqdm=True
)


def offline_env(**extra: str) -> dict[str, str]:
    """The environment of a recipe subprocess: offline, and no tokenizers warning after a fork."""
    return dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra)


def run_offline(args: list[str], cwd: Path, timeout: float = 600, **extra_env: str) -> subprocess.CompletedProcess:
    """Run a command (a recipe) offline in `cwd`, capturing its output; `extra_env` adds variables."""
    return subprocess.run(
        [*args], cwd=cwd, env=offline_env(**extra_env), capture_output=True, text=True, timeout=timeout
    )


def recipe_flags(values: dict[str, Any], output_dir: Path | None = None) -> list[str]:
    """`--key=value` flags of a recipe, then `--output_dir` when one is given."""
    flags = [f"--{k}={v}" for k, v in values.items()]
    return flags + (["--output_dir", str(output_dir)] if output_dir is not None else [])


def free_port() -> str:
    """A port no other launch on this machine holds now (accelerate's default 29500 may be another test's)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def accelerate_launch(num_processes: int) -> list[str]:
    """
    `accelerate launch` on CPU processes, without a config file (`--multi_gpu` starts DDP for several), on a
    port of its own, chosen when called: two launches (two test runs) on one machine never meet on 29500.
    """
    multi = ["--multi_gpu", "--main_process_port", free_port()] if num_processes > 1 else []
    return [sys.executable, "-m", "accelerate.commands.launch", *multi, "--num_processes", str(num_processes),
            "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]  # fmt: skip


def load_recipe(monkeypatch: pytest.MonkeyPatch, script: str = "train") -> ModuleType:
    """
    recipes/<script>.py as a module, for a test of that recipe that must run in this process (a fake Hub, a
    returned value); sys.modules is restored after the test. Nothing else is reused from a recipe: what the
    recipes do lives in the package.
    """
    spec = importlib.util.spec_from_file_location(f"hfsiamese_recipe_{script}", REPO_ROOT / "recipes" / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # as for an imported module (inspect and pickle look there)
    spec.loader.exec_module(module)
    return module


# Prefix of a child interpreter's code: importing hfsiamese fails there, as where it is not installed.
BLOCK_HFSIAMESE = r"""
import importlib.abc, sys

class NoHfsiamese(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "hfsiamese" or name.startswith("hfsiamese."):
            raise ImportError("hfsiamese is not installed here")
        return None

sys.meta_path.insert(0, NoHfsiamese())
"""


def run_without_hfsiamese(code: str, args: list[Any], tmp_path: Path) -> Any:
    """Run `code` in a fresh interpreter that cannot import hfsiamese; its last stdout line, parsed as JSON."""
    env = dict(os.environ, HF_MODULES_CACHE=str(tmp_path / "modules"), HF_HUB_OFFLINE="1", PYTHONPATH="")
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


class NetworkUsed(AssertionError):
    """A connection or DNS lookup where none may happen."""


def refuse_network(monkeypatch: pytest.MonkeyPatch, *, waits: bool = False) -> list[str]:
    """
    Until the test ends, every DNS lookup or connection attempt raises `NetworkUsed`, and with `waits` every
    `time.sleep` of the test's own thread returns at once; each is recorded in the list returned. "Fails at
    once while offline" is then an empty list with `waits`, on any machine: a network timeout needs a
    connection attempt, and a retry's back-off a sleep, so neither can happen unrecorded (a wall-clock limit
    would measure the machine instead).
    """
    import threading
    import time

    attempts: list[str] = []

    def refuse(kind: str):
        def blocked(*args: Any, **kwargs: Any) -> Any:
            attempts.append(f"{kind}{args[1:2] or args[:1]}")
            raise NetworkUsed(f"network used offline: {kind} {args[:2]}")

        return blocked

    real_sleep = time.sleep

    def no_wait(seconds: float) -> None:
        if threading.current_thread() is not threading.main_thread():
            return real_sleep(seconds)  # another thread's own pacing, not this call's wait
        attempts.append(f"time.sleep({seconds})")

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    if waits:
        monkeypatch.setattr(time, "sleep", no_wait)
    return attempts


def folder_state(folder: Path) -> dict[str, str]:
    """Every file under `folder` (its path relative to it) with the sha256 of its bytes: what a refused call must
    leave as it was; `{}` where the folder does not exist."""
    import hashlib

    if not folder.exists():
        return {}
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def onnx_thread_spinning(session: Any) -> str:
    """What an onnxruntime session says of its intra-op threads' spinning ("default": left to onnxruntime, on)."""
    try:
        return session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")
    except RuntimeError:  # onnxruntime: "SessionOptions does not have configuration with key"
        return "default"


def assert_int8_warning_only_without_vnni(
    folder: Path, entry_name: str, load: Callable[[Path], Any], runtime: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    An int8 export in `folder` that records its 7-bit weights (`int8_weights` in its `entry_name` entry) loads quietly
    on a CPU without VNNI; the same export without that record (full-range weights, which `runtime` saturates there)
    warns, and loads quietly again where VNNI sums it exactly. The CPU is faked; `folder`'s config.json is rewritten.
    """
    from hfsiamese.utils import cpu_features

    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    assert config[entry_name]["int8_weights"]
    for flags, record, warns in (
        (("avx2",), True, False),
        (("avx2",), False, True),
        (("avx2", "avx_vnni"), False, False),
    ):
        features = cpu_features.features_from_flags(frozenset(flags))
        monkeypatch.setattr(cpu_features, "effective_features", lambda environ=None, features=features: features)
        if not record:
            config[entry_name].pop("int8_weights", None)
            config_path.write_text(json.dumps(config))
        if warns:
            with pytest.warns(
                UserWarning, match=rf"full-range weights, which {runtime} saturates on a CPU without VNNI"
            ):
                load(folder)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                load(folder)
