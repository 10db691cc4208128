"""Completion and complement with respect to an explicit alphabet.

A partial DFA rejects through its implicit dead state, so complementing needs
to know the alphabet Sigma the complement is taken in: the complement of L is
``Sigma* - L``.  :func:`complete` makes the dead state explicit (a non-final
sink with a self-loop on every symbol of Sigma) and adds the missing arcs;
:func:`complement` completes and then swaps final and non-final states.
"""

from __future__ import annotations

from typing import Iterable

from .dfa import DFA
from .trimming import trim


def complete(dfa: DFA, alphabet: Iterable[int]) -> DFA:
    """An equivalent DFA with an arc on every symbol of ``alphabet`` from every state.

    Arcs on symbols outside ``alphabet`` are kept.  A sink state is appended
    only if some arc is missing.
    """
    symbols = sorted(set(alphabet))
    n = dfa.num_states
    sink = n
    transitions = []
    needs_sink = False
    for row in dfa.transitions:
        new_row = dict(row)
        for symbol in symbols:
            if symbol not in new_row:
                new_row[symbol] = sink
                needs_sink = True
        transitions.append(new_row)
    if needs_sink:
        transitions.append({symbol: sink for symbol in symbols})
    return DFA(transitions, dfa.start, dfa.finals, check=False)


def complement(dfa: DFA, alphabet: Iterable[int]) -> DFA:
    """A trim DFA for ``alphabet* - L(dfa)``.

    Arcs on symbols outside ``alphabet`` are dropped first (strings using them
    are not in ``alphabet*`` anyway).
    """
    symbols = frozenset(alphabet)
    restricted = [{a: r for a, r in row.items() if a in symbols} for row in dfa.transitions]
    full = complete(DFA(restricted, dfa.start, dfa.finals, check=False), symbols)
    finals = frozenset(range(full.num_states)) - full.finals
    return trim(DFA(full.transitions, full.start, finals, check=False))
