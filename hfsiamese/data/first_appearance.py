"""
Integers numbered in order of first appearance (`pandas.factorize`'s codes) in bounded memory.

Questions and pairs are numbered this way throughout (groups, splits and repeats depend on the order), and pandas
builds one hash table over every value to do it: at a 40M-pair history (80M question hashes, 70M of them distinct)
that table, with the codes and uniques it returns, was the peak of the preparation (3.5 GB). No library offers a
factorize that works a part at a time, hence this one: the values are dealt into parts by a mix of their bits (equal
values always meet in one part), each part is factorized by pandas alone, and the parts' numberings are merged by the
position where each distinct value first appears. The codes are the ones `pandas.factorize` gives, exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["first_appearance_codes", "ranks_among"]

_VALUES_PER_PART = 1 << 22  # what one pandas hash table holds at most, about
_BLOCK = 1 << 22  # values mixed or renumbered at a time (temporaries of a block, never of all values)
_MIX = np.uint64(0x9E3779B97F4A7C15)  # an odd 64-bit constant (Fibonacci hashing): its top bits spread any integers


def first_appearance_codes(values: np.ndarray, *, parts: int | None = None) -> tuple[np.ndarray, int]:
    """
    `pandas.factorize(values)`'s codes (0 for the first distinct value met, 1 for the next...) and the number of
    distinct values, for an integer array; the codes are int32 where they fit. `parts` (a power of two) is how many
    hash tables share the work, by default one per ~4 million values.
    """
    if values.dtype.kind not in "iu":
        raise ValueError(f"first_appearance_codes numbers integers, got dtype {values.dtype}")
    n = len(values)
    kind = np.int32 if n < np.iinfo(np.int32).max else np.int64
    if parts is None:
        parts = 1 << max(0, math.ceil(math.log2(max(n, 1) / _VALUES_PER_PART)))
    if parts & (parts - 1) or not 1 <= parts <= 1 << 16:
        raise ValueError(f"parts must be a power of two from 1 to 65536, got {parts}")
    if parts == 1:
        codes, uniques = pd.factorize(values)
        return codes.astype(kind, copy=False), len(uniques)

    part = np.empty(n, dtype=np.uint16)
    shift = np.uint64(64 - parts.bit_length() + 1)
    for start in range(0, n, _BLOCK):
        mixed = values[start : start + _BLOCK].astype(np.uint64) * _MIX  # wraps modulo 2**64, as meant
        part[start : start + _BLOCK] = mixed >> shift
    codes = np.empty(n, dtype=kind)
    firsts = []  # per part: where each of its distinct values first appears, in the part's numbering
    count = 0
    for p in range(parts):
        positions = np.flatnonzero(part == p)
        local, uniques = pd.factorize(values[positions])
        distinct = len(uniques)
        del uniques
        # Numbered by first appearance, a part's codes rise by one where a new value is first met.
        new = np.empty(len(local), dtype=bool)
        new[:1] = True
        np.greater(local[1:], np.maximum.accumulate(local)[:-1], out=new[1:])
        firsts.append(positions[new].astype(kind))
        codes[positions] = local + count
        count += distinct
    del part
    first = np.concatenate(firsts)
    del firsts
    renumber = ranks_among(first, n)  # a distinct value's code: its first position's rank among all first positions
    del first
    for start in range(0, n, _BLOCK):
        codes[start : start + _BLOCK] = renumber[codes[start : start + _BLOCK]]
    return codes, count


def ranks_among(positions: np.ndarray, length: int) -> np.ndarray:
    """
    Each of `positions` (distinct where below `length`) numbered by its rank among those below `length` (0 for the
    smallest): a mark per position and a running count, no sort. A position at or past `length` gets a value never
    meant to be read.
    """
    kind = np.int32 if length < np.iinfo(np.int32).max else np.int64
    if length == 0:
        return np.zeros(len(positions), dtype=kind)
    inside = np.minimum(positions, length - 1)
    marked = np.zeros(length, dtype=bool)
    marked[positions[positions < length]] = True
    rank = np.cumsum(marked, dtype=kind)
    del marked
    return rank[inside] - 1
