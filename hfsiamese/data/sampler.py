"""
A sampler that keeps duplicates of one another out of the same batch.

In-batch-negative losses (multiple negatives ranking, contrastive with in-batch negatives) treat
every other pair of the batch as a negative. If two pairs of one duplicate group share a batch,
a true duplicate is pushed away as a negative. `NoDuplicateGroupSampler` orders the data so that
each batch holds at most one pair per group. PyTorch and transformers offer group-*aware*
samplers (e.g. length grouping) but none that spreads a group *across* batches, hence this one.

It is a plain index sampler: the DataLoader chunks its flat output into batches of
`batch_size`, so the batch structure lives in the order of the indices.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Sequence

import datasets
import numpy as np
import torch

from hfsiamese.data.packed_sorts import dense_rank, index_type, lexsort_int_fraction
from hfsiamese.data.question_identity import column_arrow
from hfsiamese.data.uniform_draws import UniformDraws

__all__ = ["NoDuplicateGroupSampler", "iterate_indices"]


# Batches dealt at a time: temporaries of a block, never of the epoch.
_BATCH_BLOCK = 1 << 13


class NoDuplicateGroupSampler(torch.utils.data.Sampler[int]):
    """
    Yield dataset indices whose consecutive chunks of `batch_size` hold at most one pair per group.

    Guarantees, for every epoch: each index at most once; all batches full except possibly the
    last; a last batch of one pair is dropped (in-batch negatives need two), and with `drop_last`
    any incomplete last batch; `len(self)` is the number of indices yielded, the same every
    epoch. The order of an epoch is a pure function of `(seed, epoch)`: it draws only from its
    own generator seeded with both (never from the global RNGs, never from earlier epochs), so a run
    resumed mid-epoch replays the same batches (the Trainer and accelerate call `set_epoch`, then
    skip the batches already trained on). Nothing depends on the process rank: accelerate shards
    whole batches.

    When no such batching holds every pair (a group with more pairs than there are batches), each
    epoch uses a random subset of the largest feasible size of every oversized group, with a
    warning; over epochs all pairs are used.
    """

    def __init__(
        self,
        group_ids: Sequence[int] | np.ndarray,
        batch_size: int,
        *,
        seed: int = 0,
        drop_last: bool = False,
        lengths: Sequence[int] | np.ndarray | None = None,
    ) -> None:
        if int(batch_size) != batch_size or batch_size < 2:
            raise ValueError(
                f"batch_size must be an integer >= 2 (in-batch negatives need two pairs), got {batch_size}"
            )
        groups = _as_int_array(group_ids)
        if groups.ndim != 1:
            raise ValueError(f"group_ids must be one-dimensional, got shape {groups.shape}")
        if len(groups) == 0:
            raise ValueError("group_ids is empty: nothing to sample")
        if int(seed) != seed or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.drop_last = bool(drop_last)
        self.epoch = 0
        self.num_samples = len(groups)
        self._group_values, self._group_index, self._group_sizes = _numbered_groups(groups)
        self.max_pairs_per_group = _largest_feasible_cap(self._group_sizes, self.batch_size)
        if self.max_pairs_per_group is not None:
            # A group with more pairs than an epoch has batches cannot be spread over the epoch:
            # each epoch then uses a fresh random subset of its pairs (all of them over epochs).
            self._kept_sizes = np.minimum(self._group_sizes, self.max_pairs_per_group)
            largest = int(np.argmax(self._group_sizes))
            warnings.warn(
                f"duplicate group {self._group_value(largest)!r} has {int(self._group_sizes[largest])} pairs, more "
                f"than fit in one epoch of batch_size={self.batch_size} without a group twice in a batch: each epoch uses "
                f"a random {self.max_pairs_per_group} pairs of every such group "
                f"({int((self._group_sizes > self.max_pairs_per_group).sum())} groups)",
                UserWarning,
                stacklevel=2,
            )
        else:
            self._kept_sizes = self._group_sizes
        self.num_kept = int(self._kept_sizes.sum())
        self.num_batches = math.ceil(self.num_kept / self.batch_size)
        self._lengths = None
        if lengths is not None:
            self._lengths = np.asarray(lengths, dtype=np.float64)
            if self._lengths.shape != (self.num_samples,):
                raise ValueError(
                    f"lengths must give one length per pair ({self.num_samples}), got shape {self._lengths.shape}"
                )

    # ----------------------------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """Use the order of `epoch` on the next iteration (a function of `(seed, epoch)` only)."""
        if int(epoch) != epoch or epoch < 0:
            raise ValueError(f"epoch must be a non-negative integer, got {epoch!r}")
        self.epoch = int(epoch)

    def __len__(self) -> int:
        full, rest = divmod(self.num_kept, self.batch_size)
        keep_rest = rest if (rest >= 2 and not self.drop_last) else 0
        return full * self.batch_size + keep_rest

    def __iter__(self) -> Iterator[int]:
        return iterate_indices(self.epoch_order(self.epoch))

    def epoch_order(self, epoch: int) -> np.ndarray:
        """The indices epoch `epoch` yields, as one integer array (what `__iter__` yields after `set_epoch(epoch)`)."""
        if self._lengths is not None:
            order = self._length_grouped_order(epoch)
            if order is not None:
                return order
        return self._epoch_order(epoch)

    def _length_grouped_order(self, epoch: int) -> np.ndarray | None:
        """
        Batches of similar lengths (so that little padding is computed), still one pair per group.

        The kept pairs are sorted by length with a ±10% random jitter (so batches differ between
        epochs) and cut into consecutive batches; a pair whose group is already in the batch being
        filled waits for the next one (`_fill_batches`). Pairs still waiting at the end are swapped
        into earlier batches that lack their group (`_swap_into_place`). The order of the full batches
        is shuffled (bucket, then shuffle buckets), so an epoch does not run from short to long. Returns
        None if the repair fails (pathological group structures); the caller then uses the length-blind
        order. Arrays throughout: no Python object per pair, whatever the number of pairs.
        """
        rng = self._generator(epoch)
        kept = self._kept_indices(rng)
        jitter = 1.0 + 0.2 * (rng.random(len(kept)) - 0.5)
        stream = kept[np.argsort(self._lengths[kept] * jitter, kind="stable")]
        size, nb = self.batch_size, self.num_batches
        targets = np.full(nb, size, dtype=np.int64)
        targets[-1] = self.num_kept - (nb - 1) * size
        batches, fill, waiting = _fill_batches(stream, self._group_index, targets)
        if not _swap_into_place(batches, fill, targets, waiting, self._group_index):
            return None
        rows = rng.permutation(nb - 1) if nb > 1 else np.empty(0, dtype=np.int64)
        if targets[-1] == size:
            rows = np.append(rows, nb - 1)
        tail = batches[nb - 1, : targets[-1]] if targets[-1] < size else batches[:0, 0]
        return np.concatenate([batches[rows].ravel(), tail])[: len(self)]

    # ----------------------------------------------------------------------------------------
    def _epoch_order(self, epoch: int) -> np.ndarray:
        """
        The construction (all vectorised numpy):

        1. Concatenate the groups, largest first (ties in random order), pairs in random order
           inside each group. A group therefore fills consecutive positions of the sequence.
        2. Deal the sequence into `nb = ceil(n / B)` batches column-wise, as if filling a grid
           of B rows (positions in a batch) by nb columns (batches) row by row; the last batch
           has only `rest` cells, so rows `rest..B-1` have nb - 1 cells. Two cells of one batch
           are then at least nb - 1 positions apart in the sequence (nb in full rows), so a group
           of <= nb - 1 pairs never meets itself, and one of exactly nb pairs does not either when
           it starts in a full row: putting the largest groups first puts them there (and
           `_largest_feasible_cap` has made sure there are enough full rows for them).
        3. Shuffle the order of the full batches and the order inside each batch; the incomplete
           batch, if kept, comes last so that the DataLoader's chunks are exactly our batches.
        """
        rng = self._generator(epoch)
        n, nb, size = self.num_kept, self.num_batches, self.batch_size
        # Uncapped, every pair is kept: the group column itself, and the sort's output is the sequence (no copies:
        # the temporaries of an epoch are what its peak memory is made of, with millions of pairs).
        kept = self._kept_indices(rng) if self.max_pairs_per_group is not None else None
        gid = self._group_index if kept is None else self._group_index[kept]
        # Sorted by (largest first, group key, a random key per pair): the groups' place in that order is ranked over
        # the groups first, so the sort over every pair has two keys, not three (the same order: equal ranks where
        # size and key tie; less time and memory with tens of millions of pairs). The random keys are the generator's
        # draws read by position (`UniformDraws`), made again where needed instead of held: 8 bytes a pair less, twice.
        group_rank = dense_rank(-self._kept_sizes, UniformDraws(rng, len(self._group_sizes)))
        sequence = lexsort_int_fraction(group_rank, UniformDraws(rng, n), through=gid)
        del group_rank
        if kept is not None:
            sequence = kept[sequence]
        del kept, gid

        rest = n - (nb - 1) * size  # cells of the last batch, 1..size
        has_partial = rest < size
        n_full = nb - 1 if has_partial else nb
        batch_rank = np.empty(nb, dtype=index_type(n))
        batch_rank[:n_full] = rng.permutation(n_full)
        if has_partial:
            batch_rank[nb - 1] = nb - 1  # the short batch goes last
        return _dealt_in_batches(sequence, nb, size, batch_rank, UniformDraws(rng, n))[: len(self)]

    def _group_value(self, number: int) -> int:
        """The caller's id of group `number` (the numbers are the ids themselves where those were 0..G-1)."""
        return number if self._group_values is None else self._group_values[number].item()

    def _generator(self, epoch: int) -> np.random.Generator:
        # Seeded with the pair (seed, epoch), not their sum: seed 1 epoch 0 and seed 0 epoch 1 must differ.
        return np.random.default_rng([self.seed, epoch])

    def _kept_indices(self, rng: np.random.Generator) -> np.ndarray:
        """All indices, or, when groups are capped, a random `max_pairs_per_group` of each group."""
        if self.max_pairs_per_group is None:
            return np.arange(self.num_samples)
        shuffled = rng.permutation(self.num_samples)
        by_group = shuffled[np.argsort(self._group_index[shuffled], kind="stable")]
        sorted_groups = self._group_index[by_group]
        starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
        rank_in_group = np.arange(self.num_samples) - np.repeat(starts, np.diff(np.r_[starts, self.num_samples]))
        return np.sort(by_group[rank_in_group < self.max_pairs_per_group])


def _dealt_in_batches(
    sequence: np.ndarray, nb: int, size: int, batch_rank: np.ndarray, key: np.ndarray | UniformDraws
) -> np.ndarray:
    """
    The `n` items of an epoch's `sequence` dealt column-wise into `nb` batches (see `_epoch_order`), the batches in
    the order of their rank, the items of a batch in the order of `key` (a key per position of the sequence; then by
    position): `sequence[np.lexsort((key, batch_rank[batch]))]`. Made a block of consecutive batches at a time, each
    batch sorted on its own (one sort over tens of millions of positions was most of the wait before a large run's
    first step) and written straight to its place in the result (a full batch of rank r at r * size, the short one
    last), so that no array of the epoch is made but that result. A row of the grid is a run of consecutive positions
    over consecutive batches, so the keys are read as slices of `key` (the random keys need not be held at all).
    """
    n = len(sequence)
    rest = n - (nb - 1) * size
    full_rows = rest if rest < size else size  # rows of the grid every batch has a cell in
    positions_type = index_type(n)
    in_full_rows = full_rows * nb
    columns = np.arange(size, dtype=positions_type)
    result = np.empty(n, dtype=sequence.dtype)
    for first in range(0, nb, _BATCH_BLOCK):
        last = min(first + _BATCH_BLOCK, nb)
        # Cells the last batch lacks when it is short hold position n, keyed last and dropped.
        members = np.full((last - first, size), n, dtype=positions_type)
        keys = np.full((last - first, size), np.inf)
        for row in range(size):
            if row < full_rows:
                start, count = row * nb + first, last - first
            else:  # rows only the first nb - 1 batches reach
                start, count = in_full_rows + (row - full_rows) * (nb - 1) + first, min(last, nb - 1) - first
            if count > 0:
                members[:count, row] = np.arange(start, start + count, dtype=positions_type)
                keys[:count, row] = key[start : start + count]
        members = np.take_along_axis(members, np.argsort(keys, axis=1, kind="stable"), axis=1)
        places = batch_rank[first:last].astype(np.int64)[:, None] * size + columns
        present = members < n
        result[places[present]] = sequence[members[present]]
    return result


def iterate_indices(order: np.ndarray, chunk: int = 65_536) -> Iterator[int]:
    """The indices of `order` as Python ints, converted a chunk at a time: never a Python list of a whole epoch."""
    for start in range(0, len(order), chunk):
        yield from order[start : start + chunk].tolist()


def _fill_batches(
    stream: np.ndarray, group: np.ndarray, targets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """
    Batches filled in turn from `stream` (pair indices, in length order): each takes, in stream order, the first
    pairs of distinct groups among the pairs still unplaced, up to its target. Returns the batches (a matrix of
    `targets.max()` columns, row `k` holding `fill[k]` pairs in the order taken), `fill`, and the pairs left over,
    in stream order. One pass of array operations per batch over a window of the stream and the pairs waiting.
    """
    batches = np.full((len(targets), int(targets.max())), -1, dtype=np.int64)
    fill = np.zeros(len(targets), dtype=np.int64)
    waiting = np.empty(0, dtype=np.int64)  # positions in `stream`, ascending
    position = 0  # the stream is read up to here
    stream_groups = group[stream]
    for k, target in enumerate(targets.tolist()):
        end = position
        while True:
            end = min(len(stream), end + target + 1)
            window = np.concatenate([waiting, np.arange(position, end)])
            first = np.zeros(len(window), dtype=bool)  # the first pair of each group in the window
            first[np.unique(stream_groups[window], return_index=True)[1]] = True
            taken = np.flatnonzero(first)[:target]
            if len(taken) == target or end == len(stream):
                break
        batches[k, : len(taken)] = stream[window[taken]]
        fill[k] = len(taken)
        left = np.ones(len(window), dtype=bool)
        left[taken] = False
        if len(taken) == target:  # the pairs after the last one taken stay unread (or waiting)
            last = int(taken[-1]) if len(taken) else -1
            left &= (np.arange(len(window)) <= last) | (np.arange(len(window)) < len(waiting))
            if last >= len(waiting):
                position = int(window[last]) + 1
        else:
            position = end
        waiting = window[left]
    return batches, fill, stream[waiting]


def _swap_into_place(
    batches: np.ndarray, fill: np.ndarray, targets: np.ndarray, waiting: np.ndarray, group: np.ndarray
) -> bool:
    """
    Put each waiting pair into a full batch lacking its group (the last such batch whose pair can move), moving
    that batch's first such pair to the first short batch lacking its group; False when one cannot be placed.
    (A short batch never lacks a waiting pair's group: it was filled with the stream exhausted, every pair still
    waiting then being skipped for its group. So no waiting pair goes straight into a short batch.)
    """
    for index in waiting.tolist():
        g = group[index]
        short = np.flatnonzero(fill < targets)
        short_groups = [group[batches[d, : fill[d]]] for d in short]
        placed = False
        for k in reversed(range(len(batches))):
            members = group[batches[k, : fill[k]]]
            if fill[k] < targets[k] or (members == g).any():
                continue
            # movable[d, slot]: the pair at `slot` may go to short batch d (which lacks its group)
            movable = np.stack([~np.isin(members, groups) for groups in short_groups])
            slots = np.flatnonzero(movable.any(axis=0))
            if not slots.size:
                continue
            slot = int(slots[0])
            d = int(short[np.argmax(movable[:, slot])])
            batches[d, fill[d]] = batches[k, slot]
            fill[d] += 1
            batches[k, slot] = index
            placed = True
            break
        if not placed:
            return False
    return True


def _largest_feasible_cap(sizes: np.ndarray, batch_size: int) -> int | None:
    """None when every pair fits in one epoch; else the largest per-group cap for which it does."""

    def feasible(cap: int) -> bool:
        kept = np.minimum(sizes, cap)
        largest = int(kept.max())
        return _infeasibility(largest, int(np.count_nonzero(kept == largest)), int(kept.sum()), batch_size) is None

    largest = int(sizes.max())
    if feasible(largest):
        return None
    # Shrinking the cap also shrinks the number of batches, so feasibility need not be monotone:
    # search downwards. cap = 1 always works (one pair per group cannot meet itself).
    return next(cap for cap in range(largest - 1, 0, -1) if feasible(cap))


def _infeasibility(largest: int, n_largest: int, n: int, batch_size: int) -> str | None:
    """Why no batching with at most one pair per group per batch exists, or None if one does."""
    nb = math.ceil(n / batch_size)
    if largest > nb:
        return f"a group may hold at most {nb} pairs (one per batch)"
    rest = n - (nb - 1) * batch_size
    if rest < batch_size and largest == nb and n_largest > rest:
        # A group of nb pairs needs one cell in every batch, the short last one included.
        return (
            f"{n_largest} groups hold {nb} pairs (one in every batch) but the last, "
            f"incomplete batch has room for only {rest}"
        )
    return None


def _numbered_groups(groups: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """
    `np.unique(groups, return_inverse=True)` and the groups' sizes; group numbers and sizes int32 where the counts
    allow (the sampler keeps them for the whole run: 4 bytes a pair, not 8). Where the ids are already 0..G-1, each
    used (as a prepared folder numbers its groups), those are the ids themselves: one count instead of a sort of every
    pair (9 s of the wait before the first step at 36M pairs), and no values array (None: a group's number is its id).
    """
    if (groups.dtype.kind == "i" or groups.dtype.itemsize < 8) and groups.min() == 0 and groups.max() < len(groups):
        sizes = np.bincount(groups)
        if sizes.all():  # a writable array may be the caller's, which the sampler must not share
            kind = index_type(max(len(sizes), len(groups)))
            index = groups.astype(kind, copy=bool(groups.flags.writeable))
            return None, index, sizes.astype(kind)
    values, index = np.unique(groups, return_inverse=True)
    kind = index_type(max(len(values), len(groups)))
    return values, index.astype(kind, copy=False), np.bincount(index).astype(kind)


def _as_int_array(group_ids: Sequence[int] | np.ndarray) -> np.ndarray:
    if isinstance(group_ids, torch.Tensor):
        array = group_ids.detach().cpu().numpy()
    elif isinstance(group_ids, np.ndarray):
        array = group_ids
    elif isinstance(getattr(group_ids, "source", None), datasets.Dataset) and hasattr(group_ids, "column_name"):
        # A `datasets` Column (`dataset["group_id"]`): read it as one Arrow column; np.asarray
        # would iterate it row by row (seconds per 100k rows).
        array = column_arrow(group_ids.source, group_ids.column_name).to_numpy()  # type: ignore[attr-defined]
    else:
        try:
            values = group_ids[:]  # type: ignore[index]  # one read for sliceable containers
        except TypeError:
            values = list(group_ids)
        array = np.asarray(values)
    if array.dtype.kind not in "iu":
        raise ValueError(f"group_ids must be integers, got dtype {array.dtype}")
    return array
