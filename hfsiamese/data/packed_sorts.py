"""
Sorts of many items by (an integer key, a random fraction) through packed 64-bit keys, as the sampler's epochs need.

`np.lexsort` over two keys took half a minute at 36M items and held its keys' temporaries; numpy sorts one array of
64-bit integers with SIMD in place. These functions pack an item's integer key, the leading bits of its fraction and
its index into one such value, sort it, and settle the rare ties by the whole fraction: `np.lexsort`'s very order,
a block of items at a time, the fractions read from an array or from a generator's draws (`UniformDraws`).
"""

from __future__ import annotations

import numpy as np

from hfsiamese.data.uniform_draws import UniformDraws

__all__ = ["dense_rank", "index_type", "lexsort_int_fraction", "sorted_with_ties"]

# Items whose keys are packed (or compared) at a time: temporaries of a block, never of all the items.
_PACK_BLOCK = 1 << 20


def index_type(n: int) -> type[np.signedinteger]:
    """int32 for positions among `n` items where they fit (half the memory of tens of millions of them)."""
    return np.int32 if n < np.iinfo(np.int32).max else np.int64


def lexsort_int_fraction(
    primary: np.ndarray, fraction: np.ndarray | UniformDraws, *, through: np.ndarray | None = None
) -> np.ndarray:
    """
    `np.lexsort((fraction, primary))` for integers `primary` and `fraction` in [0, 1) (random keys, an array or a
    generator's draws read by position): the very same order, from one sort of 64-bit values that pack each item's
    primary key, the leading bits of its fraction and its index (built a block at a time: one array of n, no
    temporaries of n). numpy sorts such values with SIMD but has no fast two-key sort (lexsort took half a minute at
    36M items); the few items whose packed keys tie are put in order by their whole fraction afterwards. With
    `through`, item i's primary key is `primary[through[i]]` (a group's key for each of its pairs, looked up a block
    at a time instead of an array of every pair's). The order comes as int32 where the items' positions fit.
    """
    return sorted_with_ties(primary, fraction, through=through)[0]


def sorted_with_ties(
    primary: np.ndarray, fraction: np.ndarray | UniformDraws, *, through: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """
    `lexsort_int_fraction`'s order, and the places `i` of that order (increasing) where item `order[i]` may have
    the same two keys as `order[i - 1]`: everywhere else the packed keys differ, so the keys do.
    """
    n = len(fraction)

    def primary_of(items: np.ndarray | slice) -> np.ndarray:
        return primary[through[items]] if through is not None else primary[items]

    def fraction_of(items: np.ndarray) -> np.ndarray:
        return fraction[items] if isinstance(fraction, np.ndarray) else fraction.take(items)

    def by_lexsort() -> tuple[np.ndarray, np.ndarray]:
        whole = fraction if isinstance(fraction, np.ndarray) else fraction.materialized()
        return np.lexsort((whole, primary_of(slice(None)))).astype(index_type(n)), np.arange(1, n)

    if n < 2 or (isinstance(fraction, np.ndarray) and (fraction.min() < 0 or fraction.max() >= 1)):
        return by_lexsort()
    low = int(primary.min())  # bounds over every key `through` may look up: the order is exact whatever they are
    index_bits = (n - 1).bit_length()
    fraction_bits = 64 - index_bits - max((int(primary.max()) - low).bit_length(), 1)
    if fraction_bits < 8:  # too little left of the fraction for few ties
        return by_lexsort()
    packed = np.empty(n, dtype=np.uint64)
    for start in range(0, n, _PACK_BLOCK):
        stop = min(start + _PACK_BLOCK, n)
        part = (primary_of(slice(start, stop)).astype(np.int64) - low).astype(np.uint64)
        part <<= np.uint64(fraction_bits + index_bits)
        part |= (fraction[start:stop] * float(2**fraction_bits)).astype(np.uint64) << np.uint64(index_bits)  # floored
        part |= np.arange(start, stop, dtype=np.uint64)
        packed[start:stop] = part
    packed.sort()
    # The order is the packed values' low bits, written over the packed values themselves (a block is copied out
    # first; the order's narrower values only reach places already read) and the rest of the buffer then given back
    # (`resize` shrinks in place): the order costs no array beside the packed one. Runs of equal keys (what is left
    # above the low bits) are found in the same pass.
    positions_type = index_type(n)
    written = packed.view(positions_type)
    index_mask = np.uint64((1 << index_bits) - 1)
    tied_parts = []
    previous_key = None
    for start in range(0, n, _PACK_BLOCK):
        part = packed[start : start + _PACK_BLOCK].copy()
        written[start : start + len(part)] = part & index_mask
        keys = part >> np.uint64(index_bits)
        tied = np.flatnonzero(keys[1:] == keys[:-1]) + (start + 1)
        if previous_key is not None and keys[0] == previous_key:
            tied = np.r_[start, tied]
        tied_parts.append(tied)
        previous_key = keys[-1]
    del written, part, keys
    per_value = packed.itemsize // np.dtype(positions_type).itemsize
    packed.resize(-(-n // per_value), refcheck=False)  # the buffer is this function's own: no other view of it
    order = packed.view(positions_type)[:n]
    del packed
    tied_after = np.concatenate(tied_parts)
    if len(tied_after):  # runs of equal packed keys: their items ordered by the whole fraction, then by index
        places = np.union1d(tied_after - 1, tied_after)
        members = order[places]
        order[places] = members[np.lexsort((members, fraction_of(members), primary_of(members)))]
    return order, tied_after


def dense_rank(primary: np.ndarray, secondary: np.ndarray | UniformDraws) -> np.ndarray:
    """Each item's rank in the order (primary, secondary), equal items sharing a rank: sorting by it sorts as by the
    two keys. Only neighbours in that order whose packed sort keys tie can be equal, so only those are compared."""
    order, maybe_equal = sorted_with_ties(primary, secondary)
    n = len(order)
    starts = np.ones(n, dtype=bool)
    if len(maybe_equal):
        here, before = order[maybe_equal], order[maybe_equal - 1]
        if isinstance(secondary, np.ndarray):
            same_secondary = secondary[here] == secondary[before]
        else:
            same_secondary = secondary.take(here) == secondary.take(before)
        starts[maybe_equal] = (primary[here] != primary[before]) | ~same_secondary
    rank = np.empty(n, dtype=index_type(n))
    rank[order] = np.cumsum(starts, dtype=rank.dtype) - 1
    return rank
