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

from dataclasses import dataclass, field

from ..automata import DFA, minimize, trim
from ..tokenizer import BPEModel


@dataclass
class SpellingTrie:
    """Token spellings as a trie: ``children[node]`` maps a base symbol to a node; ``tokens[node]`` end there."""

    children: list[dict[int, int]]
    tokens: list[list[int]]
    _steps: list[dict[int, tuple[int, int]]] | None = field(default=None, init=False, repr=False, compare=False)

    def steps(self) -> list[dict[int, tuple[int, int]]]:
        """Per node, ``symbol -> (token ending at the child or -1, child or 0 when it is a leaf)``; built once.

        One lookup per symbol tells the walk both what the step spells and whether
        to go on.  A node where several tokens end (tokens with equal spellings)
        gets the token ``-2 - node``, which the walk expands from ``tokens``.
        """
        if self._steps is None:
            children, ends = self.children, self.tokens
            self._steps = [
                {s: (ends[c][0] if len(ends[c]) == 1 else -1 if not ends[c] else -2 - c, c if children[c] else 0) for s, c in kids.items()}
                for kids in children
            ]
        return self._steps

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
    return _walk(pattern.transitions, trie.steps(), state, trie.tokens)


def promote_agnostic(pattern: DFA, model: BPEModel, trie: SpellingTrie | None = None, minimal: bool = True) -> DFA:
    """The automaton over token ids accepting every tokenization of every match of ``pattern``."""
    trie = trie or SpellingTrie.from_model(model)
    pattern = trim(pattern)
    transitions, steps = pattern.transitions, trie.steps()
    rows = [_walk(transitions, steps, q, trie.tokens) for q in range(len(transitions))]
    promoted = DFA(rows, pattern.start, pattern.finals, check=False)
    return minimize(promoted) if minimal else trim(promoted)


def _walk(transitions: list[dict[int, int]], steps: list[dict[int, tuple[int, int]]], state: int, ends: list[list[int]]) -> dict[int, int]:
    """Walk the trie against the pattern from ``state`` (depth first); collect ``token -> target``."""
    arcs: dict[int, int] = {}
    stack = [(0, state)]
    pop, push = stack.pop, stack.append
    while stack:
        node, q = pop()
        row = transitions[q]
        kids = steps[node]
        # iterate over the smaller side: most trie nodes have few children, some states few arcs
        if len(kids) <= len(row):
            get = row.get
            for symbol, (token, child) in kids.items():
                target = get(symbol)
                if target is not None:
                    if token >= 0:
                        arcs[token] = target
                    elif token < -1:
                        arcs.update(dict.fromkeys(ends[-2 - token], target))
                    if child:
                        push((child, target))
        else:
            get = kids.get
            for symbol, target in row.items():
                step = get(symbol)
                if step is not None:
                    token, child = step
                    if token >= 0:
                        arcs[token] = target
                    elif token < -1:
                        arcs.update(dict.fromkeys(ends[-2 - token], target))
                    if child:
                        push((child, target))
    return arcs
