"""Banned sets and token bitsets, as the canonical products read them (Eq. 5 of seed 000).

A canonical product's state is a lattice state plus what A_BPE remembers of
the last token (by 1-locality, its banned set).  :func:`banned_view` gives those
sets as bitsets, by class of tokens with equal sets, over the tokens a
lattice reads; :func:`token_mask` and :func:`set_bits` go between token lists
and bitsets.
"""

from __future__ import annotations

import re

from ..bpe import CanonicalAutomaton, ExplicitCanonical
from .banned_subset import restricted_banned

# Explicit A_BPE: its own bitsets for lattices reading at least this share of the vocabulary,
# or fewer than OWN_BITSETS_BELOW tokens (restricting costs a pass over the merges of every
# symbol on the tokens' left spines: weekdays over GPT-2, 80 tokens, take 3.0 ms restricted
# and 0.6 ms with the full bitsets).
OWN_BITSETS_SHARE = 0.5
OWN_BITSETS_BELOW = 512


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
