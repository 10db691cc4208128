"""Subset construction: NFA -> equivalent DFA.

Rabin & Scott (1959), "Finite automata and their decision problems".  Each
DFA state is the epsilon-closed set of NFA states reachable by some input;
only subsets reachable from the start subset are built (breadth-first, symbols
in sorted order, so the numbering is deterministic).  Subsets are keyed by
frozensets.  Two shortcuts keep it fast in pure Python: the set of targets
reached on a symbol is looked up *before* its epsilon closure is computed (the
same pre-closure set recurs often), and NFAs without epsilon arcs skip closure
altogether.  The empty subset is the implicit dead state and never stored.

The result can be exponentially larger than the NFA; ``max_states`` bounds it
(:class:`~bpefst.automata.errors.StateLimitExceeded`).
"""

from __future__ import annotations

from .dfa import DFA
from .errors import check_limit
from .nfa import NFA
from .trimming import trim


def determinize(nfa: NFA, max_states: int | None = None) -> DFA:
    """A trim DFA accepting the language of ``nfa`` (not minimized; see :func:`minimize`)."""
    arcs, eps, nfa_finals = nfa.arcs, nfa.eps, nfa.finals
    has_eps = any(eps)

    def close(states: frozenset[int]) -> frozenset[int]:
        closure = set(states)
        stack = list(states)
        while stack:
            for r in eps[stack.pop()]:
                if r not in closure:
                    closure.add(r)
                    stack.append(r)
        return frozenset(closure) if len(closure) != len(states) else states

    start = frozenset((nfa.start,))
    if has_eps:
        start = close(start)
    index: dict[frozenset[int], int] = {start: 0}
    before_closure: dict[frozenset[int], int] = {}
    subsets = [start]
    transitions: list[dict[int, int]] = []
    for subset in subsets:  # grows while we iterate: breadth-first
        moves: dict[int, set[int]] = {}
        for q in subset:
            for symbol, r in arcs[q]:
                targets = moves.get(symbol)
                if targets is None:
                    moves[symbol] = {r}
                else:
                    targets.add(r)
        row: dict[int, int] = {}
        for symbol in sorted(moves):
            key = frozenset(moves[symbol])
            target = before_closure.get(key)
            if target is None:
                closed = close(key) if has_eps else key
                target = index.get(closed)
                if target is None:
                    target = len(subsets)
                    check_limit(target + 1, max_states, "determinization")
                    index[closed] = target
                    subsets.append(closed)
                before_closure[key] = target
            row[symbol] = target
        transitions.append(row)
    finals = frozenset(i for i, subset in enumerate(subsets) if not nfa_finals.isdisjoint(subset))
    return trim(DFA(transitions, 0, finals, check=False))
