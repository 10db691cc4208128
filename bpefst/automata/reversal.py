"""Reversal: an NFA accepting the mirror images of a DFA's strings.

Every arc is turned around; a fresh start state has an epsilon arc to each
former final state, and the former start state becomes the only final state.
(Brzozowski (1962) minimizes by determinize(reverse(determinize(reverse(A)))),
handy as an independent check of :func:`minimize`.)
"""

from __future__ import annotations

from .dfa import DFA
from .nfa import NFA


def reverse(dfa: DFA) -> NFA:
    """An NFA for ``{reversed(w) : w in L(dfa)}``; the new start state is ``dfa.num_states``."""
    n = dfa.num_states
    arcs: list[list[tuple[int, int]]] = [[] for _ in range(n + 1)]
    for q, row in enumerate(dfa.transitions):
        for symbol, r in row.items():
            arcs[r].append((symbol, q))
    eps: list[list[int]] = [[] for _ in range(n + 1)]
    eps[n] = sorted(dfa.finals)
    return NFA(arcs, eps, n, frozenset((dfa.start,)), check=False)
