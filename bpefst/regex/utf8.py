"""A set of Unicode scalar values -> the minimal DFA of their UTF-8 encodings.

UTF-8 writes a scalar value ``c`` in ``n`` bytes, ``n`` fixed by the range
``c`` lies in (1: up to U+007F, 2: up to U+07FF, 3: up to U+FFFF, 4: up to
U+10FFFF): a lead byte carrying the high bits, then ``n - 1`` continuation
bytes ``10xxxxxx`` carrying six bits each.  Only the shortest form is valid
and the surrogates U+D800..U+DFFF have no encoding; building the automaton
from the set of scalar values (which never holds surrogates) by length class
gives exactly the valid encodings, so overlong forms, surrogates, stray
continuation bytes and truncated sequences are all rejected.

After the lead byte, what remains to be read is ``k`` continuation bytes
whose 6k payload bits ``v`` must satisfy ``high_bits * 64**k + v in S``:
the *residual* ``{v : ...}`` as a set of ranges inside ``[0, 64**k)``.  A state
is a pair ``(k, residual)``; reading continuation byte ``0x80 | d`` keeps the
part of the residual in block ``d`` (of size ``64**(k-1)``) and shifts it
down.  States with equal pairs are shared (memoized), and states with
different pairs accept different byte strings, so the result is minimal.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

from ..automata import DFA
from .charsets import Ranges, normalize

_LENGTH_CLASSES = ((1, 0x0, 0x7F, 0x00), (2, 0x80, 0x7FF, 0xC0), (3, 0x800, 0xFFFF, 0xE0), (4, 0x10000, 0x10FFFF, 0xF0))


def encode(codepoint: int) -> bytes:
    """The UTF-8 encoding of a scalar value."""
    return chr(codepoint).encode("utf-8")


def _clip_blocks(ranges: Ranges, block: int) -> dict[int, Ranges]:
    """Split ``ranges`` at multiples of ``block``: block index -> ranges shifted into ``[0, block)``."""
    out: dict[int, list[tuple[int, int]]] = {}
    for lo, hi in ranges:
        for b in range(lo // block, hi // block + 1):
            base = b * block
            out.setdefault(b, []).append((max(lo, base) - base, min(hi, base + block - 1) - base))
    return {b: tuple(parts) for b, parts in out.items()}


def _clip(ranges: Ranges, lo: int, hi: int) -> Ranges:
    return tuple((max(a, lo), min(b, hi)) for a, b in ranges if a <= hi and b >= lo)


@lru_cache(maxsize=1024)
def utf8_dfa(ranges: Ranges) -> DFA:
    """Minimal trim DFA over bytes accepting the UTF-8 encodings of the scalar values in ``ranges``."""
    if not ranges:
        return DFA.empty_language()
    transitions: list[dict[int, int]] = [{}, {}]  # 0: start, 1: accept (a whole character read)
    memo: dict[tuple[int, Ranges], int] = {}

    def state(k: int, residual: Ranges) -> int:
        if k == 0:
            return 1
        key = (k, residual)
        q = memo.get(key)
        if q is None:
            q = memo[key] = len(transitions)
            transitions.append({})
            block = 64 ** (k - 1)
            row = transitions[q]
            for d, part in sorted(_clip_blocks(residual, block).items()):
                row[0x80 | d] = state(k - 1, part)
        return q

    start_row = transitions[0]
    for n, low, high, lead in _LENGTH_CLASSES:
        part = _clip(ranges, low, high)
        if not part:
            continue
        if n == 1:
            for lo, hi in part:
                for b in range(lo, hi + 1):
                    start_row[b] = 1
            continue
        block = 64 ** (n - 1)
        for payload, residual in sorted(_clip_blocks(part, block).items()):
            start_row[lead | payload] = state(n - 1, residual)
    return DFA(transitions, 0, frozenset((1,)), check=False)


def utf8_decoder(classes: Sequence[Ranges]) -> list[dict[int, int]]:
    """The minimal DFA reading one UTF-8 character and telling which of the disjoint ``classes`` it is in.

    ``rows[d][byte]`` is the next state, or ``-1 - k`` where the character
    ends in ``classes[k]``; state 0 is the start (between characters).  The
    construction of :func:`utf8_dfa` with a residual per class: a state is
    ``k`` with each class's residual, equal ones are shared, and two states
    that differ differ in what they accept or in the class a character ends
    in, so the result is minimal.  States are numbered as first reached,
    depth first, bytes ascending.  Invalid UTF-8 has no path.
    """
    rows: list[dict[int, int]] = [{}]
    memo: dict[tuple, int] = {}

    def split(residual: tuple, block: int) -> dict[int, tuple]:
        """Each class's residual split at multiples of ``block``: block index -> (class, its part) pairs."""
        out: dict[int, list] = {}
        for c, ranges in residual:
            for b, part in _clip_blocks(ranges, block).items():
                out.setdefault(b, []).append((c, part))
        return {b: tuple(parts) for b, parts in sorted(out.items())}

    def state(k: int, residual: tuple) -> int:
        key = (k, residual)
        q = memo.get(key)
        if q is None:
            q = memo[key] = len(rows)
            row: dict[int, int] = {}
            rows.append(row)
            if k == 1:
                for c, ranges in residual:
                    for lo, hi in ranges:
                        row.update(dict.fromkeys(range(0x80 | lo, 0x80 | hi + 1), -1 - c))
                rows[q] = dict(sorted(row.items()))
            else:
                for d, part in split(residual, 64 ** (k - 1)).items():
                    row[0x80 | d] = state(k - 1, part)
        return q

    start = rows[0]
    classes = [normalize(ranges) for ranges in classes]  # (one class's adjacent ranges written as two: one state)
    for n, low, high, lead in _LENGTH_CLASSES:
        clipped = tuple((c, part) for c, ranges in enumerate(classes) if (part := _clip(ranges, low, high)))
        if n == 1:
            for c, ranges in clipped:
                for lo, hi in ranges:
                    start.update(dict.fromkeys(range(lo, hi + 1), -1 - c))
            continue
        for payload, residual in split(clipped, 64 ** (n - 1)).items():
            start[lead | payload] = state(n - 1, residual)
    rows[0] = dict(sorted(start.items()))
    return rows
