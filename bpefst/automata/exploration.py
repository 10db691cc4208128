"""Build a DFA lazily from an implicit one: breadth-first search over hashable states.

Many constructions -- products, the promotion of a text pattern to tokens, an
automaton whose arcs are computed on demand -- describe a DFA implicitly: a
start state, a function giving the outgoing arcs of a state, and a finality
test, where states are arbitrary hashable values (pairs, tuples, frozensets).
:func:`explore` materializes only the part reachable from the start,
numbering states in discovery order, which is breadth-first with arcs taken in
the order ``successors`` yields them.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, TypeVar

from .dfa import DFA
from .numbering import Numbering

K = TypeVar("K", bound=Hashable)


def explore(
    start: K,
    successors: Callable[[K], Iterable[tuple[int, K]]],
    is_final: Callable[[K], bool],
    max_states: int | None = None,
) -> tuple[DFA, list[K]]:
    """Materialize the reachable part of an implicit DFA.

    ``successors(key)`` yields ``(symbol, next_key)`` pairs (at most one per
    symbol; a missing symbol means the dead state).  Returns the DFA (accessible,
    not trimmed) and ``keys`` with ``keys[q]`` the implicit state behind ``q``.
    """
    number = Numbering("exploration", max_states)
    keys = number.keys
    number(start)
    transitions: list[dict[int, int]] = []
    for key in keys:  # grows while we iterate
        row: dict[int, int] = {}
        for symbol, nxt in successors(key):
            target = number(nxt)
            if row.setdefault(symbol, target) != target:
                raise ValueError(f"successors({key!r}) gave two arcs on symbol {symbol}")
        transitions.append(row)
    finals = frozenset(i for i, key in enumerate(keys) if is_final(key))
    return DFA(transitions, 0, finals, check=False), keys
