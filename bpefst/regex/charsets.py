"""Which characters a single-character atom matches, asked of the ``regex`` module.

A character class is a predicate on code points.  Rather than re-implement
Unicode property tables, case folding and the bracket-class grammar, we let
the ``regex`` module (the test oracle) evaluate each class once over the
relevant domain and cache the answer:

* for byte-level alphabets the domain is every Unicode scalar value
  (U+0000..U+10FFFF minus the surrogates, which UTF-8 cannot encode); one
  ``finditer`` over a string of all 1.1M scalar values finds the maximal runs
  of matching characters, i.e. the set as sorted inclusive ranges
  (:func:`scalar_ranges`), in a few milliseconds;
* for character-level alphabets the domain is the alphabet's characters
  (:func:`matching_chars`).

Ranges are tuples of inclusive ``(low, high)`` pairs, sorted, disjoint and
non-adjacent.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable

import regex as _regex_module

Ranges = tuple[tuple[int, int], ...]

SURROGATES = (0xD800, 0xDFFF)
MAX_CODEPOINT = 0x10FFFF


@lru_cache(maxsize=1)
def _all_scalars() -> str:
    """Every Unicode scalar value once, in increasing order (surrogates left out)."""
    return "".join(map(chr, range(SURROGATES[0]))) + "".join(map(chr, range(SURROGATES[1] + 1, MAX_CODEPOINT + 1)))


def _index_to_codepoint(i: int) -> int:
    return i if i < SURROGATES[0] else i + (SURROGATES[1] - SURROGATES[0] + 1)


def _matcher(source: str, flags: str, repeated: bool):
    prefix = f"(?{flags})" if flags else ""
    body = f"(?:{source})+" if repeated else source
    return _regex_module.compile(prefix + body)


@lru_cache(maxsize=512)
def scalar_ranges(source: str, flags: str = "") -> Ranges:
    """The scalar values matched by the one-character regex ``source`` under ``flags``."""
    text = _all_scalars()
    gap = SURROGATES[0]
    ranges: list[tuple[int, int]] = []
    for m in _matcher(source, flags, True).finditer(text):
        start, end = m.span()  # end exclusive
        if start < gap < end:  # a run across the surrogate gap is two ranges
            ranges.append((start, gap - 1))
            start = gap
        ranges.append((_index_to_codepoint(start), _index_to_codepoint(end - 1)))
    return normalize(ranges)


def matching_chars(source: str, flags: str, domain: Iterable[str]) -> frozenset[str]:
    """The characters of ``domain`` matched by the one-character regex ``source``."""
    compiled = _matcher(source, flags, False)
    return frozenset(c for c in domain if compiled.fullmatch(c))


# ---------------------------------------------------------------- range sets
def normalize(ranges: Iterable[tuple[int, int]]) -> Ranges:
    """Sort and merge overlapping or adjacent ranges."""
    out: list[list[int]] = []
    for lo, hi in sorted(ranges):
        if lo > hi:
            continue
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1][1] = hi
        else:
            out.append([lo, hi])
    return tuple((lo, hi) for lo, hi in out)


def single(codepoint: int) -> Ranges:
    """The set holding one scalar value (empty for a surrogate)."""
    if SURROGATES[0] <= codepoint <= SURROGATES[1]:
        return ()
    return ((codepoint, codepoint),)


def contains(ranges: Ranges, codepoint: int) -> bool:
    from bisect import bisect_right

    k = bisect_right(ranges, (codepoint, MAX_CODEPOINT + 1)) - 1
    return k >= 0 and ranges[k][0] <= codepoint <= ranges[k][1]
