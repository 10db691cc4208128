"""Language equivalence of DFAs, with a shortest counterexample when they differ.

:func:`equivalent` runs Hopcroft & Karp (1971), "A linear algorithm for
testing equivalence of finite automata": pairs of states that must be
equivalent are merged in a union-find structure, starting from the two start
states; each merge pushes the pair, and popping a pair merges the targets of
its arcs symbol by symbol.  A pair whose components are already in one class
is not explored again, so the work is almost linear in the total size.  The
languages differ iff some merged pair has one final and one non-final state.
The implicit dead state of each partial DFA is one more element of the
union-find (a non-final state with no arcs).

Union-find pruning does not preserve shortest paths, so when the languages
differ, :func:`counterexample` searches the product breadth-first (symbols
ascending) for the first pair that disagrees on finality: its access string is
a shortest counterexample and, among those, the least in lexicographic order.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .dfa import DFA


@dataclass(frozen=True)
class Equivalence:
    """Result of :func:`equivalent`; truthy iff the languages are equal.

    ``counterexample`` is a shortest (then lexicographically least) string
    accepted by exactly one of the two automata, and ``accepted_by`` says which
    one (``"a"`` or ``"b"``); both are ``None`` when the languages are equal.
    """

    equal: bool
    counterexample: tuple[int, ...] | None = None
    accepted_by: str | None = None

    def __bool__(self) -> bool:
        return self.equal


def equivalent(a: DFA, b: DFA) -> Equivalence:
    """Decide ``L(a) == L(b)`` (Hopcroft-Karp); give a counterexample if not."""
    if _hopcroft_karp(a, b):
        return Equivalence(True)
    witness = counterexample(a, b)
    assert witness is not None  # Hopcroft-Karp found a difference
    return Equivalence(False, witness, "a" if a.accepts(witness) else "b")


def counterexample(a: DFA, b: DFA) -> tuple[int, ...] | None:
    """The length-lexicographically least string in exactly one language, or ``None``."""
    ta, tb, fa, fb = a.transitions, b.transitions, a.finals, b.finals
    empty: dict[int, int] = {}
    start = (a.start, b.start)
    if (a.start in fa) != (b.start in fb):
        return ()
    parent: dict[tuple[int, int], tuple[tuple[int, int], int] | None] = {start: None}
    queue = deque([start])
    while queue:
        pair = queue.popleft()
        p, q = pair
        row_p = ta[p] if p >= 0 else empty
        row_q = tb[q] if q >= 0 else empty
        for symbol in sorted(row_p.keys() | row_q.keys()):
            nxt = (row_p.get(symbol, -1), row_q.get(symbol, -1))
            if nxt in parent:
                continue
            parent[nxt] = (pair, symbol)
            if (nxt[0] in fa) != (nxt[1] in fb):
                return _path(parent, nxt)
            queue.append(nxt)
    return None


def _path(parent: dict, pair: tuple[int, int]) -> tuple[int, ...]:
    symbols = []
    link = parent[pair]
    while link is not None:
        pair, symbol = link
        symbols.append(symbol)
        link = parent[pair]
    return tuple(reversed(symbols))


def _hopcroft_karp(a: DFA, b: DFA) -> bool:
    ta, tb, fa, fb = a.transitions, b.transitions, a.finals, b.finals
    na, nb = len(ta), len(tb)
    dead_a, offset_b = na, na + 1  # union-find ids: a's states, a's dead, b's states, b's dead
    dead_b = offset_b + nb
    uf = list(range(dead_b + 1))

    def find(x: int) -> int:
        while uf[x] != x:
            uf[x] = uf[uf[x]]  # path halving
            x = uf[x]
        return x

    empty: dict[int, int] = {}
    uf[find(a.start)] = find(offset_b + b.start)
    stack = [(a.start, b.start)]
    while stack:
        p, q = stack.pop()
        if (p in fa) != (q in fb):  # -1 (dead) is never final
            return False
        row_p = ta[p] if p >= 0 else empty
        row_q = tb[q] if q >= 0 else empty
        for symbol, r in row_p.items():
            s = row_q.get(symbol, -1)
            x = find(r)
            y = find(offset_b + s if s >= 0 else dead_b)
            if x != y:
                uf[x] = y
                stack.append((r, s))
        for symbol, s in row_q.items():
            if symbol in row_p:
                continue
            x = find(dead_a)
            y = find(offset_b + s)
            if x != y:
                uf[x] = y
                stack.append((-1, s))
    return True
