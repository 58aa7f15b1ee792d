"""The sampler memory benchmark on a prepared folder: its figures are positive and its checksum is the epoch's own."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.training.sampler_memory import main
from hfsiamese.bi_encoder.batch_sampling import training_sampler
from hfsiamese.preparation import load_prepared_splits, prepare_pairs
from tests.conftest import QQP_FILE


def test_the_sampler_benchmark_reports_bytes_a_pair_and_the_epochs_checksum(tmp_path):
    prepare_pairs(QQP_FILE, tmp_path / "prepared")
    result = main(["--prepared", str(tmp_path / "prepared"), "--batch_size", "32", "--seed", "3"])
    train = load_prepared_splits(str(tmp_path / "prepared"))["train"]
    assert result["training_pairs"] == len(train)
    assert 0 < result["kept_bytes_per_pair"] <= result["epoch_peak_bytes_per_pair"]
    order = training_sampler(train, batch_size=32, seed=3).epoch_order(0).astype(np.int64)
    weights = np.arange(len(order), dtype=np.int64) % 1_000_003
    assert result["order_checksum"] == int((order * weights % 1_000_003).sum())


def test_a_missing_folder_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--prepared", str(tmp_path / "absent")])
    assert "is not a folder" in capsys.readouterr().err
