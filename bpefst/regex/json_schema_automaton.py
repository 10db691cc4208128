"""JSON Schema -> minimal DFA, built from the translation's expression graph without regex text.

Compiling the pattern text of a large schema spends most of its time
parsing (and validating) the text and copying sub-automata at every level of
the syntax tree.  Here the graph of :mod:`.json_schema_expr` is built into
one NFA in a single pass, then determinized and minimized once:

* leaves (regex text of numbers, string bodies, formats, patterns) are
  compiled to minimal DFAs over the alphabet's raw symbols, kept in a
  bounded LRU cache shared by all translations (most schemas use the same
  few: a string, a number, an integer);
* a node used in several places (the same sub-schema reached twice, the
  value of any type inside every open object) is determinized and minimized
  once per translation, and each use copies that small DFA;
* an object's members are a chain: a state before each member for "nothing
  written yet" and one for "something written" (which needs a comma first),
  both leading into one copy of the member, so the size is linear in the
  members.
"""

from __future__ import annotations

from collections import Counter, OrderedDict

from ..automata import DFA, NFA, determinize, minimize
from .alphabets import Alphabet, ByteAlphabet
from .compiler import to_nfa
from .json_schema_expr import Alt, Leaf, Lit, Members, Node, Rep, Seq
from .syntax import parse

LEAF_CACHE = 256  # compiled leaves kept between translations (least recently used dropped first)
SHARE_AT = 24  # a node used more than once is compiled once when it builds at least this many states

_leaves: OrderedDict[tuple, DFA] = OrderedDict()


def leaf_dfa(text: str, alphabet: Alphabet) -> DFA:
    """The minimal DFA over ``alphabet``'s raw symbols of a regex text (bounded LRU cache)."""
    key = (text, _alphabet_key(alphabet))
    found = _leaves.get(key)
    if found is not None:
        _leaves.move_to_end(key)
        return found
    dfa = minimize(determinize(to_nfa(parse(text), alphabet)))
    _leaves[key] = dfa
    if len(_leaves) > LEAF_CACHE:
        _leaves.popitem(last=False)
    return dfa


def _alphabet_key(alphabet: Alphabet):
    """What the raw symbols of a compiled leaf depend on: bytes are bytes; characters depend on the domain."""
    if isinstance(alphabet, ByteAlphabet):
        return "bytes"
    return (type(alphabet).__name__, getattr(alphabet, "domain", None))


def build_dfa(node: Node, alphabet: Alphabet, max_states: int | None = None) -> DFA:
    """The minimal trim DFA over ``alphabet``'s symbol ids of the language of ``node``."""
    raw = _Builder(node, alphabet, max_states).dfa(node)
    return alphabet.finish(raw)


class _Builder:
    def __init__(self, root: Node, alphabet: Alphabet, max_states: int | None) -> None:
        self.alphabet = alphabet
        self.max_states = max_states
        self.uses = _count_uses(root)
        self.shared: dict[int, DFA] = {}  # id(node) -> its minimal DFA, for nodes used more than once (root keeps them alive)
        self.literals: dict[int, NFA] = {}

    def dfa(self, node: Node) -> DFA:
        """The minimal raw DFA of ``node`` (one NFA, determinized and minimized)."""
        arcs: list[list[tuple[int, int]]] = []
        eps: list[list[int]] = []
        start, finals = self.emit(node, arcs, eps, top=True)
        nfa = NFA(arcs, eps, start, frozenset(finals), check=False)
        return minimize(determinize(nfa, self.max_states))

    def emit(self, node: Node, arcs: list, eps: list, top: bool = False) -> tuple[int, list[int]]:
        """Add ``node``'s NFA to the tables; its start state and final states."""
        if not top and self.uses[id(node)] > 1 and node.size >= SHARE_AT and not isinstance(node, Leaf):
            found = self.shared.get(id(node))
            if found is None:
                found = self.shared[id(node)] = self.dfa(node)
            return _copy_dfa(found, arcs, eps)
        if isinstance(node, Leaf):
            return _copy_dfa(leaf_dfa(node.text, self.alphabet), arcs, eps)
        if isinstance(node, Lit):
            return self.literal(node.text, arcs, eps)
        if isinstance(node, Seq):
            return self.sequence(node.parts, arcs, eps)
        if isinstance(node, Alt):
            start = _state(arcs, eps)
            finals = []
            for part in node.parts:
                s, f = self.emit(part, arcs, eps)
                eps[start].append(s)
                finals.extend(f)
            return start, finals
        if isinstance(node, Rep):
            return self.repeat(node, arcs, eps)
        if isinstance(node, Members):
            return self.members(node, arcs, eps)
        raise TypeError(f"unknown node {node!r}")

    def literal(self, text: str, arcs: list, eps: list) -> tuple[int, list[int]]:
        start = state = _state(arcs, eps)
        for char in text:
            nfa = self.literals.get(ord(char))
            if nfa is None:
                nfa = self.literals[ord(char)] = self.alphabet.literal(ord(char))
            s, finals = _copy_nfa(nfa, arcs, eps)
            eps[state].append(s)
            state = _state(arcs, eps)
            for f in finals:
                eps[f].append(state)
        return start, [state]

    def sequence(self, parts, arcs: list, eps: list) -> tuple[int, list[int]]:
        start = state = _state(arcs, eps)
        for part in parts:
            s, finals = self.emit(part, arcs, eps)
            eps[state].append(s)
            state = _state(arcs, eps)
            for f in finals:
                eps[f].append(state)
        return start, [state]

    def repeat(self, node: Rep, arcs: list, eps: list) -> tuple[int, list[int]]:
        """``low`` copies in a row, then a loop (no bound) or ``high - low`` optional copies."""
        start, (state,) = self.sequence([node.part] * node.low, arcs, eps)
        if node.high is None:
            s, finals = self.emit(node.part, arcs, eps)
            eps[state].append(s)
            for f in finals:
                eps[f].append(state)
            return start, [state]
        ends = [state]
        for _ in range(node.high - node.low):
            s, finals = self.emit(node.part, arcs, eps)
            eps[state].append(s)
            state = _state(arcs, eps)
            for f in finals:
                eps[f].append(state)
            ends.append(state)
        return start, ends

    def members(self, node: Members, arcs: list, eps: list) -> tuple[int, list[int]]:
        """The chain of the module docstring: ``none`` (nothing written yet), ``some`` (a comma comes first)."""
        none, some = _state(arcs, eps), _state(arcs, eps)
        start = none
        for member, required in node.members:
            entry, after = _state(arcs, eps), _state(arcs, eps)
            eps[none].append(entry)
            self.link(node.comma, some, entry, arcs, eps)
            s, finals = self.emit(member, arcs, eps)
            eps[entry].append(s)
            for f in finals:
                eps[f].append(after)
            next_none = _state(arcs, eps)
            if not required:
                eps[none].append(next_none)
                eps[some].append(after)
            none, some = next_none, after
        if node.more is not None:
            entry = _state(arcs, eps)
            eps[none].append(entry)
            self.link(node.comma, some, entry, arcs, eps)
            s, finals = self.emit(node.more, arcs, eps)
            eps[entry].append(s)
            for f in finals:
                eps[f].append(some)
        finals = [some]
        if node.allow_empty:
            finals.append(none)
        return start, finals

    def link(self, node: Node, source: int, target: int, arcs: list, eps: list) -> None:
        """An arc from ``source`` to ``target`` through a copy of ``node``."""
        s, finals = self.emit(node, arcs, eps)
        eps[source].append(s)
        for f in finals:
            eps[f].append(target)


def _state(arcs: list, eps: list) -> int:
    arcs.append([])
    eps.append([])
    return len(arcs) - 1


def _copy_dfa(dfa: DFA, arcs: list, eps: list) -> tuple[int, list[int]]:
    offset = len(arcs)
    arcs.extend([(a, r + offset) for a, r in row.items()] for row in dfa.transitions)
    eps.extend([] for _ in dfa.transitions)
    if not dfa.transitions:  # the empty language: one state, no arcs
        return _state(arcs, eps), []
    return dfa.start + offset, [f + offset for f in dfa.finals]


def _copy_nfa(nfa: NFA, arcs: list, eps: list) -> tuple[int, list[int]]:
    offset = len(arcs)
    arcs.extend([(a, r + offset) for a, r in row] for row in nfa.arcs)
    eps.extend([r + offset for r in row] for row in nfa.eps)
    return nfa.start + offset, [f + offset for f in nfa.finals]


def _count_uses(root: Node) -> Counter:
    """How many places of the graph use each node (by id), each node's children counted once."""
    uses: Counter = Counter()
    uses[id(root)] = 1
    stack = [root]
    while stack:
        node = stack.pop()
        for child in _children(node):
            uses[id(child)] += 1
            if uses[id(child)] == 1:
                stack.append(child)
    return uses


def _children(node: Node):
    if isinstance(node, (Seq, Alt)):
        return node.parts
    if isinstance(node, Rep):  # a part built several times counts as several uses
        return (node.part,) * min(2, node.low + (1 if node.high is None else node.high - node.low))
    if isinstance(node, Members):
        kids = [m for m, _ in node.members] + [node.comma]
        return kids + ([node.more] if node.more is not None else [])
    return ()
