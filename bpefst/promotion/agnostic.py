"""Tokenization-agnostic promotion (Eq. 3 of seed 000): every token sequence that spells a match.

Given a DFA ``P`` over base symbols (the tokenizer's bytes or characters, as
their token ids), the promoted automaton has ``P``'s states and an arc
``q -t-> δ*(q, spell(t))`` for every token ``t`` whose spelling ``P`` can read
from ``q``.  Since ``P`` is deterministic and each token has one spelling, the
result is deterministic too.  Rather than composing with the character-to-subword
transducer, walk a trie of all token spellings against ``P`` from every state:
the trie prunes a whole family of tokens as soon as their common prefix leaves
``P``'s language.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..automata import DFA, minimize, trim
from ..tokenizer import BPEModel


@dataclass
class SpellingTrie:
    """Token spellings as a trie: ``children[node]`` maps a base symbol to a node; ``tokens[node]`` end there."""

    children: list[dict[int, int]]
    tokens: list[list[int]]

    @classmethod
    def from_model(cls, model: BPEModel, tokens=None) -> "SpellingTrie":
        children: list[dict[int, int]] = [{}]
        ends: list[list[int]] = [[]]
        spellings = model.spellings
        for token in sorted(spellings if tokens is None else tokens):
            node = 0
            for symbol in spellings[token]:
                nxt = children[node].get(symbol)
                if nxt is None:
                    nxt = len(children)
                    children[node][symbol] = nxt
                    children.append({})
                    ends.append([])
                node = nxt
            ends[node].append(token)
        return cls(children, ends)


def token_arcs(pattern: DFA, trie: SpellingTrie, state: int) -> dict[int, int]:
    """``token -> target`` for every token the pattern can read from ``state``."""
    arcs: dict[int, int] = {}
    children, ends, transitions = trie.children, trie.tokens, pattern.transitions
    stack = [(0, state)]
    while stack:
        node, q = stack.pop()
        row = transitions[q]
        kids = children[node]
        # iterate over the smaller side: most trie nodes have few children, some states few arcs
        pairs = ((s, row[s], n) for s, n in kids.items() if s in row) if len(kids) <= len(row) else ((s, t, kids[s]) for s, t in row.items() if s in kids)
        for _, target, child in pairs:
            for token in ends[child]:
                arcs[token] = target
            if children[child]:
                stack.append((child, target))
    return arcs


def promote_agnostic(pattern: DFA, model: BPEModel, trie: SpellingTrie | None = None, minimal: bool = True) -> DFA:
    """The automaton over token ids accepting every tokenization of every match of ``pattern``."""
    trie = trie or SpellingTrie.from_model(model)
    pattern = trim(pattern)
    rows = [token_arcs(pattern, trie, q) for q in range(pattern.num_states)]
    promoted = DFA(rows, pattern.start, pattern.finals, check=False)
    return minimize(trim(promoted)) if minimal else trim(promoted)
