"""Nondeterministic finite automata with epsilon arcs.

An :class:`NFA` has states ``0 .. n-1``, one ``start`` state, a frozenset of
``finals``, labelled arcs ``arcs[q] = [(symbol, target), ...]`` and epsilon
arcs ``eps[q] = [target, ...]`` kept in a separate list (so a symbol is always
an int).  NFAs are what the Thompson combinators of
:mod:`bpefst.automata.thompson` produce and what :func:`determinize` consumes.
Like DFAs they are values: operations return new NFAs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

if TYPE_CHECKING:
    from .dfa import DFA


class NFA:
    """A nondeterministic automaton with epsilon arcs."""

    __slots__ = ("arcs", "eps", "start", "finals")

    arcs: list[list[tuple[int, int]]]
    eps: list[list[int]]
    start: int
    finals: frozenset[int]

    def __init__(
        self,
        arcs: Sequence[Iterable[tuple[int, int]]],
        eps: Sequence[Iterable[int]] | None = None,
        start: int = 0,
        finals: Iterable[int] = (),
        *,
        check: bool = True,
    ) -> None:
        """Build an NFA; ``eps`` defaults to no epsilon arcs.  ``check`` validates and copies."""
        if eps is None:
            eps = [[] for _ in range(len(arcs))]
        if check:
            arcs = [list(row) for row in arcs]
            eps = [list(row) for row in eps]
            finals = frozenset(finals)
            _validate(arcs, eps, start, finals)
        elif not isinstance(finals, frozenset):
            finals = frozenset(finals)
        self.arcs = arcs  # type: ignore[assignment]
        self.eps = eps  # type: ignore[assignment]
        self.start = start
        self.finals = finals  # type: ignore[assignment]

    @classmethod
    def from_dfa(cls, dfa: "DFA") -> "NFA":
        """The same automaton seen as an NFA (no epsilon arcs)."""
        arcs = [list(row.items()) for row in dfa.transitions]
        return cls(arcs, [[] for _ in arcs], dfa.start, dfa.finals, check=False)

    # ------------------------------------------------------------- inspection
    @property
    def num_states(self) -> int:
        return len(self.arcs)

    @property
    def num_arcs(self) -> int:
        """Number of labelled arcs plus epsilon arcs."""
        return sum(map(len, self.arcs)) + sum(map(len, self.eps))

    def alphabet(self) -> frozenset[int]:
        """The set of symbols labelling at least one arc."""
        return frozenset(symbol for row in self.arcs for symbol, _ in row)

    def epsilon_closure(self, states: Iterable[int]) -> frozenset[int]:
        """All states reachable from ``states`` through epsilon arcs only (depth-first search)."""
        eps = self.eps
        closure = set(states)
        stack = list(closure)
        while stack:
            for r in eps[stack.pop()]:
                if r not in closure:
                    closure.add(r)
                    stack.append(r)
        return frozenset(closure)

    def accepts(self, seq: Iterable[int]) -> bool:
        """Simulate the NFA on ``seq`` by tracking the set of live states."""
        current = self.epsilon_closure((self.start,))
        arcs = self.arcs
        for symbol in seq:
            nxt = [r for q in current for a, r in arcs[q] if a == symbol]
            if not nxt:
                return False
            current = self.epsilon_closure(nxt)
        return not current.isdisjoint(self.finals)

    # ------------------------------------------------------------ operations
    def determinize(self, max_states: int | None = None) -> "DFA":
        """Subset construction; see :func:`bpefst.automata.determinize`."""
        from .determinization import determinize

        return determinize(self, max_states)

    def map_symbols(self, mapping: Mapping[int, int | None] | Callable[[int], int | None]) -> "NFA":
        """Relabel every arc with ``mapping[symbol]``; arcs mapped to ``None`` (or missing) are dropped."""
        get = mapping.get if isinstance(mapping, Mapping) else mapping
        arcs = []
        for row in self.arcs:
            new_row = []
            for symbol, target in row:
                image = get(symbol)
                if image is not None:
                    new_row.append((image, target))
            arcs.append(new_row)
        return NFA(arcs, [list(row) for row in self.eps], self.start, self.finals)

    def concat(self, *others: "NFA") -> "NFA":
        from .thompson import concat

        return concat(self, *others)

    def union(self, *others: "NFA") -> "NFA":
        from .thompson import union

        return union(self, *others)

    def star(self) -> "NFA":
        from .thompson import star

        return star(self)

    def plus(self) -> "NFA":
        from .thompson import plus

        return plus(self)

    def optional(self) -> "NFA":
        from .thompson import optional

        return optional(self)

    def repeat(self, low: int, high: int | None = None) -> "NFA":
        from .thompson import repeat

        return repeat(self, low, high)

    def __repr__(self) -> str:
        return f"NFA(states={self.num_states}, arcs={self.num_arcs}, start={self.start}, finals={len(self.finals)})"


class NFABuilder:
    """Assemble an NFA: ``add_state``, ``add_arc``, ``add_epsilon``, ``set_final``, ``build``."""

    def __init__(self) -> None:
        self.arcs: list[list[tuple[int, int]]] = []
        self.eps: list[list[int]] = []
        self.finals: set[int] = set()
        self.start = 0

    def add_state(self, final: bool = False) -> int:
        q = len(self.arcs)
        self.arcs.append([])
        self.eps.append([])
        if final:
            self.finals.add(q)
        return q

    def add_arc(self, src: int, symbol: int, dst: int) -> None:
        self.arcs[src].append((symbol, dst))

    def add_epsilon(self, src: int, dst: int) -> None:
        self.eps[src].append(dst)

    def set_final(self, state: int, final: bool = True) -> None:
        if final:
            self.finals.add(state)
        else:
            self.finals.discard(state)

    def build(self) -> NFA:
        if not self.arcs:
            raise ValueError("an NFA needs at least one state")
        return NFA(self.arcs, self.eps, self.start, self.finals)


def _validate(arcs: list[list[tuple[int, int]]], eps: list[list[int]], start: int, finals: frozenset[int]) -> None:
    n = len(arcs)
    if n == 0:
        raise ValueError("an NFA needs at least one state")
    if len(eps) != n:
        raise ValueError(f"epsilon table has {len(eps)} rows for {n} states")
    if not (isinstance(start, int) and 0 <= start < n):
        raise ValueError(f"start state {start!r} is outside 0..{n - 1}")
    for q in finals:
        if not (isinstance(q, int) and 0 <= q < n):
            raise ValueError(f"final state {q!r} is outside 0..{n - 1}")
    for q in range(n):
        for symbol, target in arcs[q]:
            if not (isinstance(symbol, int) and symbol >= 0):
                raise ValueError(f"state {q}: symbol {symbol!r} is not a non-negative int")
            if not (isinstance(target, int) and 0 <= target < n):
                raise ValueError(f"state {q}: arc to {target!r} is outside 0..{n - 1}")
        for target in eps[q]:
            if not (isinstance(target, int) and 0 <= target < n):
                raise ValueError(f"state {q}: epsilon arc to {target!r} is outside 0..{n - 1}")
