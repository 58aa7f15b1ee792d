"""The step-profile benchmark runs its loop on a CPU: a row per batch size and precision (its speed is not tested)."""

from __future__ import annotations

import json

import torch

from benchmarks.training.step_profile import main


def test_each_batch_size_and_precision_gets_a_row_and_tf32_is_left_as_found(tiny_bert_dir, capsys):
    before = torch.backends.cuda.matmul.allow_tf32
    rows = main(["--device", "cpu", "--batch_sizes", "4", "8", "--length", "12", "--padded", "--attention", "eager",
                 "--steps", "2", "--warmup", "1", "--model", str(tiny_bert_dir)])  # fmt: skip
    assert [(row["batch_size"], row["precision"]) for row in rows] == [
        (4, "fp32"),
        (4, "bf16"),
        (8, "fp32"),
        (8, "bf16"),
    ]
    assert all(row["step_ms"] > 0 and row["pairs_per_s"] > 0 for row in rows)
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["precision"] for line in printed] == ["fp32", "bf16", "fp32", "bf16"] and printed[0]["padded"]
    assert torch.backends.cuda.matmul.allow_tf32 == before
