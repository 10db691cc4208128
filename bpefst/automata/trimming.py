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
    """``flags[q] == 1`` iff ``q`` is reachable from the start state (breadth-first, by frontiers)."""
    transitions = dfa.transitions
    seen = {dfa.start}
    frontier = [dfa.start]
    while frontier:
        reached: set[int] = set()
        for q in frontier:
            reached.update(transitions[q].values())
        reached -= seen
        seen |= reached
        frontier = list(reached)
    flags = bytearray(len(transitions))
    for q in seen:
        flags[q] = 1
    return flags


def coaccessible(dfa: DFA, sweeps: int = 2) -> bytearray:
    """``flags[q] == 1`` iff some final state is reachable from ``q``.

    A few cheap sweeps over the states in reverse order first mark every state
    with an arc into an already-marked one (a C-level ``isdisjoint`` per
    state; in practice this settles almost everything); only the states still
    unmarked then get reversed arcs for an exact backward search, so the cost
    stays linear even when the sweeps settle nothing.
    """
    transitions = dfa.transitions
    n = len(transitions)
    live = set(dfa.finals)
    for _ in range(sweeps):
        before = len(live)
        for q in range(n - 1, -1, -1):
            if q not in live and not live.isdisjoint(transitions[q].values()):
                live.add(q)
        if len(live) == before:
            break
    else:
        preds: dict[int, list[int]] = {}
        for q in range(n):
            if q not in live:
                for r in transitions[q].values():
                    sources = preds.get(r)
                    if sources is None:
                        preds[r] = [q]
                    else:
                        sources.append(q)
        stack = [r for r in preds if r in live]
        while stack:
            for p in preds.get(stack.pop(), ()):
                if p not in live:
                    live.add(p)
                    stack.append(p)
    flags = bytearray(n)
    for q in live:
        flags[q] = 1
    return flags


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
