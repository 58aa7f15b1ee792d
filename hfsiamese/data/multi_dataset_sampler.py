"""
Several data sets in one training run: which data set each step draws its batch from.

Each data set keeps its own index sampler (the group-aware `NoDuplicateGroupSampler`, so no batch holds two
pairs of one duplicate group); this sampler interleaves their batches, whole, so that no batch mixes two data
sets and each batch can go to its own data set's loss. Like `NoDuplicateGroupSampler` it is a flat index
sampler: the DataLoader cuts its output into batches of `batch_size`, so the batch structure lives in the order.

Under several processes accelerate deals batch `k` to process `k % num_processes`: here the `num_processes`
batches of one optimisation step always come from the same data set (a "block"), so that every process runs
the same loss at a step and the gradients averaged over processes are of one loss. The order of an epoch is a
pure function of `(seed, epoch)`, the same on every process.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol

import numpy as np
import torch

from hfsiamese.data.sampler import iterate_indices

__all__ = ["MULTI_DATASET_SAMPLING", "MultiDatasetSampler", "apportion", "check_weights"]

MULTI_DATASET_SAMPLING = ("proportional", "round_robin")


class EpochSampler(Protocol):
    """An index sampler whose order is a function of the epoch, read as an array (as `NoDuplicateGroupSampler`)."""

    def epoch_order(self, epoch: int) -> np.ndarray: ...
    def __len__(self) -> int: ...


class MultiDatasetSampler(torch.utils.data.Sampler[int]):
    """
    Indices into the data sets laid end to end (data set `i` starts at `offsets[i]`), whose consecutive chunks of
    `batch_size` each come from one data set, in blocks of `num_processes` chunks from the same data set.

    - `"round_robin"`: the data sets take turns, in the order given, one block each; the epoch ends when the
      smallest has given all its blocks, so each data set trains the same number of steps.
    - `"proportional"`: each step's data set is drawn at random; without `weights` each data set gives each of its
      blocks once per epoch (steps in proportion to its size); with `weights` the epoch keeps that many steps,
      shared in proportion to the weights (exactly, up to rounding), a data set drawn more often than it has
      blocks starting a fresh pass over its pairs.

    Each data set gives whole blocks only: the pairs of its last, incomplete block wait for another epoch (its
    sampler's order changes every epoch). A data set too small for one block is refused.
    """

    def __init__(
        self,
        samplers: Sequence[EpochSampler],
        offsets: Sequence[int],
        batch_size: int,
        *,
        strategy: str = "proportional",
        weights: Sequence[float] | None = None,
        names: Sequence[str] | None = None,
        seed: int = 0,
        num_processes: int = 1,
    ) -> None:
        if strategy not in MULTI_DATASET_SAMPLING:
            raise ValueError(f"multi_dataset_sampling must be one of {MULTI_DATASET_SAMPLING}, got {strategy!r}")
        if len(samplers) != len(offsets) or not samplers:
            raise ValueError("give one offset per data set, and at least one data set")
        self.names = list(names) if names is not None else [str(i) for i in range(len(samplers))]
        if weights is not None:
            check_weights(dict(zip(self.names, weights, strict=True)), strategy)
        self.samplers = list(samplers)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.batch_size = int(batch_size)
        self.block = self.batch_size * int(num_processes)  # the indices of one step over all processes
        self.strategy = strategy
        self.seed = int(seed)
        self.epoch = 0
        self.blocks = np.asarray([len(sampler) // self.block for sampler in self.samplers], dtype=np.int64)
        small = np.flatnonzero(self.blocks == 0)
        if small.size:
            i = int(small[0])
            raise ValueError(
                f"data set {self.names[i]!r} has {len(self.samplers[i])} pairs to batch, fewer than one step of "
                f"{self.batch_size} per process × {num_processes} processes"
            )
        if strategy == "round_robin":
            self.steps = np.full(len(self.samplers), self.blocks.min())
        elif weights is None:
            self.steps = self.blocks.copy()
        else:
            self.steps = apportion(int(self.blocks.sum()), np.asarray(weights, dtype=np.float64))
        # A data set's passes over its pairs in one epoch; pass k of epoch e orders it as its sampler's epoch
        # e * passes + k, so that no two (epoch, pass) share an order.
        self.passes = int(max(math.ceil(s / b) for s, b in zip(self.steps, self.blocks, strict=True)))

    def set_epoch(self, epoch: int) -> None:
        """Use the order of `epoch` on the next iteration (a function of `(seed, epoch)` only)."""
        if int(epoch) != epoch or epoch < 0:
            raise ValueError(f"epoch must be a non-negative integer, got {epoch!r}")
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return int(self.steps.sum()) * self.block

    def schedule(self, epoch: int) -> np.ndarray:
        """The data set of each step of `epoch`, one entry per block of `num_processes` batches."""
        if self.strategy == "round_robin":
            return np.tile(np.arange(len(self.samplers)), int(self.steps[0]))
        rng = np.random.default_rng([self.seed, epoch])
        return rng.permutation(np.repeat(np.arange(len(self.samplers)), self.steps))

    def __iter__(self) -> Iterator[int]:
        schedule = self.schedule(self.epoch)
        blocks = [self._blocks_of(i, int(self.steps[i])) for i in range(len(self.samplers))]
        # The k-th time data set i is scheduled, it gives its k-th block.
        rank = np.zeros(len(schedule), dtype=np.int64)
        for i in range(len(self.samplers)):
            at = schedule == i
            rank[at] = np.arange(int(at.sum()))
        order = np.concatenate([blocks[i][k] for i, k in zip(schedule.tolist(), rank.tolist(), strict=True)])
        return iterate_indices(order)

    def _blocks_of(self, i: int, count: int) -> np.ndarray:
        """`count` blocks of data set `i` (rows of `block` global indices), in its sampler's order, pass after pass."""
        sampler, per_pass = self.samplers[i], int(self.blocks[i])
        rows = []
        for k in range(math.ceil(count / per_pass)):
            order = sampler.epoch_order(self.epoch * self.passes + k)[: per_pass * self.block]
            rows.append(order.reshape(per_pass, self.block))
        return np.concatenate(rows)[:count] + self.offsets[i]


def check_weights(weights: Mapping[str, float], strategy: str) -> None:
    """Weights name positive numbers, and only for proportional sampling: a one-line error otherwise."""
    if strategy != "proportional":
        raise ValueError("data set weights apply to multi_dataset_sampling='proportional' only")
    for name, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight <= 0:
            raise ValueError(f"data set weights must be positive numbers, got {weight!r} for {name!r}")


def apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """`total` split in proportion to `weights` (largest remainders; each part at least 1)."""
    share = total * weights / weights.sum()
    parts = np.floor(share).astype(np.int64)
    parts[np.argsort(-(share - parts), kind="stable")[: total - int(parts.sum())]] += 1
    return np.maximum(parts, 1)
