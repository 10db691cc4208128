"""Canonical promotion merge by merge (Eq. 4 of seed 000 via Algorithm 2 of seed 001).

The pattern DFA over base symbols is already a token DFA (base symbols are
tokens); applying every merge of the tokenizer in rank order with Algorithm 2
yields the DFA of the canonical tokenizations of the pattern's matches
(Theorem 1 of seed 001).  Merges whose two tokens have no arcs in the current
automaton cost nothing, which skips the large majority of a real vocabulary.
"""

from __future__ import annotations

from ..automata import DFA
from ..bpe import apply_merges
from ..tokenizer import BPEModel


def promote_direct(pattern: DFA, model: BPEModel) -> DFA:
    """Minimal DFA of {BPE(s) : s in L(pattern)}, by Algorithm 2 applied to every merge."""
    rules = [(a, b, r) for (a, b), r in zip(model.merges, model.merge_results)]
    return apply_merges(pattern, rules)
