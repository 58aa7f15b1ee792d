"""
The numerics-sensitive tests again under each CPU capability this project's machines have, capped below the machine
at hand, so that a green run on one kind of CPU means green on the others.

The machines change kind from week to week (AVX2-only AMD EPYC, EPYC with AVX512-BF16, Xeon with AMX): PyTorch's
vector kernels and oneDNN take the capability they find, so an int8 export, a bf16 decision or a batched encode
can pass on one kind and fail on another. PyTorch and oneDNN can be capped to a lower instruction set
(`ATEN_CPU_CAPABILITY`, `ONEDNN_MAX_CPU_ISA`, read when torch loads: hence a new process per capability); a
capability above the machine's cannot be emulated, and the machine's own is what the plain run covers: those two
skip, by the allow-listed prefixes. onnxruntime has no such cap (its int8 kernels follow the CPU's VNNI):
the exports use one int8 setting right with and without it (`hfsiamese.utils.cpu_features`).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hfsiamese.utils.cpu_features import detected_features
from tests.conftest import REPO_ROOT

# Each kind this project meets, as the caps that make a more capable CPU compute like it.
CAPABILITIES: dict[str, dict[str, str]] = {
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"},
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE"},
    "avx512_bf16": {"ATEN_CPU_CAPABILITY": "avx512", "ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"},
}
ORDER = ("older", "avx2", "avx512", "avx512_bf16", "amx")
# What differs between kinds of CPU: exports and their int8 graphs, encode's precision and batching, the bf16
# probes; under every capped kind.
NUMERICS_SENSITIVE = (
    "tests/utils/test_cpu_features.py",
    "tests/utils/test_encode_precision.py",
    "tests/bi_encoder/test_onnx_export.py",
    "tests/bi_encoder/test_onnx_model.py",
    "tests/models/siamese/test_encoding_batches.py",
    "tests/models/siamese/test_sub_batching.py",
    "tests/base/test_cpu_precision.py",
)
# Heavier ones (a recipe trained and exported; launchers whose processes must train the same weights), under the
# lowest kind only, the one furthest from the more capable machines: both lists together took 20 minutes capped to
# AVX2 on 2 cores shared with four other jobs. Nothing is added on an AVX2-only machine (its own kind).
LOWEST_KIND_ONLY = (
    "tests/recipes/test_export_recipe.py",
    "tests/recipes/test_sharded_launchers.py",
)

# Tests of those modules that compute nothing a CPU kind changes (a refusal before any training or export): the plain
# run covers them; each costs a process start and a model build under a cap.
NUMERICS_FREE = (
    "tests/recipes/test_export_recipe.py::test_refuses_a_non_empty_output_dir_and_an_onnx_source",
    "tests/recipes/test_sharded_launchers.py::test_sentence_transformers_export_is_refused_before_training_under_fsdp",
)


def modules_under(capability: str) -> tuple[str, ...]:
    return NUMERICS_SENSITIVE + (LOWEST_KIND_ONLY if capability == "avx2" else ())


def deselected_under(capability: str) -> list[str]:
    """pytest's `--deselect` options for the tests of `modules_under(capability)` that a cap cannot change."""
    modules = modules_under(capability)
    return [option for test in NUMERICS_FREE if test.partition("::")[0] in modules for option in ("--deselect", test)]


def capped_environment(capability: str) -> dict[str, str]:
    return {**os.environ, **CAPABILITIES[capability]}


def skip_unless_emulable(capability: str) -> None:
    own = detected_features().name
    if ORDER.index(capability) > ORDER.index(own):
        pytest.skip(f"not on this CPU: {capability} cannot be emulated on this {own} CPU (caps only lower)")
    if capability == own:
        pytest.skip(f"the machine's own CPU kind: the plain run covers {capability}")


def test_the_tests_left_out_under_a_cap_exist_in_the_modules_run_there():
    """A renamed test would make its `--deselect` select nothing, silently: each one names a test of a capped module."""
    for test in NUMERICS_FREE:
        module, _, name = test.partition("::")
        assert module in modules_under("avx2"), test
        assert f"def {name}(" in (REPO_ROOT / module).read_text(encoding="utf-8"), test
    assert deselected_under("avx512") == []  # the launchers and the recipe export run under the lowest kind only
    assert deselected_under("avx2") == [option for test in NUMERICS_FREE for option in ("--deselect", test)]


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_a_capped_process_computes_as_that_kind(capability):
    """The caps reach torch, oneDNN and hfsiamese's view of the CPU (bf16 'auto' and the LSTM probe included)."""
    skip_unless_emulable(capability)
    code = (
        "import torch; from hfsiamese.utils import cpu_features as c; "
        "print(torch.backends.cpu.get_cpu_capability(), c.effective_features().name, c.runs_lstm_in_bf16())"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=capped_environment(capability), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    aten, kind, lstm_bf16 = result.stdout.split()
    assert aten == {"avx2": "AVX2"}.get(capability, "AVX512") and kind == capability
    assert lstm_bf16 == str(capability != "avx2")  # oneDNN's bf16 LSTM needs AVX-512


# Minutes under the lowest cap (137 s on 2 shared cores): collected first, so that under xdist it runs beside the docs
# run instead of alone at the end of the suite (this module was handed out 217th of 252).
@pytest.mark.runs_first
@pytest.mark.timeout(2400)
@pytest.mark.parametrize("capability", CAPABILITIES)
def test_numerics_sensitive_tests_pass_capped(capability):
    skip_unless_emulable(capability)
    pytest_options = ["-q", "-p", "no:cacheprovider", "-o", "addopts=", *deselected_under(capability)]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *pytest_options, *modules_under(capability)],
        cwd=REPO_ROOT,
        env=capped_environment(capability),
        capture_output=True,
        text=True,
        timeout=2300,
    )
    assert result.returncode == 0, f"capped to {capability}:\n{result.stdout[-6000:]}\n{result.stderr[-2000:]}"
