"""Syntax tree -> Thompson NFA -> minimal DFA over an alphabet's symbols.

Each node becomes a piece of one Thompson NFA (Thompson 1968; the operators
of :mod:`bpefst.automata.thompson`, glued the same way), written in place
into one table of states: a node's states are the next free rows, so the NFA
costs one row per state, where composing NFA values would copy each state
once per level of nesting.  Single-character atoms come from the alphabet (a
UTF-8 automaton or a set of character symbols).  The NFA is then
determinized (under the caller's ``max_states`` budget), minimized and
relabelled to symbol ids by the alphabet.

Bounded repetition copies its operand, so ``x{m,n}`` costs ``n`` copies of
``x``; the NFA is capped at :data:`NFA_STATE_LIMIT` states and a repetition
that would exceed it raises :class:`~bpefst.automata.StateLimitExceeded`
naming its position, before its copies are made.
"""

from __future__ import annotations

from typing import NamedTuple

from ..automata import DFA, NFA, StateLimitExceeded, determinize, minimize
from ..automata.errors import check_limit
from .alphabets import Alphabet
from .syntax import Alternation, CharSet, Concat, Literal, Node, Repeat, parse

NFA_STATE_LIMIT = 1_000_000


def compile_regex(pattern: str, alphabet: Alphabet, max_states: int | None = None, engine: str | None = None) -> DFA:
    """The minimal trim DFA over ``alphabet``'s symbols accepting the strings ``pattern`` fully matches.

    Raises :class:`~bpefst.regex.RegexSyntaxError` (a ``BpefstError``) for
    malformed or unsupported patterns, and
    :class:`~bpefst.automata.StateLimitExceeded` when the automaton would
    need more than ``max_states`` states.  ``engine`` chooses where the NFA
    becomes the minimal DFA (:func:`minimal_dfa`).
    """
    nfa = to_nfa(parse(pattern), alphabet)
    table = alphabet.relabelling_table()
    if table is not None and on_core(engine):  # finishing is a relabelling: the core does it as it reads the NFA
        return _minimal_natively(nfa, max_states, table)
    return alphabet.finish(minimal_dfa(nfa, max_states, engine))


def minimal_dfa(nfa: NFA, max_states: int | None = None, engine: str | None = None) -> DFA:
    """``minimize(determinize(nfa, max_states))``, on the compiled core's ``minimal_dfa`` where ``engine``
    (:func:`bpefst.native.choose`) says so: the same algorithms over flat arrays, giving the same automaton
    (a minimal DFA numbered canonically is one value per language), about ten times faster."""
    if on_core(engine):
        return _minimal_natively(nfa, max_states)
    return minimize(determinize(nfa, max_states))


def on_core(engine: str | None) -> bool:
    """Whether ``engine`` (:func:`bpefst.native.choose`: None, "compiled" or "pure") runs on the compiled core."""
    from .. import native  # (here: bpefst.native imports the tokenizer package, which imports this one)

    return native.choose(engine) == "compiled"


def minimal_of_dfa(dfa: DFA, engine: str | None = None) -> DFA:
    """``minimize(dfa)``, on the compiled core's ``minimal_dfa`` where ``engine`` says so: it reads the DFA's
    dict rows as its arcs (an NFA without epsilon arcs) and gives the same value, about five times faster on
    the token automata promotion writes out (GPT-2 numbers, 512,000 arcs: 1.09 s -> 0.19 s)."""
    if not on_core(engine):
        return minimize(dfa)
    rows = dfa.transitions if isinstance(dfa.transitions, list) else list(dfa.transitions)
    return minimal_of_rows(rows, [[]] * len(rows), dfa.start, dfa.finals, None)


def _minimal_natively(nfa: NFA, max_states: int | None, relabelling: bytes | None = None) -> DFA:
    """:func:`minimal_dfa` on the compiled core, the NFA's symbols relabelled first by ``relabelling``."""
    return minimal_of_rows(nfa.arcs, nfa.eps, nfa.start, nfa.finals, max_states, relabelling)


def minimal_of_rows(rows, eps, start: int, finals, max_states: int | None, relabelling: bytes | None = None) -> DFA:
    """The minimal DFA, numbered canonically, of the automaton whose state ``q`` has the arcs ``rows[q]`` and the
    epsilon arcs ``eps[q]``, on the compiled core (its ``minimal_dfa``; callers check :func:`on_core` first).

    A row is a list of ``(symbol, target)`` pairs, a dict ``symbol -> target``, or a tuple ``(dict, ids)``: a
    copy of another automaton's row, its targets read through ``ids``.  ``relabelling`` (bytes of int32s)
    maps each symbol to its final id, -1 for none.  Past ``max_states`` subsets: StateLimitExceeded."""
    from .. import native

    found = native.core.minimal_dfa(rows, eps, start, sorted(finals), relabelling, -1 if max_states is None else max_states)
    if found is None:
        check_limit(max_states + 1, max_states, "determinization")
    minimal_rows, minimal_finals = found
    return DFA(minimal_rows, 0, frozenset(minimal_finals), check=False)


def to_nfa(node: Node, alphabet: Alphabet) -> NFA:
    """The Thompson NFA of a syntax tree over the alphabet's raw symbols."""
    builder = _Builder(alphabet)
    piece = builder.build(node)
    return NFA(builder.arcs, builder.eps, piece.start, frozenset(piece.finals), check=False)


class _Piece(NamedTuple):
    """A node's part of the NFA: the rows ``first`` to ``end`` (excluded), its start and its finals."""

    first: int
    end: int
    start: int
    finals: list[int]


class _Builder:
    """Writes the NFA of a syntax tree into one table (``arcs``, ``eps``), a piece per node.

    A run of literal characters in a sequence is written as one chain of states (where the alphabet spells
    each character as a chain: :meth:`~.alphabets.Alphabet.spelling`), not a piece per character glued with
    epsilon arcs: JSON Schema patterns are mostly such runs.  The table's size is checked as it grows, and
    a repetition's copies before they are made (:meth:`_check`)."""

    def __init__(self, alphabet: Alphabet) -> None:
        self.alphabet = alphabet
        self.literals: dict[int, NFA] = {}
        self.sets: dict[tuple[str, str], NFA] = {}
        self.arcs: list[list[tuple[int, int]]] = []
        self.eps: list[list[int]] = []

    def _atom(self, node: Literal | CharSet) -> NFA:
        """The alphabet's NFA of one character (made once per character or class)."""
        if isinstance(node, Literal):
            nfa = self.literals.get(node.codepoint)
            if nfa is None:
                nfa = self.literals[node.codepoint] = self.alphabet.literal(node.codepoint)
            return nfa
        key = (node.source, node.flags)
        nfa = self.sets.get(key)
        if nfa is None:
            nfa = self.sets[key] = self.alphabet.charset(node.source, node.flags)
        return nfa

    def build(self, node: Node) -> _Piece:
        """The piece of ``node``, written after the rows already in the table."""
        first = len(self.arcs)
        if isinstance(node, Literal) and (spelled := self.alphabet.spelling(node.codepoint)) is not None:
            start, finals = self._chain(spelled)
        elif isinstance(node, (Literal, CharSet)):
            nfa = self._atom(node)
            start, finals = self._place(nfa.arcs, nfa.eps, 0, nfa.start, nfa.finals)
        elif isinstance(node, Concat):
            start, finals = self._concat(self._pieces(node.parts))
            self._check(len(self.arcs), node.pos, "the sequence")
        elif isinstance(node, Alternation):  # a fresh start with an epsilon arc to each branch
            start = self._state()
            pieces = [self.build(part) for part in node.branches]
            self.eps[start] = [piece.start for piece in pieces]
            finals = [f for piece in pieces for f in piece.finals]
            self._check(len(self.arcs), node.pos, "the alternation")
        elif isinstance(node, Repeat):
            start, finals = self._repeat(node)
        else:
            raise TypeError(f"unknown syntax node {node!r}")
        return _Piece(first, len(self.arcs), start, finals)

    def _pieces(self, parts: list[Node]) -> list[_Piece]:
        """The pieces of a sequence's parts, each run of literal characters one chain."""
        pieces: list[_Piece] = []
        run: list[int] = []
        spelling = self.alphabet.spelling
        for part in parts:
            spelled = spelling(part.codepoint) if isinstance(part, Literal) else None
            if spelled is not None:
                run.extend(spelled)
                continue
            if run:
                pieces.append(self._chain_piece(run))
                run = []
            pieces.append(self.build(part))
        if run:
            pieces.append(self._chain_piece(run))
        return pieces

    def _chain(self, symbols) -> tuple[int, list[int]]:
        """States reading ``symbols`` one after the other: its start and its one final state."""
        first = len(self.arcs)
        self.arcs.extend([[(a, first + i)] for i, a in enumerate(symbols, 1)])
        self.arcs.append([])
        self.eps.extend([[] for _ in range(len(symbols) + 1)])
        return first, [first + len(symbols)]

    def _chain_piece(self, symbols) -> _Piece:
        first = len(self.arcs)
        start, finals = self._chain(symbols)
        return _Piece(first, len(self.arcs), start, finals)

    def _repeat(self, node: Repeat) -> tuple[int, list[int]]:
        """``a*``, ``a+`` and ``a?`` with one fresh state before ``a``; ``a{m,n}`` as ``m`` copies of ``a``
        then ``a*`` or a chain of ``n - m`` optional copies (``(a(a(a)?)?)?`` with a fresh final state
        between copies): linear in ``n``."""
        low, high = node.low, node.high
        if high == 0:
            return self._epsilon()
        if (low, high) in ((0, None), (1, None), (0, 1)):
            loop = self._state()
            piece = self.build(node.child)
            self.eps[loop].append(piece.start)
            if high is None:  # the part's finals go round again
                for f in piece.finals:
                    self.eps[f].append(loop)
            return loop, [loop] if low == 0 and high is None else piece.finals + [loop] if high == 1 else piece.finals
        first = self.build(node.child)
        copies = low + 1 if high is None else high
        self._check(len(self.arcs) + (first.end - first.first + 1) * (copies - 1) + 1, node.pos, "the repetition")
        pieces = [first] + [self._copy(first) for _ in range(low - 1)] if low else []
        if high is None:
            loop = self._state()
            again = self._copy(first)
            self.eps[loop].append(again.start)
            for f in again.finals:
                self.eps[f].append(loop)
            pieces.append(_Piece(loop, len(self.arcs), loop, [loop]))
        elif high > low:
            steps = [self._state() for _ in range(high - low + 1)]  # every step of the chain is final
            # (copies are taken before any arc leaves the piece they copy)
            parts = [first] if not low else []
            parts += [self._copy(first) for _ in range(high - low - len(parts))]
            for i, part in enumerate(parts):
                self.eps[steps[i]].append(part.start)
                for f in part.finals:
                    self.eps[f].append(steps[i + 1])
            pieces.append(_Piece(steps[0], len(self.arcs), steps[0], steps))
        return self._concat(pieces)

    def _concat(self, pieces: list[_Piece]) -> tuple[int, list[int]]:
        """Each piece's finals get an epsilon arc to the next piece's start."""
        if not pieces:
            return self._epsilon()
        for piece, following in zip(pieces, pieces[1:]):
            for f in piece.finals:
                self.eps[f].append(following.start)
        return pieces[0].start, pieces[-1].finals

    def _state(self) -> int:
        self.arcs.append([])
        self.eps.append([])
        return len(self.arcs) - 1

    def _epsilon(self) -> tuple[int, list[int]]:
        state = self._state()
        return state, [state]

    def _place(self, arcs, eps, base: int, start: int, finals) -> tuple[int, list[int]]:
        """Rows numbered from ``base`` appended to the table, their targets shifted to where they land."""
        offset = len(self.arcs) - base
        self.arcs.extend([(a, r + offset) for a, r in row] for row in arcs)
        self.eps.extend([r + offset for r in row] for row in eps)
        return start + offset, [f + offset for f in finals]

    def _copy(self, piece: _Piece) -> _Piece:
        """Another copy of ``piece`` at the end of the table."""
        first = len(self.arcs)
        start, finals = self._place(self.arcs[piece.first:piece.end], self.eps[piece.first:piece.end], piece.first,
                                    piece.start, piece.finals)
        return _Piece(first, len(self.arcs), start, finals)

    @staticmethod
    def _check(size: int, pos: int, what: str) -> None:
        if size > NFA_STATE_LIMIT:
            raise StateLimitExceeded(f"{what} at position {pos}", NFA_STATE_LIMIT)
