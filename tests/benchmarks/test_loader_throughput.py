"""The loader-only benchmark runs on a prepared folder and counts the pairs its batches hold (its speed is not tested)."""

from __future__ import annotations

import json

from benchmarks.training.loader_throughput import main
from hfsiamese.preparation import prepare_pairs
from tests.conftest import QQP_FILE


def test_the_loader_benchmark_counts_the_pairs_of_its_tokenised_batches(tmp_path):
    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    result = main(["--prepared", str(tmp_path / "prepared"), "--batch_size", "16", "--batches", "5", "--warmup", "1",
                   "--num_workers", "1", "--output_dir", str(tmp_path)])  # fmt: skip
    assert result["pairs_measured"] == 5 * 16 and result["num_workers"] == 1
    assert result["pairs_per_second"] > 0 and result["training_pairs"] > 1000
    saved = json.loads((tmp_path / "loader_throughput.json").read_text())
    assert saved["pairs_measured"] == 80
    assert "| training pairs | batch | workers | pairs/s |" in (tmp_path / "loader_throughput.md").read_text()
