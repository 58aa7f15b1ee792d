"""`LossStatistics`: device tensors added per step, means read at a log."""

import pytest
import torch

from hfsiamese.base.loss_statistics import LossStatistics


def test_means_since_the_last_log():
    statistics = LossStatistics()
    assert not statistics
    statistics.add({"negatives_hard": torch.tensor(3), "triplet": torch.tensor(0.25)})
    statistics.add({"negatives_hard": torch.tensor(4), "triplet": torch.tensor(0.5)})
    assert statistics.pop_means() == {"negatives_hard": 3.5, "triplet": pytest.approx(0.375)}
    assert not statistics and statistics.pop_means() == {}
    statistics.add({"triplet": torch.tensor(1 / 3)})
    assert statistics.pop_means() == {"triplet": 0.3333}
