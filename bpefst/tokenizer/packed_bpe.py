"""Textbook BPE over a packed merge table, in C-level loops: the fast path for short chunks.

The reference encoder (:mod:`.reference`) keeps a heap; for the short chunks
that make up real text a flat list does better, because every step is one
C call.  The merge table is a dict from the packed pair ``left << shift |
right`` to ``rank << 32 | result`` (an int key costs less to build and hash
than a tuple).  ``pairs[i]`` holds that value for the pair at ``i`` (or
:data:`NO_PAIR`), so ``min`` finds the lowest rank and ``index`` its leftmost
occurrence, the order of the reference encoder's heap; each merge then
refreshes the two pairs next to it.  O(n^2) for a chunk of n symbols, in C.
"""

from __future__ import annotations

from itertools import repeat
from operator import lshift, or_
from typing import Iterable, Sequence

NO_PAIR = 1 << 62
_RESULT = 0xFFFFFFFF


def pack_merges(merges: Sequence[tuple[int, int]], results: Sequence[int], shift: int) -> dict[int, int]:
    """The packed table of ``merges`` (in rank order) producing ``results``."""
    return {(a << shift) | b: (rank << 32) | result for rank, ((a, b), result) in enumerate(zip(merges, results))}


def pair_shift(ids: Iterable[int]) -> int:
    """Bits to shift a left id by so that any right id fits below it."""
    return max(ids, default=1).bit_length()


def bpe_packed(ids: list[int], get, shift: int) -> list[int]:
    """BPE of the symbol ids ``ids`` (changed in place and returned); ``get`` is the packed table's ``get``."""
    none = NO_PAIR
    pairs = list(map(get, map(or_, map(lshift, ids, repeat(shift)), ids[1:]), repeat(none)))
    while pairs:
        best = min(pairs)
        if best == none:
            break
        i = pairs.index(best)
        ids[i] = best & _RESULT
        del ids[i + 1]
        del pairs[i]
        if i > 0:
            pairs[i - 1] = get((ids[i - 1] << shift) | ids[i], none)
        if i < len(pairs):
            pairs[i] = get((ids[i] << shift) | ids[i + 1], none)
    return ids
