"""Accessible and co-accessible states, and trimming.

A state is *accessible* if some path from the start reaches it and
*co-accessible* if some path from it reaches a final state; a DFA is *trim*
when every state is both (the dead state being implicit).  Both sets come from
one graph search each: forward from the start, backward from the finals over
the reversed arcs.  Linear in states + arcs.
"""

from __future__ import annotations

from .dfa import DFA


def accessible(dfa: DFA) -> bytearray:
    """``flags[q] == 1`` iff ``q`` is reachable from the start state."""
    transitions = dfa.transitions
    seen = bytearray(len(transitions))
    seen[dfa.start] = 1
    stack = [dfa.start]
    while stack:
        for r in transitions[stack.pop()].values():
            if not seen[r]:
                seen[r] = 1
                stack.append(r)
    return seen


def coaccessible(dfa: DFA) -> bytearray:
    """``flags[q] == 1`` iff some final state is reachable from ``q``."""
    transitions = dfa.transitions
    preds: list[list[int]] = [[] for _ in transitions]
    for q, row in enumerate(transitions):
        for r in row.values():
            preds[r].append(q)
    seen = bytearray(len(transitions))
    stack = list(dfa.finals)
    for q in stack:
        seen[q] = 1
    while stack:
        for p in preds[stack.pop()]:
            if not seen[p]:
                seen[p] = 1
                stack.append(p)
    return seen


def is_trim(dfa: DFA) -> bool:
    """Whether every state is accessible and co-accessible (a lone non-final start counts as trim)."""
    if not dfa.finals:
        return dfa.num_states == 1 and not dfa.transitions[0]
    return all(accessible(dfa)) and all(coaccessible(dfa))


def trim(dfa: DFA) -> DFA:
    """Remove states that are not both accessible and co-accessible.

    Surviving states keep their relative order (renumbered densely); arcs into
    removed states are dropped.  An empty language gives the one-state
    :meth:`DFA.empty_language`.  Returns ``dfa`` itself when nothing changes.
    """
    acc = accessible(dfa)
    coacc = coaccessible(dfa)
    n = dfa.num_states
    keep = [q for q in range(n) if acc[q] and coacc[q]]
    if not coacc[dfa.start]:
        return DFA.empty_language()
    if len(keep) == n:
        return dfa
    new_id = [-1] * n
    for i, q in enumerate(keep):
        new_id[q] = i
    transitions = dfa.transitions
    new_transitions = []
    for q in keep:
        row = {}
        for symbol, r in transitions[q].items():
            j = new_id[r]
            if j >= 0:
                row[symbol] = j
        new_transitions.append(row)
    finals = frozenset(new_id[q] for q in dfa.finals if new_id[q] >= 0)
    return DFA(new_transitions, new_id[dfa.start], finals, check=False)
