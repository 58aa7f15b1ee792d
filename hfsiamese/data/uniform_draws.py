"""
A generator's next `n` uniform draws, read in any part and any order without an array of all of them.

The sampler sorts tens of millions of pairs by random keys (`Generator.random(n)`): held as one float64 array, those
keys were 8 bytes a pair twice in every epoch, the largest part of training's memory on a site's whole history.
numpy's PCG64 makes one 64-bit step per double and can jump ahead (`advance`), so the draw at position `i` can be
made again from the state before the first one: `UniformDraws` keeps that state, moves the caller's generator past
the `n` draws as if it had made them, and makes any slice of them on request, the very same values. numpy has no
view of a random stream by position, hence this small class.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["UniformDraws"]

# Draws made per step when reading scattered positions: small enough that a lone position costs little.
_TAKE_BLOCK = 1 << 12


class UniformDraws:
    """
    `generator.random(n)` as a stream read by position: `draws[start:stop]`, `take(positions)`.

    Made from a generator, it leaves that generator exactly where `generator.random(n)` would have (its next draws,
    of any kind, are the same). Where the bit generator cannot jump (not PCG64), the `n` draws are made at once and
    kept, so the results are the same whatever the generator.
    """

    def __init__(self, generator: np.random.Generator, n: int) -> None:
        if int(n) != n or n < 0:
            raise ValueError(f"the number of draws must be a non-negative integer, got {n!r}")
        self._n = int(n)
        bits = generator.bit_generator
        self._start_state = bits.state
        self._kept: np.ndarray | None = None
        if isinstance(bits, np.random.PCG64):
            bits.advance(self._n)
            # `advance` drops a buffered 32-bit half-draw that doubles never use but bounded integers drawn next do:
            # put it back, so the generator continues exactly as after `random(n)`.
            moved = bits.state
            moved["has_uint32"], moved["uinteger"] = self._start_state["has_uint32"], self._start_state["uinteger"]
            bits.state = moved
        else:
            self._kept = generator.random(self._n)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, part: slice) -> np.ndarray:
        """The draws at positions `part` (a slice with step 1), as float64."""
        if not isinstance(part, slice) or part.step not in (None, 1):
            raise TypeError("UniformDraws reads slices with step 1; use take() for other positions")
        start, stop, _ = part.indices(self._n)
        stop = max(start, stop)
        if self._kept is not None:
            return self._kept[start:stop]
        return self._generator_at(start).random(stop - start)

    def take(self, positions: np.ndarray) -> np.ndarray:
        """The draws at `positions` (integers in [0, n), any order, repeats allowed)."""
        positions = np.asarray(positions)
        if positions.size and (positions.min() < 0 or positions.max() >= self._n):
            raise IndexError(f"positions must lie in [0, {self._n})")
        if self._kept is not None:
            return self._kept[positions]
        values = np.empty(positions.shape, dtype=np.float64)
        flat = positions.ravel()
        order = np.argsort(flat, kind="stable")
        ordered = flat[order]
        out = values.reshape(-1)
        # Each block of the stream that holds a wanted position is made once (consecutive positions share blocks).
        block_of = ordered // _TAKE_BLOCK
        bounds = np.flatnonzero(np.r_[True, block_of[1:] != block_of[:-1], True])
        for first, last in itertools.pairwise(bounds):
            base = int(block_of[first]) * _TAKE_BLOCK
            block = self[base : base + _TAKE_BLOCK]
            out[order[first:last]] = block[ordered[first:last] - base]
        return values

    def materialized(self) -> np.ndarray:
        """All `n` draws as one array (for the rare paths that sort by the whole array at once)."""
        return self[0 : self._n]

    def _generator_at(self, position: int) -> np.random.Generator:
        bits = np.random.PCG64()
        bits.state = self._start_state
        bits.advance(position)
        return np.random.Generator(bits)
