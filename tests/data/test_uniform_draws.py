import numpy as np
import pytest

from hfsiamese.data.packed_sorts import dense_rank, lexsort_int_fraction
from hfsiamese.data.uniform_draws import UniformDraws


@pytest.mark.parametrize("buffered", [False, True])
def test_the_draws_and_the_generator_after_them_are_those_of_random_n(buffered):
    """Any slice or scattered positions are `random(n)`'s values; the generator then draws what it would have drawn
    after `random(n)`, bounded integers too (which use a buffered half-draw that jumping ahead would drop)."""
    made, read = np.random.default_rng([7, 3]), np.random.default_rng([7, 3])
    if buffered:
        assert made.integers(0, 1000) == read.integers(0, 1000)  # leaves a 32-bit half-draw buffered
    want = made.random(50_000)
    draws = UniformDraws(read, 50_000)
    assert len(draws) == 50_000
    assert np.array_equal(draws[:], want) and np.array_equal(draws[123:40_000], want[123:40_000])
    assert len(draws[10:5]) == 0
    positions = np.random.default_rng(1).integers(0, 50_000, size=(30, 7))
    assert np.array_equal(draws.take(positions), want[positions])
    assert np.array_equal(draws.materialized(), want)
    assert np.array_equal(read.permutation(1000), made.permutation(1000))
    assert np.array_equal(read.random(5), made.random(5))


def test_a_generator_that_cannot_jump_gives_the_same_draws_kept():
    made, read = np.random.Generator(np.random.MT19937(5)), np.random.Generator(np.random.MT19937(5))
    want = made.random(1000)
    draws = UniformDraws(read, 1000)
    assert np.array_equal(draws[100:200], want[100:200]) and np.array_equal(draws.take([5, 3]), want[[5, 3]])
    assert read.random() == made.random()


def test_bad_reads_are_refused():
    draws = UniformDraws(np.random.default_rng(0), 10)
    with pytest.raises(IndexError, match=r"\[0, 10\)"):
        draws.take([10])
    with pytest.raises(TypeError, match="step 1"):
        draws[::2]
    with pytest.raises(ValueError, match="non-negative"):
        UniformDraws(np.random.default_rng(0), -1)


def test_the_sorts_by_draws_read_by_position_are_the_sorts_by_the_array():
    rng = np.random.default_rng(4)
    for trial in range(60):
        n = int(rng.integers(0, 3000))
        primary = rng.integers(-5, 5 if trial % 2 else 10**9, n)
        a, b = np.random.default_rng([trial]), np.random.default_rng([trial])
        fraction = a.random(n)
        draws = UniformDraws(b, n)
        assert np.array_equal(lexsort_int_fraction(primary, draws), np.lexsort((fraction, primary))), trial
        assert np.array_equal(dense_rank(primary, draws), dense_rank(primary, fraction)), trial
