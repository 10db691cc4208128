"""Syntax tree -> Thompson NFA -> minimal DFA over an alphabet's symbols.

Each node becomes an NFA with the combinators of
:mod:`bpefst.automata.thompson`; single-character atoms come from the
alphabet (a UTF-8 automaton or a set of character symbols).  The NFA is then
determinized (under the caller's ``max_states`` budget), minimized and
relabelled to symbol ids by the alphabet.

Bounded repetition copies its operand, so ``x{m,n}`` costs ``n`` copies of
``x``; the NFA is capped at :data:`NFA_STATE_LIMIT` states and a repetition
that would exceed it raises :class:`~bpefst.automata.StateLimitExceeded`
naming its position, before any memory is spent.
"""

from __future__ import annotations

from ..automata import DFA, NFA, StateLimitExceeded, determinize, minimize, thompson
from .alphabets import Alphabet
from .syntax import Alternation, CharSet, Concat, Literal, Node, Repeat, parse

NFA_STATE_LIMIT = 1_000_000


def compile_regex(pattern: str, alphabet: Alphabet, max_states: int | None = None) -> DFA:
    """The minimal trim DFA over ``alphabet``'s symbols accepting the strings ``pattern`` fully matches.

    Raises :class:`~bpefst.regex.RegexSyntaxError` (a ``BpefstError``) for
    malformed or unsupported patterns, and
    :class:`~bpefst.automata.StateLimitExceeded` when the automaton would
    need more than ``max_states`` states.
    """
    tree = parse(pattern)
    nfa = to_nfa(tree, alphabet)
    raw = minimize(determinize(nfa, max_states))
    return alphabet.finish(raw)


def to_nfa(node: Node, alphabet: Alphabet) -> NFA:
    """The Thompson NFA of a syntax tree over the alphabet's raw symbols."""
    builder = _Builder(alphabet)
    builder.size(node)  # refuse oversized patterns before building anything big
    return builder.build(node)


class _Builder:
    def __init__(self, alphabet: Alphabet) -> None:
        self.alphabet = alphabet
        self.literals: dict[int, NFA] = {}
        self.sets: dict[tuple[str, str], NFA] = {}

    def size(self, node: Node) -> int:
        """An upper bound on the NFA states :meth:`build` makes; raises if over the limit."""
        if isinstance(node, (Literal, CharSet)):
            return self.build(node).num_states
        if isinstance(node, Concat):
            total = sum(self.size(part) for part in node.parts) + 1
            what = "the sequence"
        elif isinstance(node, Alternation):
            total = sum(self.size(part) for part in node.branches) + 1
            what = "the alternation"
        elif isinstance(node, Repeat):
            copies = node.low + 1 if node.high is None else max(node.high, 1)
            total = (self.size(node.child) + 1) * copies + 1
            what = "the repetition"
        else:
            raise TypeError(f"unknown syntax node {node!r}")
        self._check(total, node.pos, what)
        return total

    def build(self, node: Node) -> NFA:
        if isinstance(node, Literal):
            nfa = self.literals.get(node.codepoint)
            if nfa is None:
                nfa = self.literals[node.codepoint] = self.alphabet.literal(node.codepoint)
            return nfa
        if isinstance(node, CharSet):
            key = (node.source, node.flags)
            nfa = self.sets.get(key)
            if nfa is None:
                nfa = self.sets[key] = self.alphabet.charset(node.source, node.flags)
            return nfa
        if isinstance(node, Concat):
            parts = [self.build(part) for part in node.parts]
            self._check(sum(p.num_states for p in parts), node.pos, "the sequence")
            return thompson.concat(*parts)
        if isinstance(node, Alternation):
            parts = [self.build(part) for part in node.branches]
            self._check(sum(p.num_states for p in parts), node.pos, "the alternation")
            return thompson.union(*parts)
        if isinstance(node, Repeat):
            child = self.build(node.child)
            copies = node.low + 1 if node.high is None else max(node.high, 1)
            self._check(child.num_states * copies + copies, node.pos, "the repetition")
            if node.high is None and node.low == 0:
                return thompson.star(child)
            if node.high is None and node.low == 1:
                return thompson.plus(child)
            if node.low == 0 and node.high == 1:
                return thompson.optional(child)
            if node.high == 0:
                return thompson.epsilon()
            return thompson.repeat(child, node.low, node.high)
        raise TypeError(f"unknown syntax node {node!r}")

    @staticmethod
    def _check(size: int, pos: int, what: str) -> None:
        if size > NFA_STATE_LIMIT:
            raise StateLimitExceeded(f"{what} at position {pos}", NFA_STATE_LIMIT)
