"""Which characters a single-character atom matches, asked of the ``regex`` module.

A character class is a predicate on code points.  Rather than re-implement
Unicode property tables, case folding and the bracket-class grammar, we let
the ``regex`` module (the test oracle) evaluate each class once over the
relevant domain and cache the answer:

* for byte-level alphabets the domain is every Unicode scalar value
  (U+0000..U+10FFFF minus the surrogates, which UTF-8 cannot encode); one
  ``finditer`` over a string of all 1.1M scalar values finds the maximal runs
  of matching characters, i.e. the set as sorted inclusive ranges
  (:func:`scalar_ranges`), in a few milliseconds (50-100 ms on a busy
  machine, once per distinct class); a bracket class made only of literal
  characters, ranges and single-character escapes (``[^"\\\x00-\x1fab]``,
  what generated patterns such as JSON Schema's are full of) is read directly
  instead (:func:`literal_class_ranges`), the scan being its test oracle;
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
    """Every Unicode scalar value once, in increasing order (surrogates left out).

    Written as UTF-32-LE a code point is its three low bytes and a zero, so
    the text is three periodic byte columns, filled by strided slices (4 ms;
    an array of the ints took 26 ms, once per process).
    """
    count = MAX_CODEPOINT + 1  # 17 planes of 65,536
    raw = bytearray(4 * count)
    raw[0::4] = bytes(range(256)) * (count // 256)
    raw[1::4] = b"".join(bytes([k]) * 256 for k in range(256)) * (count // 65536)
    raw[2::4] = b"".join(bytes([k]) * 65536 for k in range(count // 65536))
    del raw[4 * SURROGATES[0]:4 * (SURROGATES[1] + 1)]
    return raw.decode("utf-32-le")


def _index_to_codepoint(i: int) -> int:
    return i if i < SURROGATES[0] else i + (SURROGATES[1] - SURROGATES[0] + 1)


def _matcher(source: str, flags: str, repeated: bool):
    prefix = f"(?{flags})" if flags else ""
    body = f"(?:{source})+" if repeated else source
    return _regex_module.compile(prefix + body)


@lru_cache(maxsize=512)
def scalar_ranges(source: str, flags: str = "") -> Ranges:
    """The scalar values matched by the one-character regex ``source`` under ``flags``."""
    if "i" not in flags and "x" not in flags:
        direct = literal_class_ranges(source)
        if direct is not None:
            return direct
    return scanned_ranges(source, flags)


def scanned_ranges(source: str, flags: str = "") -> Ranges:
    """:func:`scalar_ranges` by the ``regex`` module: one scan over every scalar value."""
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


_CLASS_ESCAPES = {"t": 9, "n": 10, "r": 13, "f": 12, "v": 11}


def literal_class_ranges(source: str) -> Ranges | None:
    """The scalar values of a bracket class of literal characters, ranges and single-character escapes.

    None for anything else (properties, ``\\d``-style shorthands, nested or
    POSIX classes, an ambiguous ``-`` or ``]``): those go to the scan.
    """
    if len(source) < 3 or source[0] != "[" or source[-1] != "]":
        return None
    body = source[1:-1]
    negated = body.startswith("^")
    if negated:
        body = body[1:]
    if not body:
        return None
    ranges, i = [], 0
    while i < len(body):
        low, i = _class_char(body, i)
        if low is None:
            return None
        if i < len(body) - 1 and body[i] == "-":
            high, i = _class_char(body, i + 1)
            if high is None or high < low:
                return None
            ranges.append((low, high))
        else:
            ranges.append((low, low))
    found = normalize(ranges)
    if negated:
        found = complement(found)
    return _without_surrogates(found)


def _class_char(body: str, i: int) -> tuple[int | None, int]:
    """The code point written at ``body[i]`` inside a class, and where the next item starts."""
    c = body[i]
    if c == "\\":
        if i + 1 >= len(body):
            return None, i
        e = body[i + 1]
        width = {"x": 2, "u": 4, "U": 8}.get(e)
        if width is not None:
            digits = body[i + 2:i + 2 + width]
            if len(digits) != width or any(d not in "0123456789abcdefABCDEF" for d in digits):
                return None, i
            value = int(digits, 16)
            return (value if value <= MAX_CODEPOINT else None), i + 2 + width
        if e in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[e], i + 2
        if ord(e) < 128 and not e.isalnum():
            return ord(e), i + 2
        return None, i
    if c in "[]" or (c == "-" and 0 < i < len(body) - 1):
        return None, i
    return ord(c), i + 1


def complement(ranges: Ranges) -> Ranges:
    """Every code point 0..MAX_CODEPOINT not in ``ranges``."""
    out, start = [], 0
    for lo, hi in ranges:
        if lo > start:
            out.append((start, lo - 1))
        start = hi + 1
    if start <= MAX_CODEPOINT:
        out.append((start, MAX_CODEPOINT))
    return tuple(out)


def _without_surrogates(ranges: Ranges) -> Ranges:
    out = []
    for lo, hi in ranges:
        if lo < SURROGATES[0]:
            out.append((lo, min(hi, SURROGATES[0] - 1)))
        if hi > SURROGATES[1]:
            out.append((max(lo, SURROGATES[1] + 1), hi))
    return normalize(out)


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
