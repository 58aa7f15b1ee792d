"""The CPU's instruction sets as /proc/cpuinfo and the caps say, and the bf16 refusal they decide."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from hfsiamese.utils import cpu_features, encode_precision
from hfsiamese.utils.cpu_features import CpuFeatures, features_from_flags

AMX_XEON = frozenset(
    ["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"]
)
AVX2_EPYC = frozenset(["sse4_2", "avx", "avx2", "fma"])


def test_flags_name_the_kinds_this_project_meets():
    assert features_from_flags(AVX2_EPYC).name == "avx2" and not features_from_flags(AVX2_EPYC).vnni
    assert features_from_flags(AMX_XEON).name == "amx" and features_from_flags(AMX_XEON).native_bf16
    bf16_epyc = frozenset(["avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"])
    assert features_from_flags(bf16_epyc).name == "avx512_bf16" and features_from_flags(bf16_epyc).vnni
    # AVX-512 counts only with F, BW and VL (oneDNN's avx512_core): an avx512f-only CPU is treated as AVX2.
    assert features_from_flags(frozenset({"avx2", "avx512f"})).name == "avx2"
    assert features_from_flags(frozenset({"avx2", "avx_vnni"})).vnni  # AVX-VNNI counts for onnxruntime's int8


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="not Linux: reads /proc/cpuinfo")
def test_native_bf16_is_what_proc_cpuinfo_says(monkeypatch):
    """Read from the kernel's flags, not torch's private probes (a rename there would make every CPU "no bf16")."""
    for name in ("ONEDNN_MAX_CPU_ISA", "ATEN_CPU_CAPABILITY"):
        monkeypatch.delenv(name, raising=False)
    text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    flags = set(next(line for line in text.splitlines() if line.startswith("flags")).split(":", 1)[1].split())
    avx512 = {"avx512f", "avx512bw", "avx512vl"} <= flags
    expected = avx512 and ("avx512_bf16" in flags or {"amx_tile", "amx_bf16"} <= flags)
    assert encode_precision.native_cpu_bf16() is expected


def test_caps_lower_what_oneDNN_and_ATen_may_use(monkeypatch):
    monkeypatch.setattr(cpu_features, "detected_features", lambda: features_from_flags(AMX_XEON))
    assert cpu_features.effective_features({}).name == "amx"
    capped = cpu_features.effective_features({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE"})
    assert capped.name == "avx512" and not capped.native_bf16 and "ONEDNN_MAX_CPU_ISA=AVX512_CORE" in capped.source
    assert cpu_features.effective_features({"ONEDNN_MAX_CPU_ISA": "avx2"}).name == "avx2"
    assert cpu_features.effective_features({"ATEN_CPU_CAPABILITY": "avx2"}).name == "avx2"
    assert cpu_features.effective_features({"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"}).name == "avx512_bf16"
    # onnxruntime reads no cap: VNNI stays what the CPU has.
    assert cpu_features.effective_features({"ONEDNN_MAX_CPU_ISA": "AVX2"}).vnni


def test_paths_say_what_each_kind_takes():
    epyc, xeon = features_from_flags(AVX2_EPYC), features_from_flags(AMX_XEON)
    assert "refused" in cpu_features.bf16_path(epyc) and "AMX" in cpu_features.bf16_path(xeon)
    assert "without VNNI" in cpu_features.int8_path(epyc) and "AMX" in cpu_features.int8_path(xeon)
    avx512 = CpuFeatures(avx2=True, avx512=True, avx512_bf16=False, amx=False, vnni=False, source="test")
    assert "emulated on AVX-512" in cpu_features.bf16_path(avx512)


def test_the_lstm_probe_is_what_running_one_says(tiny_lstm):
    """The probe answers as a real bf16 LSTM of equal-length texts (oneDNN's path) does on this machine."""
    try:
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            tiny_lstm.embed(torch.ones(3, 5, dtype=torch.long), torch.ones(3, 5, dtype=torch.long))
        runs = True
    except RuntimeError as err:
        assert "primitive descriptor" in str(err)
        runs = False
    assert cpu_features.runs_lstm_in_bf16() is runs
    if cpu_features.effective_features().avx512:
        assert runs  # oneDNN's bf16 RNN runs from AVX-512 up


def test_the_lstm_probe_follows_a_oneDNN_cap():
    """Capped to AVX2, oneDNN refuses a bf16 LSTM on every CPU: the probe (in a new process) says so."""
    code = "from hfsiamese.utils.cpu_features import runs_lstm_in_bf16; print(runs_lstm_in_bf16())"
    env = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}
    result = subprocess.run(
        [sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "False"


@pytest.fixture
def no_bf16_lstm(monkeypatch):
    """A CPU whose oneDNN cannot run an LSTM in bf16 (as an AVX2-only one), whatever this machine is."""
    monkeypatch.setattr(cpu_features, "runs_lstm_in_bf16", lambda: False)


def test_explicit_bf16_for_an_lstm_is_one_line_before_any_work(no_bf16_lstm, tiny_lstm, word_tokenizer, monkeypatch):
    calls = []
    monkeypatch.setattr(tiny_lstm, "_embed_batch", lambda features: calls.append(1))
    with pytest.raises(
        ValueError, match=r"^dtype=torch.bfloat16: this CPU cannot run an LSTM in bfloat16 .*hfsiamese env"
    ) as err:
        tiny_lstm.encode(["how do i learn python"], word_tokenizer, dtype=torch.bfloat16)
    assert "\n" not in str(err.value) and calls == []


def test_auto_stays_fp32_for_an_lstm_it_cannot_run(no_bf16_lstm, tiny_lstm, monkeypatch):
    monkeypatch.setattr(encode_precision, "native_cpu_bf16", lambda: True)
    monkeypatch.setattr(encode_precision, "_measured_speedup", lambda *a: pytest.fail("measured what cannot run"))
    choice = tiny_lstm.encode_precision()
    assert choice.dtype is None and "cannot run an LSTM in bf16" in choice.reason


def test_models_without_an_lstm_are_not_refused(no_bf16_lstm):
    cpu_features.check_bf16_runs(torch.nn.Linear(2, 2), requested_by="--bf16 true")
    with pytest.raises(ValueError, match="--bf16 true: this CPU cannot run an LSTM"):
        cpu_features.check_bf16_runs(torch.nn.Sequential(torch.nn.LSTM(2, 2)), requested_by="--bf16 true")


def test_train_refuses_bf16_for_an_lstm_before_reading_the_data(no_bf16_lstm, tmp_path, monkeypatch):
    """`hfsiamese train --bf16 true` of an LSTM on such a CPU: one line, before the (missing) file is opened."""
    from tests.helpers import load_recipe

    train = load_recipe(monkeypatch, "train")
    missing = tmp_path / "no_such_pairs.tsv"
    argv = ["--train_file", str(missing), "--output_dir", str(tmp_path / "out"), "--bf16", "true", "--use_cpu", "true"]
    with pytest.raises(ValueError, match=r"^--bf16 true: this CPU cannot run an LSTM in bfloat16") as err:
        train.main(argv)
    assert "\n" not in str(err.value) and not (tmp_path / "out").exists()


def test_a_trainer_built_in_user_code_refuses_it_too(no_bf16_lstm, tiny_lstm, word_tokenizer, tmp_path):
    from tests.fixtures import tiny_training_args, trainer_on_tiny_pairs

    with pytest.raises(ValueError, match=r"^--bf16 true: this CPU cannot run an LSTM in bfloat16"):
        trainer_on_tiny_pairs(tiny_lstm, word_tokenizer, tiny_training_args(tmp_path, bf16="true"))
