"""Canonical promotion through the precomputed A_BPE (Eq. 5 of seed 000).

The agnostic lattice accepts every tokenization of every match; intersecting it
with A_BPE keeps exactly the canonical ones.  The product is built lazily from
the start pair, visiting only reachable pairs.

A product state is a lattice state ``q`` plus what A_BPE remembers, which by
1-locality is the last token read, i.e. its banned set.  Only the part of the
banned set that ``q`` can still read matters, so the product is keyed by
``(q, BANNED(last) ∩ out(q))``: pairs with the same future share a state before
minimization starts, which keeps the product close to minimal.

Two observations keep the per-arc work in C (dict/zip/map over whole rows):

* the product state an arc ``q -t-> r`` leads to is ``(r, BANNED(t) ∩ out(r))``
  whatever product state it leaves from, so the successors of all of ``q``'s
  arcs are computed once per lattice state and shared by every product state
  over ``q``; and they only depend on ``(r, class of t)`` (explicit encoding:
  tokens with equal banned sets share a class), which is memoized;
* a product state ``(q, B)`` has the arcs of ``q`` minus the few tokens of
  ``B`` (a handful on average), so its row is a copy of the shared row with
  those deleted.

Successor states are numbered when first named by some arc; the ones never
reached through an allowed arc stay empty and unreachable, and the final
trim/minimize drops them (the state limit counts reached states only).
"""

from __future__ import annotations

import re

from ..automata import DFA, minimize, trim
from ..automata.errors import ArcLimitExceeded, StateLimitExceeded
from ..bpe import CanonicalAutomaton, ExplicitCanonical
from .banned_subset import restricted_banned


_HASHED_MASK_BITS = 8192
_LOW_BITS = (1 << 64) - 1
# Explicit A_BPE: its own bitsets for lattices reading at least this share of the vocabulary,
# or fewer than OWN_BITSETS_BELOW tokens (restricting costs a pass over the merges of every
# symbol on the tokens' left spines: weekdays over GPT-2, 80 tokens, take 3.0 ms restricted
# and 0.6 ms with the full bitsets).
OWN_BITSETS_SHARE = 0.5
OWN_BITSETS_BELOW = 512


def intersect_canonical(lattice: DFA, automaton: CanonicalAutomaton, max_states: int | None = None, minimal: bool = True,
                        max_arcs: int | None = None) -> DFA:
    """``lattice ∩ A_BPE`` over token ids (lazy product, reachable pairs only).

    Raises StateLimitExceeded past ``max_states`` states and ArcLimitExceeded
    past ``max_arcs`` arcs written (e-mail patterns over GPT-2 would write
    hundreds of millions before reaching a state limit).
    """
    transitions = lattice.transitions
    reachable = automaton.reachable
    # tokens A_BPE never reads (unreachable ones) are dropped from the lattice rows up front
    symbols: set[int] = set()
    for row in transitions:
        symbols.update(row)
    unreachable = {t for t in symbols if not reachable[t]}
    if unreachable:
        transitions = [{t: r for t, r in row.items() if t not in unreachable} if unreachable.intersection(row) else row
                       for row in transitions]
    out_masks: list[int | None] = [None] * len(transitions)
    token_class, class_banned, bit_of, token_of_bit = banned_view(transitions, automaton)
    if bit_of is None:
        _out_mask = token_mask
    else:
        def _out_mask(row) -> int:
            return token_mask(map(bit_of.__getitem__, row))
    bits = len(reachable) if bit_of is None else len(bit_of)

    # Product states by lattice state, then by banned bitset.  For large vocabularies
    # the bitsets are long ints whose hash costs microseconds (about 4 us at 32k
    # bits), so there a nonzero one is filed under a fingerprint that costs O(1):
    # its lattice state, length and lowest 64 bits; only bitsets with the same
    # fingerprint are compared.  (Comparing against every bitset known for the
    # lattice state made letter loops over cl100k quadratic: 7 of 15 s.)
    plain: dict[int, int] = {}  # lattice state -> product state with nothing banned
    hash_masks = bits <= _HASHED_MASK_BITS
    index: dict[tuple[int, int], int] = {}  # (lattice state, nonzero bitset) -> product state
    by_fingerprint: dict[tuple[int, int, int], list[tuple[int, int]]] = {}  # -> [(bitset, product state)]
    state_q: list[int] = []  # product state -> lattice state
    state_banned: list[tuple[int, ...]] = []  # product state -> the tokens of its lattice state it may not read
    arc_state: dict[tuple[int, int], int] = {}  # (lattice target, token class) -> product state
    # A state will write its lattice state's row minus the tokens it bans, so the arcs
    # are counted when a state is found, not when it is written: an over-large result
    # is refused while the breadth-first frontier is still unwritten.
    promised = 0

    def promise(q: int, banned_count: int) -> None:
        nonlocal promised
        promised += len(transitions[q]) - banned_count
        if max_arcs is not None and promised > max_arcs:
            raise ArcLimitExceeded("canonical promotion", max_arcs)

    def product_state(q: int, banned: int) -> int:
        if not banned:
            state = plain.get(q)
            if state is None:
                state = plain[q] = len(state_q)
                state_q.append(q)
                state_banned.append(())
                if max_states is not None and len(state_q) > max_states:
                    raise StateLimitExceeded("canonical promotion", max_states)
                promise(q, 0)
            return state
        if hash_masks:
            state = index.get((q, banned))
            if state is not None:
                return state
            state = index[(q, banned)] = len(state_q)
        else:
            fingerprint = (q, banned.bit_length(), banned & _LOW_BITS)
            known = by_fingerprint.get(fingerprint)
            if known is None:
                known = by_fingerprint[fingerprint] = []
            for mask, state in known:
                if mask == banned:
                    return state
            state = len(state_q)
            known.append((banned, state))
        state_q.append(q)
        bits = set_bits(banned)
        state_banned.append(tuple(bits if token_of_bit is None else map(token_of_bit.__getitem__, bits)))
        if max_states is not None and len(state_q) > max_states:
            raise StateLimitExceeded("canonical promotion", max_states)
        promise(q, len(bits))
        return state

    # The product state an arc q -t-> r leads to is (r, BANNED(t) ∩ out(r)) whichever
    # product state it leaves from, so each lattice state's arcs are resolved once
    # (``resolved[q]``) and every product state over q copies that row, minus the
    # few tokens it bans.  Arcs banned at the first visit wait in ``pending[q]``, so
    # no product state is created that no allowed arc reaches.
    resolved: list[dict[int, int] | None] = [None] * len(transitions)
    pending: list[set[int] | None] = [None] * len(transitions)

    def resolve(q: int, skip) -> None:
        """Resolve the arcs of ``q`` whose token is not in ``skip`` (a container)."""
        done = resolved[q]
        get = arc_state.get
        for t, target in transitions[q].items():
            if t in skip:
                continue
            c = token_class[t]
            state = get((target, c))
            if state is None:
                banned = out_masks[target]
                if banned is None:
                    banned = out_masks[target] = _out_mask(transitions[target])
                banned &= class_banned[c]
                if banned:
                    state = product_state(target, banned)
                else:
                    state = plain.get(target)
                    if state is None:
                        state = product_state(target, 0)
                arc_state[(target, c)] = state
            done[t] = state

    def resolve_some(q: int, tokens) -> None:
        done = resolved[q]
        row = transitions[q]
        for t in tokens:
            target = row[t]
            c = token_class[t]
            state = arc_state.get((target, c))
            if state is None:
                banned = out_masks[target]
                if banned is None:
                    banned = out_masks[target] = _out_mask(transitions[target])
                state = arc_state[(target, c)] = product_state(target, banned & class_banned[c])
            done[t] = state

    start = product_state(lattice.start, 0)
    rows: list[dict[int, int]] = []
    finals = []
    lattice_finals = lattice.finals
    source = 0
    while source < len(state_q):  # breadth first; grows while we iterate
        q = state_q[source]
        if q in lattice_finals:
            finals.append(source)
        banned = state_banned[source]
        done = resolved[q]
        if done is None:
            done = resolved[q] = {}
            if banned:
                waiting = pending[q] = set(banned)
                resolve(q, waiting)
            else:
                resolve(q, ())
        else:
            waiting = pending[q]
            if waiting:
                now = waiting.difference(banned)
                if now:
                    resolve_some(q, now)
                    waiting -= now
        row = dict(done)
        for t in banned:
            row.pop(t, None)
        rows.append(row)
        source += 1
        if max_states is not None and len(state_q) > max_states:
            raise StateLimitExceeded("canonical promotion", max_states)
    product = DFA(rows, start, frozenset(finals), check=False)
    return minimize(product) if minimal else trim(product)


def banned_view(transitions: list[dict[int, int]], automaton: CanonicalAutomaton):
    """``(token_class, class_banned, bit_of, token_of_bit)``: banned sets as bitsets, by class.

    Explicit encoding, for a lattice reading at least half the vocabulary or
    only a few hundred tokens: A_BPE's own classes and bitsets over token ids
    (``bit_of`` None).  Otherwise the banned sets restricted to the lattice's tokens
    (:mod:`.banned_subset`, a few spine walks per token instead of a pair walk
    per arc and follower), bit ``i`` standing for ``token_of_bit[i]``; tokens
    with equal restricted sets share a class, which is all the product needs to
    tell them apart.  Narrow bitsets make every set operation cheaper: GPT-2
    numbers (999 tokens) take 17 ms instead of 26 ms, e-mail (11k tokens)
    1.3 s instead of 1.6 s; JSON (44k tokens) takes 2.1 s with A_BPE's own
    bitsets and 3.1 s restricted.
    """
    read = set().union(*transitions)
    if isinstance(automaton, ExplicitCanonical) and not OWN_BITSETS_BELOW <= len(read) < OWN_BITSETS_SHARE * sum(automaton.reachable):
        return automaton.token_class, automaton.class_banned, None, None
    tokens = sorted(read)
    masks = restricted_banned(automaton.forest, tokens, tokens)
    classes: dict[int, int] = {}
    token_class = {t: classes.setdefault(masks[t], len(classes)) for t in tokens}
    return token_class, list(classes), {t: i for i, t in enumerate(tokens)}, tokens


def token_mask(tokens) -> int:
    """The bitset of ``tokens``; through a bytearray for long rows (``|=`` on a growing int is quadratic)."""
    tokens = list(tokens)
    if len(tokens) < 64:
        mask = 0
        for t in tokens:
            mask |= 1 << t
        return mask
    buffer = bytearray((max(tokens) >> 3) + 1)
    for t in tokens:
        buffer[t >> 3] |= 1 << (t & 7)
    return int.from_bytes(buffer, "little")


_ONE = re.compile("1")


def set_bits(mask: int) -> list[int]:
    """The positions of the set bits of ``mask``.

    Clearing the top bit one at a time rebuilds the whole int per bit, which
    is quadratic for the long masks of GPT-2's digit tokens (hundreds of bits
    over 50k); there the binary string is scanned instead.
    """
    if mask.bit_count() <= 32:
        bits = []
        while mask:
            bit = mask.bit_length() - 1
            bits.append(bit)
            mask ^= 1 << bit
        return bits
    return [match.start() for match in _ONE.finditer(bin(mask)[:1:-1])]
