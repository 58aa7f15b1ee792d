"""The loss's statistics between two logs: kept on the device each step, read on the host only when logged."""

from __future__ import annotations

import torch


class LossStatistics:
    """
    Collects the ``stats`` of every training loss computation (0-d device tensors) and gives their
    means since the last log. Nothing is copied to the host per step, so a step never waits for the
    device just to count negatives.
    """

    def __init__(self) -> None:
        self._values: dict[str, list[torch.Tensor]] = {}

    def add(self, stats: dict[str, torch.Tensor]) -> None:
        for name, value in stats.items():
            self._values.setdefault(name, []).append(value.detach())

    def pop_means(self, digits: int = 4) -> dict[str, float]:
        """The mean of each statistic since the last call, rounded to `digits` (and the collection emptied)."""
        means = {}
        for name, values in self._values.items():
            host = torch.stack(values).tolist()  # one transfer per statistic
            means[name] = round(sum(float(v) for v in host) / len(host), digits)
        self._values = {}
        return means

    def __bool__(self) -> bool:
        return bool(self._values)


__all__ = ["LossStatistics"]
