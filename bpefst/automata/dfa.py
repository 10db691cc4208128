"""Deterministic finite automata over integer alphabets.

A :class:`DFA` has states ``0 .. n-1`` (``n >= 1``), a ``start`` state, a
frozenset of ``finals`` and a list ``transitions`` where ``transitions[q]`` is
a dict ``symbol -> target``.  The transition function is *partial*: a missing
arc goes to an implicit dead (sink) state, which is never stored.  Symbols are
non-negative ints (bytes, character ids, token ids...).

DFAs are values: no operation in this package mutates its arguments, and
``==`` compares the stored structure (same numbering, same arcs).  Two
*minimal* DFAs (see :func:`bpefst.automata.minimize`) are ``==`` exactly when
they accept the same language, because minimization numbers states
canonically.  Use :class:`DFABuilder` to assemble a DFA state by state.
"""

from __future__ import annotations

from typing import Iterable, Iterator, Mapping, Sequence


class DFA:
    """A deterministic automaton with a partial transition function."""

    __slots__ = ("transitions", "start", "finals")

    transitions: list[dict[int, int]]
    start: int
    finals: frozenset[int]

    def __init__(
        self,
        transitions: Sequence[Mapping[int, int]],
        start: int = 0,
        finals: Iterable[int] = (),
        *,
        check: bool = True,
    ) -> None:
        """Build a DFA; with ``check`` (the default) copy and validate the table.

        Internal constructions pass ``check=False`` and hand over ownership of
        a freshly built ``list[dict]``.
        """
        if check:
            transitions = [dict(row) for row in transitions]
            finals = frozenset(finals)
            _validate(transitions, start, finals)
        elif not isinstance(finals, frozenset):
            finals = frozenset(finals)
        self.transitions = transitions  # type: ignore[assignment]
        self.start = start
        self.finals = finals  # type: ignore[assignment]

    # ----------------------------------------------------------- constructors
    @classmethod
    def empty_language(cls) -> "DFA":
        """The one-state DFA accepting nothing (the minimal DFA of the empty language)."""
        return cls([{}], 0, frozenset(), check=False)

    @classmethod
    def epsilon(cls) -> "DFA":
        """The one-state DFA accepting only the empty string."""
        return cls([{}], 0, frozenset((0,)), check=False)

    @classmethod
    def universal(cls, alphabet: Iterable[int]) -> "DFA":
        """The one-state DFA accepting every string over ``alphabet``."""
        return cls([{a: 0 for a in sorted(set(alphabet))}], 0, frozenset((0,)))

    @classmethod
    def from_strings(cls, strings: Iterable[Sequence[int]]) -> "DFA":
        """A trie accepting exactly the given strings (not minimized)."""
        transitions: list[dict[int, int]] = [{}]
        finals = set()
        for string in strings:
            q = 0
            for symbol in string:
                row = transitions[q]
                nxt = row.get(symbol)
                if nxt is None:
                    if not isinstance(symbol, int) or symbol < 0:
                        raise ValueError(f"symbols must be non-negative ints, got {symbol!r}")
                    nxt = row[symbol] = len(transitions)
                    transitions.append({})
                q = nxt
            finals.add(q)
        return cls(transitions, 0, frozenset(finals), check=False)

    @classmethod
    def from_arcs(
        cls, num_states: int, start: int, finals: Iterable[int], arcs: Iterable[tuple[int, int, int]]
    ) -> "DFA":
        """Build from ``(source, symbol, target)`` triples; rejects two arcs with one label."""
        builder = DFABuilder()
        builder.add_states(num_states)
        for src, symbol, dst in arcs:
            builder.add_arc(src, symbol, dst)
        for q in finals:
            builder.set_final(q)
        builder.start = start
        return builder.build()

    # ------------------------------------------------------------- inspection
    @property
    def num_states(self) -> int:
        """Number of stored states (the implicit dead state is not counted)."""
        return len(self.transitions)

    @property
    def num_arcs(self) -> int:
        """Number of stored arcs."""
        return sum(map(len, self.transitions))

    def step(self, state: int, symbol: int) -> int | None:
        """The target of ``state --symbol-->``, or ``None`` for the dead state."""
        return self.transitions[state].get(symbol)

    def run(self, seq: Iterable[int], state: int | None = None) -> int | None:
        """The state reached from ``state`` (default: start) after ``seq``, or ``None`` if dead."""
        q = self.start if state is None else state
        transitions = self.transitions
        for symbol in seq:
            q = transitions[q].get(symbol)
            if q is None:
                return None
        return q

    def accepts(self, seq: Iterable[int]) -> bool:
        """Whether the automaton accepts the symbol sequence ``seq``."""
        q = self.run(seq)
        return q is not None and q in self.finals

    def arcs(self) -> Iterator[tuple[int, int, int]]:
        """All arcs as ``(source, symbol, target)``, by source then insertion order."""
        for q, row in enumerate(self.transitions):
            for symbol, target in row.items():
                yield q, symbol, target

    def alphabet(self) -> frozenset[int]:
        """The set of symbols that label at least one arc."""
        symbols: set[int] = set()
        for row in self.transitions:
            symbols.update(row)
        return frozenset(symbols)

    def is_empty(self) -> bool:
        """Whether the language is empty (no final state is reachable from start)."""
        finals = self.finals
        if not finals:
            return True
        transitions = self.transitions
        seen = bytearray(len(transitions))
        seen[self.start] = 1
        stack = [self.start]
        while stack:
            q = stack.pop()
            if q in finals:
                return False
            for r in transitions[q].values():
                if not seen[r]:
                    seen[r] = 1
                    stack.append(r)
        return True

    # ----------------------------------------------------------------- values
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DFA):
            return NotImplemented
        return self.start == other.start and self.finals == other.finals and self.transitions == other.transitions

    __hash__ = None  # type: ignore[assignment]  # mutable containers inside; compare, don't hash

    def __repr__(self) -> str:
        return f"DFA(states={self.num_states}, arcs={self.num_arcs}, start={self.start}, finals={len(self.finals)})"

    def copy(self) -> "DFA":
        """A deep copy (fresh dicts), for callers that want to mutate one."""
        return DFA([dict(row) for row in self.transitions], self.start, self.finals, check=False)


class DFABuilder:
    """Assemble a DFA incrementally: ``add_state``, ``add_arc``, ``set_final``, ``build``.

    ``start`` defaults to state 0 and may be assigned at any time.
    """

    def __init__(self) -> None:
        self.transitions: list[dict[int, int]] = []
        self.finals: set[int] = set()
        self.start = 0

    @property
    def num_states(self) -> int:
        return len(self.transitions)

    def add_state(self, final: bool = False) -> int:
        """Add a state and return its number."""
        q = len(self.transitions)
        self.transitions.append({})
        if final:
            self.finals.add(q)
        return q

    def add_states(self, count: int) -> range:
        """Add ``count`` non-final states and return their numbers."""
        first = len(self.transitions)
        self.transitions.extend({} for _ in range(count))
        return range(first, first + count)

    def add_arc(self, src: int, symbol: int, dst: int) -> None:
        """Add ``src --symbol--> dst``; re-adding the same arc is allowed, a conflicting one is not."""
        n = len(self.transitions)
        if not (0 <= src < n and 0 <= dst < n):
            raise ValueError(f"arc {src} --{symbol}--> {dst} refers to a state outside 0..{n - 1}")
        if not isinstance(symbol, int) or symbol < 0:
            raise ValueError(f"symbols must be non-negative ints, got {symbol!r}")
        row = self.transitions[src]
        old = row.setdefault(symbol, dst)
        if old != dst:
            raise ValueError(f"state {src} already has an arc on symbol {symbol} (to {old}, not {dst})")

    def set_final(self, state: int, final: bool = True) -> None:
        """Make ``state`` final (or not)."""
        if not 0 <= state < len(self.transitions):
            raise ValueError(f"no state {state}")
        if final:
            self.finals.add(state)
        else:
            self.finals.discard(state)

    def build(self) -> DFA:
        """The DFA built so far (the builder may keep being used; the DFA does not share state)."""
        if not self.transitions:
            raise ValueError("a DFA needs at least one state")
        return DFA(self.transitions, self.start, self.finals)


def _validate(transitions: list[dict[int, int]], start: int, finals: frozenset[int]) -> None:
    n = len(transitions)
    if n == 0:
        raise ValueError("a DFA needs at least one state")
    if not (isinstance(start, int) and 0 <= start < n):
        raise ValueError(f"start state {start!r} is outside 0..{n - 1}")
    for q in finals:
        if not (isinstance(q, int) and 0 <= q < n):
            raise ValueError(f"final state {q!r} is outside 0..{n - 1}")
    for q, row in enumerate(transitions):
        for symbol, target in row.items():
            if not (isinstance(symbol, int) and symbol >= 0):
                raise ValueError(f"state {q}: symbol {symbol!r} is not a non-negative int")
            if not (isinstance(target, int) and 0 <= target < n):
                raise ValueError(f"state {q}: arc on {symbol} goes to {target!r}, outside 0..{n - 1}")
