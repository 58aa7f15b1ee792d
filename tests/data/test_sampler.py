"""NoDuplicateGroupSampler: batch invariants, lengths, epochs, errors, and the DataLoader chunking."""

from __future__ import annotations

import itertools
import math
import tracemalloc

import datasets
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from hfsiamese.data import NoDuplicateGroupSampler
from hfsiamese.data.packed_sorts import lexsort_int_fraction


def random_groups(seed: int) -> tuple[np.ndarray, int]:
    """A random group structure (many singletons, some large groups) and a batch size it allows."""
    rng = np.random.default_rng(seed)
    batch_size = int(rng.integers(2, 33))
    n = int(rng.integers(batch_size, 600))
    sizes = []
    limit = max(1, math.ceil(n / batch_size) - 1)  # any group up to nb - 1 pairs always fits
    while sum(sizes) < n:
        sizes.append(int(min(rng.geometric(0.35), limit, n - sum(sizes))))
    groups = np.repeat(rng.permutation(len(sizes)) * 7 + 3, sizes)  # arbitrary, non-contiguous ids
    return rng.permutation(groups), batch_size


def check_epoch(sampler: NoDuplicateGroupSampler, groups: np.ndarray) -> list[int]:
    order = list(sampler)
    size = sampler.batch_size
    assert len(order) == len(sampler)
    assert len(set(order)) == len(order), "an index repeats"
    assert all(0 <= i < len(groups) for i in order)
    batches = [order[k : k + size] for k in range(0, len(order), size)]
    assert all(len(b) == size for b in batches[:-1])
    assert not batches or len(batches[-1]) >= 2
    for batch in batches:
        batch_groups = groups[batch]
        assert len(set(batch_groups.tolist())) == len(batch), f"a group twice in batch {batch_groups}"
    return order


@pytest.mark.parametrize("seed", range(12))
def test_random_group_structures(seed):
    groups, batch_size = random_groups(seed)
    sampler = NoDuplicateGroupSampler(groups, batch_size, seed=seed)
    lengths = set()
    for epoch in range(3):
        sampler.set_epoch(epoch)
        check_epoch(sampler, groups)
        lengths.add(len(sampler))
    assert len(lengths) == 1


def test_lengths_and_tails():
    groups = np.arange(10)
    assert len(NoDuplicateGroupSampler(groups, 4)) == 10  # 4 + 4 + 2
    assert len(NoDuplicateGroupSampler(groups, 4, drop_last=True)) == 8
    assert len(NoDuplicateGroupSampler(groups, 5)) == 10
    assert len(NoDuplicateGroupSampler(np.arange(9), 4)) == 8  # a last batch of one is dropped
    assert len(list(NoDuplicateGroupSampler(np.arange(9), 4))) == 8
    assert len(NoDuplicateGroupSampler(np.arange(3), 4)) == 3  # one short batch
    assert len(NoDuplicateGroupSampler(np.arange(3), 4, drop_last=True)) == 0
    assert list(NoDuplicateGroupSampler(np.arange(1), 4)) == []
    # Every index is used when nothing is dropped.
    assert sorted(NoDuplicateGroupSampler(groups, 4)) == list(range(10))


def test_epochs_differ_and_are_reproducible():
    groups, batch_size = random_groups(99)
    one = NoDuplicateGroupSampler(groups, batch_size, seed=5)
    two = NoDuplicateGroupSampler(groups, batch_size, seed=5)
    first = list(one)
    one.set_epoch(1)
    second = list(one)
    assert first != second
    assert len(first) == len(second)
    two.set_epoch(1)
    assert list(two) == second
    assert list(two) == second  # iterating again without set_epoch repeats the epoch
    assert list(NoDuplicateGroupSampler(groups, batch_size, seed=6)) != first


def test_group_filling_every_batch_with_a_short_last_batch():
    # n=10, B=4: batches of 4, 4, 2. Two groups of 3 pairs need a cell in each batch, the short
    # one included: possible, and needs the largest groups placed first.
    groups = np.array([0, 0, 0, 1, 1, 1, 2, 3, 4, 5])
    sampler = NoDuplicateGroupSampler(groups, 4)
    for epoch in range(30):
        sampler.set_epoch(epoch)
        check_epoch(sampler, groups)
    # Three such groups cannot fit (the short batch has room for two): each epoch takes 2 of each.
    with pytest.warns(UserWarning, match="a random 2 pairs of every such group"):
        capped = NoDuplicateGroupSampler(np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 3]), 4)
    assert len(capped) == 7


def feasible(sizes: list[int], n: int, batch_size: int) -> bool:
    """Brute force: can the groups be spread over the batches with one pair per group per batch?"""
    nb = math.ceil(n / batch_size)
    capacity = [batch_size] * (nb - 1) + [n - (nb - 1) * batch_size]
    choices = [list(itertools.combinations(range(nb), s)) for s in sizes]
    for pick in itertools.product(*choices):
        load = [0] * nb
        for cells in pick:
            for b in cells:
                load[b] += 1
        if load == capacity:
            return True
    return False


@pytest.mark.parametrize("seed", range(40))
def test_error_exactly_when_no_batching_exists(seed):
    rng = np.random.default_rng(1000 + seed)
    batch_size = int(rng.integers(2, 4))
    sizes = [int(s) for s in rng.integers(1, 4, rng.integers(2, 5))]
    groups = np.repeat(np.arange(len(sizes)), sizes)
    n = len(groups)
    if feasible(sizes, n, batch_size):
        sampler = NoDuplicateGroupSampler(groups, batch_size)
        assert sampler.max_pairs_per_group is None and sampler.num_kept == n
    else:
        with pytest.warns(UserWarning, match="each epoch uses a random"):
            sampler = NoDuplicateGroupSampler(groups, batch_size)
        cap = sampler.max_pairs_per_group
        capped = [min(size, cap) for size in sizes]
        assert feasible(capped, sum(capped), batch_size)
        # the cap is the largest that works: one more would be infeasible (or uncapped)
        bigger = [min(size, cap + 1) for size in sizes]
        assert not feasible(bigger, sum(bigger), batch_size)
    for epoch in range(5):
        sampler.set_epoch(epoch)
        check_epoch(sampler, groups)


def test_oversized_group_is_spread_over_epochs():
    groups = np.array([42] * 5 + list(range(15)))  # 20 pairs, batch 8 -> 3 batches, group of 5
    with pytest.warns(UserWarning, match="group 42 has 5 pairs"):
        sampler = NoDuplicateGroupSampler(groups, 8)
    assert sampler.max_pairs_per_group == 3  # 18 pairs kept -> batches of 8, 8, 2: 3 fit, 4 would not
    seen_of_42 = set()
    for epoch in range(12):
        sampler.set_epoch(epoch)
        order = check_epoch(sampler, groups)
        assert len(order) == len(sampler) == 18
        chosen = {i for i in order if groups[i] == 42}
        assert len(chosen) == 3
        seen_of_42 |= chosen
    assert seen_of_42 == set(range(5)), "over epochs every pair of the big group is used"
    assert NoDuplicateGroupSampler(groups, 4).max_pairs_per_group is None  # 5 batches: all fit


@pytest.mark.parametrize("batch_size", [1, 0, -3])
def test_batch_size_below_two_is_an_error(batch_size):
    with pytest.raises(ValueError, match="batch_size"):
        NoDuplicateGroupSampler(np.arange(10), batch_size)


def test_rejects_non_integer_group_ids():
    with pytest.raises(ValueError, match="integers"):
        NoDuplicateGroupSampler(np.array([0.5, 1.5, 2.5]), 2)


@pytest.mark.parametrize(("seed", "drop_last"), [(3, False), (4, True), (7, False)])
def test_through_a_real_dataloader(seed, drop_last):
    groups, batch_size = random_groups(seed)
    sampler = NoDuplicateGroupSampler(torch.as_tensor(groups), batch_size, seed=seed, drop_last=drop_last)
    data = TensorDataset(torch.arange(len(groups)), torch.as_tensor(groups))
    loader = DataLoader(data, sampler=sampler, batch_size=batch_size)
    seen = []
    batches = list(loader)
    for k, (index, group) in enumerate(batches):
        assert len(set(group.tolist())) == len(group)
        if k < len(batches) - 1 or drop_last:
            assert len(index) == batch_size
        assert len(index) >= 2
        seen.extend(index.tolist())
    assert len(seen) == len(set(seen)) == len(sampler)
    assert len(loader) == len(batches)


def test_accepts_a_datasets_column_and_lists():
    ds = datasets.Dataset.from_dict({"group_id": [0, 0, 1, 2, 3, 4, 5, 6]})
    from_column = NoDuplicateGroupSampler(ds.with_format("numpy")["group_id"], 4)
    from_list = NoDuplicateGroupSampler(ds["group_id"][:], 4)
    assert list(from_column) == list(from_list)
    check_epoch(from_column, np.asarray(ds["group_id"][:]))
    # A column of a split (an indices mapping): values in the split's order.
    part = ds.select([7, 1, 0, 5, 6])
    assert NoDuplicateGroupSampler(part["group_id"], 2)._group_sizes.tolist() == [2, 1, 1, 1]
    with pytest.warns(UserWarning, match="group 0 has 2 pairs"):
        NoDuplicateGroupSampler(part.with_format("numpy")["group_id"], 5)


@pytest.mark.parametrize("seed", range(8))
def test_length_grouped_batches_keep_every_guarantee(seed):
    groups, batch_size = random_groups(seed)
    lengths = np.random.default_rng(seed).integers(3, 80, len(groups))
    sampler = NoDuplicateGroupSampler(groups, batch_size, seed=seed, lengths=lengths)
    orders = []
    for epoch in range(3):
        sampler.set_epoch(epoch)
        orders.append(check_epoch(sampler, groups))
    assert orders[0] != orders[1]


def test_length_grouping_cuts_padding():
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(2000), rng.integers(1, 4, 2000))
    lengths = rng.gamma(4, 3, len(groups)).astype(int) + 3

    def padded_over_real(sampler):
        order = np.asarray(list(sampler))
        chunks = [order[k : k + 64] for k in range(0, len(order), 64)]
        return sum(lengths[c].max() * len(c) for c in chunks) / lengths[order].sum()

    blind = padded_over_real(NoDuplicateGroupSampler(groups, 64))
    grouped = padded_over_real(NoDuplicateGroupSampler(groups, 64, lengths=lengths))
    assert grouped < 1.2
    assert blind > 1.8


def test_lengths_must_match():
    with pytest.raises(ValueError, match="one length per pair"):
        NoDuplicateGroupSampler(np.arange(10), 4, lengths=[3, 4])


@pytest.mark.parametrize("lengths", [False, True])
def test_order_is_a_pure_function_of_seed_and_epoch(lengths):
    """What exact resumption relies on: a fresh sampler set to epoch e yields the order of epoch e
    of a sampler that went through epochs 0..e, whatever the global RNGs hold."""
    groups, batch_size = random_groups(21)
    kwargs = dict(seed=3, lengths=np.random.default_rng(0).integers(3, 50, len(groups)) if lengths else None)
    running = NoDuplicateGroupSampler(groups, batch_size, **kwargs)
    orders = []
    for epoch in range(4):
        running.set_epoch(epoch)
        orders.append(list(running))
    for epoch in (3, 1, 2):
        np.random.seed(epoch)  # the global generators must not matter
        torch.manual_seed(epoch)
        fresh = NoDuplicateGroupSampler(groups, batch_size, **kwargs)
        fresh.set_epoch(epoch)
        assert list(fresh) == orders[epoch]
    assert len({tuple(order) for order in orders}) == 4


def test_seed_and_epoch_do_not_alias():
    groups, batch_size = random_groups(5)
    one = NoDuplicateGroupSampler(groups, batch_size, seed=1)
    zero = NoDuplicateGroupSampler(groups, batch_size, seed=0)
    zero.set_epoch(1)
    assert list(one) != list(zero)  # seeded with (seed, epoch), not seed + epoch


@pytest.mark.parametrize(("seed", "epoch"), [(-1, 0), (0, -2), (1.5, 0)])
def test_negative_or_fractional_seed_and_epoch_are_errors(seed, epoch):
    with pytest.raises(ValueError, match="seed" if seed != 0 else "epoch"):
        NoDuplicateGroupSampler(np.arange(10), 4, seed=seed).set_epoch(epoch)


def kept_pairs(sampler: NoDuplicateGroupSampler, group: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The pairs an epoch uses, as the sampler draws them: all, or a random capped number of each group."""
    n = len(group)
    if sampler.max_pairs_per_group is None:
        return np.arange(n)
    shuffled = rng.permutation(n)
    by_group = shuffled[np.argsort(group[shuffled], kind="stable")]
    sorted_groups = group[by_group]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    rank = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))
    return np.sort(by_group[rank < sampler.max_pairs_per_group])


def earlier_blind_order(sampler: NoDuplicateGroupSampler, groups, epoch: int) -> list[int]:
    """The length-blind order as the sampler built it in 0.1.0 (with an array per step): the reference for the
    construction that now makes fewer copies."""
    rng = np.random.default_rng([sampler.seed, epoch])
    group_values, group = np.unique(groups, return_inverse=True)
    sizes = np.bincount(group)
    if sampler.max_pairs_per_group is not None:
        sizes = np.minimum(sizes, sampler.max_pairs_per_group)
    n, nb, size = sampler.num_kept, sampler.num_batches, sampler.batch_size
    kept = kept_pairs(sampler, group, rng)
    gid = group[kept]
    group_key = rng.random(len(group_values))
    sequence = kept[np.lexsort((rng.random(n), group_key[gid], -sizes[gid]))]
    rest = n - (nb - 1) * size
    full_rows = rest if rest < size else size
    position = np.arange(n)
    in_full_rows = position < full_rows * nb
    batch = np.empty(n, dtype=np.int64)
    batch[in_full_rows] = position[in_full_rows] % nb
    if nb > 1:
        batch[~in_full_rows] = (position[~in_full_rows] - full_rows * nb) % (nb - 1)
    has_partial = rest < size
    n_full = nb - 1 if has_partial else nb
    batch_rank = np.empty(nb, dtype=np.int64)
    batch_rank[:n_full] = rng.permutation(n_full)
    if has_partial:
        batch_rank[nb - 1] = nb - 1
    order = np.lexsort((rng.random(n), batch_rank[batch]))
    return sequence[order][: len(sampler)].tolist()


def list_built_length_order(sampler: NoDuplicateGroupSampler, groups, lengths, epoch: int) -> list[int] | None:
    """
    The length-grouped order as the sampler built it in 0.1.0, with Python lists and sets per pair: the reference
    its numpy construction must reproduce index for index (None where that construction gave up).
    """
    rng = np.random.default_rng([sampler.seed, epoch])
    group = np.unique(groups, return_inverse=True)[1]
    kept = kept_pairs(sampler, group, rng)
    jitter = 1.0 + 0.2 * (rng.random(len(kept)) - 0.5)
    stream = kept[np.argsort(np.asarray(lengths, dtype=np.float64)[kept] * jitter, kind="stable")].tolist()
    size, nb = sampler.batch_size, sampler.num_batches
    targets = [size] * (nb - 1) + [sampler.num_kept - (nb - 1) * size]
    batches, waiting, position = [], [], 0
    for target in targets:
        batch, seen, still_waiting = [], set(), []
        for index in waiting:
            if len(batch) < target and group[index] not in seen:
                batch.append(index)
                seen.add(group[index])
            else:
                still_waiting.append(index)
        waiting = still_waiting
        while len(batch) < target and position < len(stream):
            index = stream[position]
            position += 1
            if group[index] in seen:
                waiting.append(index)
            else:
                batch.append(index)
                seen.add(group[index])
        batches.append(batch)
    batch_groups = [{group[i] for i in batch} for batch in batches]
    for index in waiting:
        g = group[index]
        short = [k for k, batch in enumerate(batches) if len(batch) < targets[k]]
        direct = next((k for k in short if g not in batch_groups[k]), None)
        if direct is not None:
            batches[direct].append(index)
            batch_groups[direct].add(g)
            continue
        placed = False
        for k in reversed(range(len(batches))):
            if g in batch_groups[k] or k in short:
                continue
            for slot, other in enumerate(batches[k]):
                target_batch = next((d for d in short if group[other] not in batch_groups[d]), None)
                if target_batch is None:
                    continue
                batches[k][slot] = index
                batch_groups[k].discard(group[other])
                batch_groups[k].add(g)
                batches[target_batch].append(other)
                batch_groups[target_batch].add(group[other])
                placed = True
                break
            if placed:
                break
        if not placed:
            return None
    full = [batches[k] for k in rng.permutation(len(batches) - 1)] if len(batches) > 1 else []
    tail = batches[-1]
    if len(tail) == size:
        full.append(tail)
        tail = []
    return ([i for batch in full for i in batch] + tail)[: len(sampler)]


def crowded_groups(seed: int) -> tuple[np.ndarray, int]:
    """Groups as large as an epoch's batches allow (and some larger, capped): pairs wait and are swapped into place."""
    rng = np.random.default_rng(seed)
    batch_size = int(rng.integers(2, 9))
    n = int(rng.integers(3 * batch_size, 120))
    nb = math.ceil(n / batch_size)
    sizes = []
    while sum(sizes) < n:
        sizes.append(int(min(rng.integers(1, nb + 3), n - sum(sizes))))
    return rng.permutation(np.repeat(np.arange(len(sizes)), sizes)), batch_size


@pytest.mark.filterwarnings("ignore:duplicate group")
@pytest.mark.parametrize("structure", [random_groups, crowded_groups])
def test_epoch_orders_are_the_earlier_ones(structure):
    """The numpy construction of a length-grouped epoch (no Python object per pair) gives the very order of the
    list-built one, and the length-blind epoch with fewer copies the very order it gave, so a run resumed across the
    change, and every recorded result, keeps its batches."""
    gave_up = 0
    for seed in range(40):
        groups, batch_size = structure(seed)
        lengths = np.random.default_rng(seed + 100).integers(3, 80, len(groups))
        sampler = NoDuplicateGroupSampler(groups, batch_size, seed=seed % 5, lengths=lengths, drop_last=seed % 3 == 0)
        blind = NoDuplicateGroupSampler(groups, batch_size, seed=seed % 5, drop_last=seed % 3 == 0)
        for epoch in range(2):
            expected = list_built_length_order(sampler, groups, lengths, epoch)
            sampler.set_epoch(epoch)
            blind.set_epoch(epoch)
            assert list(blind) == earlier_blind_order(blind, groups, epoch), (structure.__name__, seed, epoch)
            if expected is None:  # both fall back to the length-blind order
                gave_up += 1
                expected = list(blind)
            assert list(sampler) == expected, (structure.__name__, seed, epoch)
    if structure is crowded_groups:
        assert 0 < gave_up < 40  # the repair's failure case is exercised too, but not everywhere


@pytest.mark.parametrize("lengths", [False, True])
def test_an_epoch_is_yielded_from_its_array_as_python_ints(lengths):
    groups, batch_size = random_groups(3)
    kwargs = dict(lengths=np.random.default_rng(1).integers(3, 50, len(groups))) if lengths else {}
    sampler = NoDuplicateGroupSampler(groups, batch_size, seed=2, **kwargs)
    sampler.set_epoch(1)
    order = list(sampler)
    assert order == sampler.epoch_order(1).tolist()
    assert {type(index) for index in order} == {int}  # what a Dataset and the DataLoader index with


@pytest.mark.parametrize("lengths", [False, True])
def test_an_epoch_holds_a_few_arrays_at_most(lengths):
    """Memory stays flat with millions of pairs: building and yielding an epoch holds a few arrays of the pairs at
    once, never a Python list or set of them (in 0.1.0 the peak was about 70 bytes a pair here, 150 with lengths;
    now about 36 and 48)."""
    rng = np.random.default_rng(0)
    n = 100_000
    groups = rng.permutation(np.repeat(np.arange(n), rng.integers(1, 4, n))[:n])
    sampler = NoDuplicateGroupSampler(groups, 64, seed=1, lengths=rng.integers(5, 60, n) if lengths else None)
    tracemalloc.start()
    try:
        assert sum(1 for _ in sampler) == n
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak / n < 60


def test_a_large_length_blind_epoch_holds_its_order_and_a_few_bytes_a_pair():
    """At millions of pairs (where the sorts work a block at a time), building a length-blind epoch peaks at about 23
    bytes a pair here (13 at 8M pairs, where a block is a smaller part): the packed sort keys, into which the int32
    order is written, and the groups' ranks; the random keys are read from the generator by position, never held
    (31 here while they were held and the order was an array of its own, 44 with whole-epoch gathers and int64
    orders)."""
    rng = np.random.default_rng(0)
    n = 2_000_000
    groups = rng.permutation(np.repeat(np.arange(n), rng.integers(1, 4, n))[:n])
    sampler = NoDuplicateGroupSampler(groups, 64, seed=1)
    tracemalloc.start()
    try:
        order = sampler.epoch_order(0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert order.dtype == np.int32 and len(np.unique(order)) == n
    assert peak / n < 26


def test_the_dense_rank_sorts_as_its_two_keys_ties_included():
    from hfsiamese.data.packed_sorts import dense_rank

    rng = np.random.default_rng(3)
    for _ in range(20):
        primary = -rng.integers(1, 4, size=300)
        secondary = rng.choice(rng.random(40), size=300)  # repeated values: ties on both keys
        tie_breaker = rng.random(300)
        rank = dense_rank(primary, secondary)
        assert np.array_equal(np.lexsort((tie_breaker, rank)), np.lexsort((tie_breaker, secondary, primary)))


def test_the_packed_two_key_sort_is_lexsort():
    """The epoch's sorts by (an integer key, a random fraction) give `np.lexsort`'s very order: ties in the fraction's
    leading bits, equal fractions, negative and wide integer keys (past what packing holds: lexsort itself)."""
    rng = np.random.default_rng(3)
    for trial in range(400):
        n = int(rng.integers(0, 2000))
        high = 10 ** int(rng.integers(1, 9))
        primary = rng.integers(-high, high, n).astype(np.int32 if trial % 2 else np.int64)
        fraction = rng.random(n)
        if trial % 3 == 0:
            fraction = np.round(fraction, int(rng.integers(0, 4)))  # many equal fractions
        assert np.array_equal(lexsort_int_fraction(primary, fraction), np.lexsort((fraction, primary))), trial
    wide = np.array([0, 2**62, 5, 2**62], dtype=np.int64)
    assert np.array_equal(lexsort_int_fraction(wide, np.array([0.4, 0.2, 0.3, 0.1])), [0, 2, 3, 1])


def test_groups_numbered_0_to_g_are_taken_as_they_are_and_not_shared():
    """Ids already 0..G-1 (a prepared folder's) skip np.unique's sort with the same numbering; other ids go through it;
    a caller's array changed afterwards does not change the sampler."""
    from hfsiamese.data.sampler import _numbered_groups

    rng = np.random.default_rng(0)
    for groups in (rng.permutation(np.repeat(np.arange(50), 3)), np.array([5, 3, 5, 9, 3]), np.array([0, 2, 2])):
        for dtype in (np.int64, np.int32, np.uint64, np.uint16):
            ids = groups.astype(dtype)
            values, index, sizes = _numbered_groups(ids)
            want_values, want_index = np.unique(ids, return_inverse=True)
            if values is None:  # the ids are their own numbers
                assert np.array_equal(want_values, np.arange(len(want_values)))
            else:
                assert np.array_equal(values, want_values)
            assert np.array_equal(index, want_index)
            assert np.array_equal(sizes, np.bincount(want_index))
    ids = rng.permutation(np.repeat(np.arange(40), 2))
    sampler = NoDuplicateGroupSampler(ids, 8, seed=1)
    before = list(sampler)
    ids[:] = 0
    assert list(sampler) == before
