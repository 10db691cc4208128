"""Relabelling symbols and renumbering states.

``map_symbols`` applies a symbol mapping to every arc (e.g. character ids to
byte values, or tokens to their class ids); a mapping that sends two arcs out
of one state to the same symbol with different targets would make the
automaton nondeterministic, which is reported -- relabel the NFA
(:meth:`NFA.map_symbols`) and determinize instead.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from .dfa import DFA


def map_symbols(dfa: DFA, mapping: Mapping[int, int | None] | Callable[[int], int | None]) -> DFA:
    """Relabel arcs with ``mapping[symbol]``; arcs mapped to ``None`` (or missing from a Mapping) are dropped.

    Raises ValueError if the result would be nondeterministic.  The result is
    not trimmed (dropping arcs can strand states; call :func:`trim`).
    """
    get = mapping.get if isinstance(mapping, Mapping) else mapping
    transitions = []
    for q, row in enumerate(dfa.transitions):
        new_row: dict[int, int] = {}
        for symbol, target in row.items():
            image = get(symbol)
            if image is None:
                continue
            if not isinstance(image, int) or image < 0:
                raise ValueError(f"symbol {symbol} maps to {image!r}, not a non-negative int")
            if new_row.setdefault(image, target) != target:
                raise ValueError(
                    f"relabelling is not deterministic at state {q}: two arcs become symbol {image}; "
                    "relabel an NFA and determinize instead"
                )
        transitions.append(new_row)
    return DFA(transitions, dfa.start, dfa.finals, check=False)


def renumber(dfa: DFA, order: Sequence[int]) -> DFA:
    """The same DFA with state ``order[i]`` renamed ``i``; ``order`` must be a permutation."""
    n = dfa.num_states
    if sorted(order) != list(range(n)):
        raise ValueError("order must be a permutation of the states")
    new_id = [0] * n
    for i, q in enumerate(order):
        new_id[q] = i
    transitions = [{a: new_id[r] for a, r in dfa.transitions[q].items()} for q in order]
    return DFA(transitions, new_id[dfa.start], frozenset(new_id[q] for q in dfa.finals), check=False)
