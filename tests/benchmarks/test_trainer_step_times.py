"""The Trainer step-time benchmark runs `hfsiamese train` on a CPU: a row per batch size and precision, every step
timed but the profiled ones, one profile (its speed is not tested)."""

from __future__ import annotations

import json

from benchmarks.training import trainer_step_times
from hfsiamese.cli import train as train_command


def test_each_step_is_timed_once_and_five_are_profiled_once(tiny_bert_dir, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    original = train_command.train_evaluate_save
    rows = trainer_step_times.main(["--device", "cpu", "--batch_sizes", "8", "--precisions", "fp32", "--steps", "24",
                                    "--model", str(tiny_bert_dir), "--max_length", "24"])  # fmt: skip
    assert [(row["batch_size"], row["precision"]) for row in rows] == [(8, "fp32")]
    row = rows[0]
    assert row["steps_timed"] == 24 - trainer_step_times.PROFILED_STEPS  # profiled once, those steps left out
    assert row["step_ms_steady"] > 0 and row["pairs_per_s_steady"] > 0 and row["distinct_widths"] >= 1
    assert row["steps_new_widths"] == row["distinct_widths"]
    assert row["profile"]["host_self_ms"] and "kernel_ms" not in row["profile"]  # no GPU: host operations only
    assert len(row["longest_gaps_ms"]) == 5
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith('{"machine"')]
    assert [line["batch_size"] for line in printed] == [8]
    assert train_command.train_evaluate_save is original  # the timer's wrapper is taken off again
