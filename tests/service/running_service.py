"""A real `hfsiamese serve` in a subprocess on a free loopback port, and the tiny model and index it serves."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from hfsiamese import SiameseModel
from hfsiamese.search import DuplicateIndex
from tests.conftest import REPO_ROOT, TEXTS
from tests.fixtures import saved_tiny_lstm
from tests.helpers import offline_env

READ_KEY = "read-key-" + "r" * 16
WRITE_KEY = "write-key-" + "w" * 16
# A platt map of cosines: the service's matches carry a calibrated probability.
CALIBRATION = {"method": "platt", "coef": 10.0, "intercept": -5.0}
START_SECONDS = 180  # two shared cores: importing torch and loading may be slow


def tiny_model_dir(path: Path, tokenizer) -> Path:
    """A random tiny LSTM that calls a pair a duplicate at cosine 0.95 (a text and itself, at least)."""
    return saved_tiny_lstm(path, tokenizer, threshold=0.95, calibration=CALIBRATION)


def write_keys_file(path: Path) -> Path:
    """A keys file at `path` holding `READ_KEY` and `WRITE_KEY`."""
    path.write_text(f"# the service's keys\nread:{READ_KEY}\nwrite:{WRITE_KEY}\n", encoding="utf-8")
    return path


def lancedb_index_dir(root: Path, model_dir: Path) -> Path:
    """`TEXTS` (ids 0..7) in a LanceDB database under `root`, grouped, the index saved to `root / "index"`."""
    model = SiameseModel.from_pretrained(model_dir)
    index = DuplicateIndex.build(TEXTS, model, ids=list(range(len(TEXTS))), store="lancedb", database=root / "db")
    index.find_groups()
    index.save(root / "index")
    index.close()
    return root / "index"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RunningService:
    """`hfsiamese serve` started in a subprocess; `url`, `kill()` (SIGKILL), `stop()` (SIGTERM, then kill)."""

    def __init__(self, index_dir: Path, model_dir: Path, *flags: str, keys_file: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "hfsiamese.cli.serve", "--index_dir", str(index_dir),
                   "--model_name_or_path", str(model_dir), "--port", str(self.port), "--log_level", "warning", *flags]  # fmt: skip
        if keys_file is not None:
            command += ["--api_keys_file", str(keys_file)]
        # Its output goes to a file, never a pipe nobody reads (a full pipe would block the service mid-request).
        self.log_path = Path(tempfile.mkstemp(prefix="hfsiamese-serve-", suffix=".log")[1])
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command, env=offline_env(PYTHONPATH=str(REPO_ROOT)), stdout=log, stderr=subprocess.STDOUT
            )
        self._wait_ready()

    def log(self) -> str:
        """What the service has printed so far (its log, tracebacks of internal errors included)."""
        return self.log_path.read_text(errors="replace")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the service exited with {self.process.returncode}: {self.log()[-2000:]}")
            try:
                if httpx.get(f"{self.url}/health/ready", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.kill()
        raise RuntimeError(f"the service was not ready within {START_SECONDS} s")

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log_path.unlink(missing_ok=True)


def service_with_page(root: Path, tokenizer) -> RunningService:
    """`hfsiamese serve --mount_app /app` with `READ_KEY` and `WRITE_KEY`, over `TEXTS` indexed in LanceDB under `root`."""
    model_dir = tiny_model_dir(root / "model", tokenizer)
    keys_file = write_keys_file(root / "keys.txt")
    return RunningService(lancedb_index_dir(root, model_dir), model_dir, "--mount_app", "/app", keys_file=keys_file)
