import numpy as np
import pytest

from hfsiamese.data.multi_dataset_sampler import MultiDatasetSampler, apportion
from hfsiamese.data.sampler import NoDuplicateGroupSampler

BATCH = 4


def _groups(n: int, seed: int) -> np.ndarray:
    """`n` pairs in duplicate groups of 2 pairs (one of 1 when `n` is odd), shuffled."""
    return np.random.default_rng(seed).permutation(np.arange(n) // 2)


def _sampler(sizes=(40, 17), **options):
    groups = [_groups(n, i) for i, n in enumerate(sizes)]
    samplers = [NoDuplicateGroupSampler(g, BATCH, seed=i) for i, g in enumerate(groups)]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).tolist()
    sampler = MultiDatasetSampler(samplers, offsets, BATCH, names=[f"d{i}" for i in range(len(sizes))], **options)
    return sampler, groups, offsets


def _batches(sampler):
    order = np.asarray(list(sampler))
    assert len(order) == len(sampler) and len(order) % BATCH == 0
    return order.reshape(-1, BATCH)


def _dataset_of(batch, offsets):
    parts = np.searchsorted(offsets, batch, side="right") - 1
    assert len(set(parts.tolist())) == 1, f"batch {batch} mixes data sets"
    return int(parts[0])


@pytest.mark.parametrize("strategy", ["proportional", "round_robin"])
def test_no_batch_mixes_data_sets_and_groups_stay_apart(strategy):
    sampler, groups, offsets = _sampler(strategy=strategy)
    for epoch in range(3):
        sampler.set_epoch(epoch)
        order = np.asarray(list(sampler))
        assert len(set(order.tolist())) == len(order)  # each pair at most once an epoch
        for batch in order.reshape(-1, BATCH):
            part = _dataset_of(batch, offsets)
            batch_groups = groups[part][batch - offsets[part]]
            assert len(set(batch_groups.tolist())) == BATCH  # no duplicate group twice in a batch


def test_round_robin_alternates_and_stops_with_the_smallest():
    sampler, _, offsets = _sampler((40, 17, 25), strategy="round_robin")
    parts = [_dataset_of(batch, offsets) for batch in _batches(sampler)]
    assert parts == [0, 1, 2] * (17 // BATCH)


def test_proportional_gives_every_block_once_an_epoch_in_random_order():
    sampler, _, offsets = _sampler((40, 17))
    parts = [_dataset_of(batch, offsets) for batch in _batches(sampler)]
    assert parts.count(0) == 40 // BATCH and parts.count(1) == 17 // BATCH
    assert parts != sorted(parts)  # interleaved, not one data set after the other
    sampler.set_epoch(1)
    assert [_dataset_of(batch, offsets) for batch in _batches(sampler)] != parts


def test_proportional_weights_share_the_steps_and_repeat_a_small_data_set():
    sampler, _, offsets = _sampler((400, 40), weights=[1.0, 3.0])
    parts = np.asarray([_dataset_of(batch, offsets) for batch in _batches(sampler)])
    assert len(parts) == (400 + 40) // BATCH  # the epoch keeps its number of steps
    assert abs((parts == 1).mean() - 0.75) <= 1 / len(parts)
    small = np.concatenate([batch for batch in _batches(sampler) if _dataset_of(batch, offsets) == 1])
    assert len(small) > 40  # more steps than it has blocks: several passes, each a permutation
    assert sorted(small[:40].tolist()) == list(range(400, 440))


def test_steps_of_several_processes_draw_one_data_set():
    sampler, _, offsets = _sampler((40, 24), num_processes=2)
    batches = _batches(sampler)
    assert len(batches) % 2 == 0
    for process_0, process_1 in zip(batches[0::2], batches[1::2], strict=True):  # accelerate: batch k → process k % 2
        assert _dataset_of(process_0, offsets) == _dataset_of(process_1, offsets)


def test_order_is_a_function_of_seed_and_epoch():
    first, _, _ = _sampler(seed=3)
    second, _, _ = _sampler(seed=3)
    second.set_epoch(2)
    second.set_epoch(0)
    assert list(first) == list(second)
    first.set_epoch(1)
    assert list(first) != list(second)


@pytest.mark.parametrize(
    "options,message",
    [
        (dict(weights=[1.0, 0.0]), "positive numbers, got 0.0 for 'd1'"),
        (dict(weights=[-1.0, 1.0]), "positive numbers"),
        (dict(weights=[1.0, 2.0], strategy="round_robin"), "proportional"),
        (dict(strategy="random"), "multi_dataset_sampling"),
        (dict(num_processes=8), "'d1' has 16 pairs to batch"),
    ],
)
def test_refusals(options, message):
    with pytest.raises(ValueError, match=message):
        _sampler(**options)


def test_apportion_is_exact_up_to_rounding():
    assert apportion(10, np.array([1.0, 1.0, 2.0])).tolist() == [3, 2, 5]
    assert apportion(9, np.array([1.0, 2.0])).tolist() == [3, 6]
    assert apportion(7, np.array([1.0, 1000.0])).tolist() == [1, 7]  # every data set at least one step
