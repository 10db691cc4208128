"""Canonical promotion through the precomputed A_BPE (Eq. 5 of seed 000).

The agnostic lattice accepts every tokenization of every match; intersecting it
with A_BPE keeps exactly the canonical ones.  The product is built lazily from
the start pair, visiting only reachable pairs.

A product state is a lattice state ``q`` plus what A_BPE remembers, which by
1-locality is the last token read, i.e. its banned set.  Only the part of the
banned set that ``q`` can still read matters, so the product is keyed by
``(q, BANNED(last) ∩ out(q))``: pairs with the same future share a state before
minimization starts, which keeps the product close to minimal.
"""

from __future__ import annotations

from collections import deque

from ..automata import DFA, minimize, trim
from ..automata.errors import StateLimitExceeded
from ..bpe import CanonicalAutomaton, ExplicitCanonical


def intersect_canonical(lattice: DFA, automaton: CanonicalAutomaton, max_states: int | None = None, minimal: bool = True) -> DFA:
    """``lattice ∩ A_BPE`` over token ids (lazy product, reachable pairs only)."""
    transitions = lattice.transitions
    reachable = automaton.reachable
    out_mask = [_mask(t for t in row if reachable[t]) for row in transitions]
    banned_within = _banned_within(automaton, transitions, out_mask)
    index: dict[tuple[int, int], int] = {(lattice.start, 0): 0}
    queue = deque([(lattice.start, 0)])
    rows: list[dict[int, int]] = [{}]
    finals = []
    while queue:
        q, banned = queue.popleft()
        source = index[(q, banned)]
        if q in lattice.finals:
            finals.append(source)
        row = rows[source]
        for t, target in transitions[q].items():
            if not reachable[t] or banned >> t & 1:
                continue
            key = (target, banned_within(t, target))
            state = index.get(key)
            if state is None:
                state = len(rows)
                if max_states is not None and state >= max_states:
                    raise StateLimitExceeded(f"canonical promotion exceeds --max-states {max_states:,}")
                index[key] = state
                rows.append({})
                queue.append(key)
            row[t] = state
    product = DFA(rows, 0, frozenset(finals), check=False)
    return minimize(trim(product)) if minimal else trim(product)


def _mask(tokens) -> int:
    mask = 0
    for t in tokens:
        mask |= 1 << t
    return mask


def _banned_within(automaton: CanonicalAutomaton, transitions: list[dict[int, int]], out_mask: list[int]):
    """``(token, q) -> BANNED(token) ∩ out(q)`` as a bitset, memoized."""
    memo: dict[tuple[int, int], int] = {}
    if isinstance(automaton, ExplicitCanonical):
        token_class, class_banned = automaton.token_class, automaton.class_banned

        def banned_within(t: int, q: int) -> int:
            key = (token_class[t], q)
            value = memo.get(key)
            if value is None:
                value = memo[key] = class_banned[key[0]] & out_mask[q]
            return value
    else:
        allowed = automaton.allowed

        def banned_within(t: int, q: int) -> int:
            key = (t, q)
            value = memo.get(key)
            if value is None:
                value = memo[key] = _mask(v for v in transitions[q] if automaton.reachable[v] and not allowed(t, v))
            return value

    return banned_within
