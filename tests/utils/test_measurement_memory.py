"""`hfsiamese.utils.measurement_memory`: a measured bf16 speed-up is kept per machine, so every process decides alike."""

from __future__ import annotations

import json

import pytest
import torch

from hfsiamese.utils import encode_precision, measurement_memory
from hfsiamese.utils.encode_precision import remembered_speedup
from hfsiamese.utils.measurement_memory import remember_speedup


def test_the_first_measurement_is_kept_and_reused(tmp_path):
    path = tmp_path / "hfsiamese" / "bf16_speedups.json"
    assert remember_speedup("encode probe", lambda: 1.5, path=path) == 1.5
    assert remember_speedup("encode probe", lambda: pytest.fail("measured again"), path=path) == 1.5
    assert remember_speedup("another probe", lambda: 0.8, path=path) == 0.8
    kept = json.loads(path.read_text())
    assert len(kept) == 2 and all(measurement_memory.machine_key() in key for key in kept)
    assert {round(entry["speedup"], 2) for entry in kept.values()} == {1.5, 0.8}


def test_another_thread_count_is_another_machine(tmp_path, monkeypatch):
    path = tmp_path / "bf16_speedups.json"
    remember_speedup("probe", lambda: 1.5, path=path)
    monkeypatch.setattr(measurement_memory, "machine_key", lambda: "another CPU | torch x | 1 threads")
    assert remember_speedup("probe", lambda: 0.9, path=path) == 0.9


def test_a_damaged_or_unwritable_file_only_means_measuring(tmp_path):
    damaged = tmp_path / "bf16_speedups.json"
    damaged.write_text("{not json")
    assert remember_speedup("probe", lambda: 1.3, path=damaged) == 1.3
    assert json.loads(damaged.read_text())  # rewritten whole
    blocked = tmp_path / "a_file" / "bf16_speedups.json"
    (tmp_path / "a_file").write_text("not a folder")
    assert remember_speedup("probe", lambda: 1.1, path=blocked) == 1.1


def test_the_file_lives_in_the_user_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert measurement_memory.memory_file() == tmp_path / "hfsiamese" / "bf16_speedups.json"


def test_only_a_process_that_opted_in_remembers_and_a_pin_wins(monkeypatch, unpin_machine_decisions):
    monkeypatch.setattr(encode_precision, "_memory", {"remember": None})
    assert remembered_speedup("probe", lambda: 2.0) == 2.0  # nothing kept: measured
    kept = {}
    encode_precision.set_speedup_memory(lambda key, measure: kept.setdefault(key, measure()))
    assert remembered_speedup("probe", lambda: 2.0) == 2.0 and remembered_speedup("probe", lambda: 0.5) == 2.0
    monkeypatch.setenv(encode_precision.PINNED_SPEEDUP, "0.7")
    assert (
        remembered_speedup("probe", lambda: 0.7) == 0.7
    )  # the pinned figure (applied by the measurement), not the kept 2.0


def test_encode_auto_decides_alike_in_a_new_process(monkeypatch, tmp_path, tiny_transformer, unpin_machine_decisions):
    """A flipping probe (as on an AMX Xeon): the second 'process' reuses the first's measurement."""
    monkeypatch.setattr(encode_precision, "_memory", {"remember": None})
    monkeypatch.setattr(encode_precision, "native_cpu_bf16", lambda: True)
    flips = iter([3.0, 0.5])
    monkeypatch.setattr(encode_precision, "_measured_speedup", lambda *a: next(flips))
    path = tmp_path / "bf16_speedups.json"
    encode_precision.set_speedup_memory(lambda key, measure: remember_speedup(key, measure, path=path))
    first = tiny_transformer.encode_precision()
    tiny_transformer.__dict__.pop("_encode_precisions")  # a new process: nothing decided on the model
    second = tiny_transformer.encode_precision()
    assert first.dtype == second.dtype == torch.bfloat16 and "3.00×" in second.reason
