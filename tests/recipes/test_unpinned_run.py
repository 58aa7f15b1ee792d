"""One `hfsiamese train` as a user runs it, nothing pinned: its logged machine decisions are what the probes say.

The rest of the suite pins what the machine would decide (tests/conftest.py `MACHINE_PINS`), so that a result cannot
depend on the CPU or its load; this test is the one that lets the run decide, and checks each decision against the
probe it comes from, on whatever CPU runs the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from hfsiamese.base.cpu_precision import MIN_SPEEDUP
from hfsiamese.utils import core_sharing
from hfsiamese.utils.encode_precision import native_cpu_bf16
from hfsiamese.utils.measurement_memory import FILE_NAME
from tests.conftest import MACHINE_PINS, QQP_FILE
from tests.helpers import TINY_LSTM_BASE, recipe_flags

# What a user's shell would not have: the suite's pins, and a thread count of the caller's choosing.
UNPINNED_AWAY = (*MACHINE_PINS, "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def logged_line(stderr: str, prefix: str) -> str:
    """The one log line holding `prefix`, from the prefix on."""
    lines = [line[line.index(prefix) :] for line in stderr.splitlines() if prefix in line]
    assert len(lines) == 1, f"expected one {prefix!r} line, got {lines}\n{stderr[-3000:]}"
    return lines[0]


@pytest.mark.slow
def test_an_unpinned_run_logs_the_decisions_its_probes_make(tmp_path, monkeypatch):
    for name in UNPINNED_AWAY:
        monkeypatch.delenv(name, raising=False)
    cache = tmp_path / "cache"  # the run keeps its bf16 measurement here, not in the user's own cache
    env = {k: v for k, v in os.environ.items() if k not in UNPINNED_AWAY}
    env.update(XDG_CACHE_HOME=str(cache), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(QQP_FILE.read_text(encoding="utf-8").splitlines(keepends=True)[:300]), encoding="utf-8")
    flags = recipe_flags(
        dict(TINY_LSTM_BASE, max_steps=2, eval_strategy="no", save_strategy="no", bf16="auto", train_file=pairs.name),
        tmp_path / "out",
    )
    run = subprocess.run(
        [sys.executable, "-m", "hfsiamese.cli.main", "train", "lstm_qqp", *flags],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]

    precision = logged_line(run.stderr, "precision: ")
    if not native_cpu_bf16():
        assert precision == "precision: --bf16 auto: fp32, this CPU has no native bf16 (neither AVX512-BF16 nor AMX)"
        assert not (cache / "hfsiamese" / FILE_NAME).exists()  # nothing measured where nothing could be chosen
    else:
        kept = json.loads((cache / "hfsiamese" / FILE_NAME).read_text(encoding="utf-8"))
        (entry,) = kept.values()  # the run measured once, and kept what it measured
        speedup = entry["speedup"]
        assert f"measured {speedup:.2f}× as fast" in precision
        assert ("bf16 autocast, measured" in precision) is (speedup >= MIN_SPEEDUP)

    sharing = logged_line(run.stderr, "core sharing: ")
    if core_sharing.available():
        assert sharing == "core sharing: on (fewer threads while other processes use this run's cores)"
    else:
        assert sharing.startswith("core sharing: off (") and core_sharing.OPT_OUT in sharing
