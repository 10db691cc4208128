"""Product constructions: intersection, union, difference, symmetric difference.

Rabin & Scott (1959): running two DFAs in lockstep gives a DFA on pairs of
states whose finality is any Boolean combination of the two.  The product is
built lazily -- breadth-first from the pair of start states, visiting only
reachable pairs -- so its cost is the number of reachable pairs times their
arcs, usually far below ``|A| * |B|``.  Pairs are encoded as single ints
``p * (|B| + 1) + (q + 1)`` with ``-1`` standing for the implicit dead state
of a partial DFA.

* intersection only follows symbols both sides have (iterating over the
  smaller row) and never needs the dead state;
* difference ``A - B`` follows A's arcs, with B possibly dead;
* union and symmetric difference follow either side's arcs, with either side
  possibly dead (never both).

Every result is trimmed (:func:`~bpefst.automata.trim.trim`), not minimized.
"""

from __future__ import annotations

from .dfa import DFA
from .errors import check_limit
from .trimming import trim


def intersect(a: DFA, b: DFA, max_states: int | None = None) -> DFA:
    """A trim DFA for ``L(a) & L(b)``."""
    ta, tb = a.transitions, b.transitions
    width = len(tb) + 1
    index = {a.start * width + b.start + 1: 0}
    pairs = [(a.start, b.start)]
    transitions: list[dict[int, int]] = []
    for p, q in pairs:  # grows while we iterate
        row_p, row_q = ta[p], tb[q]
        row: dict[int, int] = {}
        if len(row_p) <= len(row_q):  # walk the smaller row, look up in the larger
            for symbol, r in row_p.items():
                s = row_q.get(symbol)
                if s is not None:
                    fresh = len(pairs)
                    target = row[symbol] = index.setdefault(r * width + s + 1, fresh)
                    if target == fresh:
                        pairs.append((r, s))
        else:
            for symbol, s in row_q.items():
                r = row_p.get(symbol)
                if r is not None:
                    fresh = len(pairs)
                    target = row[symbol] = index.setdefault(r * width + s + 1, fresh)
                    if target == fresh:
                        pairs.append((r, s))
        transitions.append(row)
        if max_states is not None and len(pairs) > max_states:
            check_limit(len(pairs), max_states, "intersection")
    fa, fb = a.finals, b.finals
    finals = frozenset(i for i, (p, q) in enumerate(pairs) if p in fa and q in fb)
    return trim(DFA(transitions, 0, finals, check=False))


def union(a: DFA, b: DFA, max_states: int | None = None) -> DFA:
    """A trim DFA for ``L(a) | L(b)``."""
    return _product(a, b, lambda x, y: x or y, True, max_states, "union")


def difference(a: DFA, b: DFA, max_states: int | None = None) -> DFA:
    """A trim DFA for ``L(a) - L(b)`` (no alphabet needed: the dead state of ``b`` rejects)."""
    return _product(a, b, lambda x, y: x and not y, False, max_states, "difference")


def symmetric_difference(a: DFA, b: DFA, max_states: int | None = None) -> DFA:
    """A trim DFA for ``L(a) ^ L(b)``; empty exactly when the languages are equal."""
    return _product(a, b, lambda x, y: x != y, True, max_states, "symmetric difference")


def _product(a: DFA, b: DFA, accept, follow_b: bool, max_states: int | None, what: str) -> DFA:
    """Reachable product where either side may be dead (-1); ``follow_b`` adds b's arcs."""
    ta, tb = a.transitions, b.transitions
    empty: dict[int, int] = {}
    width = len(tb) + 1
    index = {a.start * width + b.start + 1: 0}
    pairs = [(a.start, b.start)]
    transitions: list[dict[int, int]] = []
    for p, q in pairs:  # grows while we iterate
        row_p = ta[p] if p >= 0 else empty
        row_q = tb[q] if q >= 0 else empty
        row: dict[int, int] = {}
        for symbol, r in row_p.items():
            s = row_q.get(symbol, -1)
            key = r * width + s + 1
            target = index.get(key)
            if target is None:
                target = index[key] = len(pairs)
                pairs.append((r, s))
                check_limit(len(pairs), max_states, what)
            row[symbol] = target
        if follow_b:
            for symbol, s in row_q.items():
                if symbol in row_p:
                    continue
                key = -width + s + 1  # r = -1
                target = index.get(key)
                if target is None:
                    target = index[key] = len(pairs)
                    pairs.append((-1, s))
                    check_limit(len(pairs), max_states, what)
                row[symbol] = target
        transitions.append(row)
    fa, fb = a.finals, b.finals
    finals = frozenset(i for i, (p, q) in enumerate(pairs) if accept(p in fa, q in fb))
    return trim(DFA(transitions, 0, finals, check=False))
