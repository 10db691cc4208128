"""A language's declared part solved first: a JSON Schema's listed members before its extra ones.

An object that lists ``properties`` without ``additionalProperties`` takes
extra members (JSON Schema's reading, and ``bpefst.promote``'s default):
any name, with a copy of any JSON value.  Over GPT-2 or cl100k those copies
are most of a schema's chunked pattern and four fifths of its set-up (a
median schema of JSONSchemaBench: 1,665 of 33,565 states are not in them),
yet a decoder enters one only when its model writes a member the schema
does not name.  So :class:`~.on_demand.OnDemandCanonical` can solve
liveness over the part a decoder reaches without entering an extra member,
and the rest of the lattice the first time a decoder leaves that part
(docs/decoding.md, sessions 34 and 43).

**The declared states.**  The schema is translated closed as well
(``open_objects=False``: listed members only; its language lies within the
open one).  Walking the open chunked pattern and the closed pattern
together from their starts, the chunked pattern's ``BOUNDARY`` arcs read at
no cost to the closed one, meets D (:func:`reached_by_prefixes`): the
chunked states a prefix of a closed document leads to, with any cut the
chunker may make in it.  While a decoder's text is a prefix of a closed
document, every configuration of its state lies in D.

**Their liveness.**  ``good[q]`` depends only on ``good`` of the targets of
``q``'s arcs that are not open (:mod:`.regions`: an arc into an open target
is good whatever follows).  Let S be D closed under those targets: the
fixpoint over S alone, its open targets as finals, gives every state of S
the whole lattice's ``good`` and the same tokens filed (grouped as its own
walks group them).  The same holds of any set closed that way, so the first
state read outside S (a decoder has written an extra member) adds the
states reachable from it, where the decoder now stays, and a state outside
both solves the whole lattice; no set given before changes.
"""

from __future__ import annotations

from itertools import compress
from operator import or_

from ..automata import DFA
from ..bpe import CanonicalAutomaton
from ..errors import BpefstError
from .agnostic import _NOT, SpellingTrie, _both, walk_groups
from .pretokenized import BOUNDARY
from .regions import open_states, state_walker

# A part reaching more than this share of the chunked pattern's states is solved with the rest at once: a
# second solve later would cost more than the states the first leaves out (a schema whose objects list no
# properties, or whose extra members the schema spells out, is declared almost whole).
DECLARED_SHARE = 0.5
# A decoder's first exit from the declared part extends it to the states reachable from there when they are
# at most this share of the states left out, else the whole lattice is solved then.
EXTEND_SHARE = 0.75


def reached_by_prefixes(automaton: DFA, part: DFA) -> bytearray:
    """Per state of ``automaton`` (a chunked pattern), 1 where a prefix of a word of ``part`` leads from its
    start, ``BOUNDARY`` arcs read freely (the module docstring's D); ``part``'s language lies within
    ``automaton``'s with the cuts removed.  The compiled chunked pattern walks the pairs itself
    (``PackedRows.reached_with``)."""
    rows, part_rows = automaton.transitions, list(part.transitions)
    reached_with = getattr(rows, "reached_with", None)
    if reached_with is not None:
        try:
            return reached_with(part_rows, automaton.start, part.start)
        except ValueError:  # (a part over an alphabet too wide for the compiled table: walked here)
            pass
    reached = bytearray(len(rows))
    reached[automaton.start] = 1
    first = (automaton.start, part.start)
    met, stack = {first}, [first]
    while stack:
        q, c = stack.pop()
        part_row = part_rows[c]
        for symbol, r in rows[q].items():
            c_next = c if symbol == BOUNDARY else part_row.get(symbol)
            if c_next is not None and (r, c_next) not in met:
                met.add((r, c_next))
                stack.append((r, c_next))
                reached[r] = 1
    return reached


def worth_deferring(declared: bytes | bytearray) -> bool:
    """Whether solving the declared states first leaves enough out (:data:`DECLARED_SHARE`)."""
    return declared.count(1) <= DECLARED_SHARE * len(declared)


class DeclaredLiveness:
    """``good[q]`` and the filed groups of the declared states S (module docstring), solved when made.

    The first state read outside S (a decoder has written an extra member) adds every state reachable from
    it: the decoder can go nowhere else, and S with them is still closed under the targets liveness reads,
    so one more solve over the two, S's walks kept, answers for all of them.  A state outside both asks
    ``then_whole`` (a ``weakref.WeakMethod`` of the product that owns this, returning every state's
    ``good``), and every read after goes to the whole solve.  ``weights``: the chunked pattern's row weights
    where the caller has them (:func:`.agnostic.walk_groups`).

    Reads as the ``good`` of :func:`.on_demand.solve_liveness`: ``len``, ``good[q]`` and :meth:`bytes_of`.
    """

    def __init__(self, chunked: DFA, trie: SpellingTrie, automaton: CanonicalAutomaton, cut: list[int | None],
                 declared: bytes | bytearray, then_whole, weights: list[int] | None = None):
        self.n = len(cut)
        self._chunked, self._trie, self._automaton, self._then_whole = chunked, trie, automaton, then_whole
        self._weights = weights
        self._is_open = open_states(chunked.finals, cut)
        self.solved, self.groups = _walk_closed_under_targets(chunked, trie, automaton.reachable_flags, declared,
                                                              self._is_open, weights)
        self.declared_groups, self._declared_solved = self.groups, self.solved  # (what the whole solve reuses)
        self._solve()
        self.extended, self._whole = False, None

    def _solve(self) -> None:
        """The fixpoint over the solved states' groups, their open targets as finals (:mod:`.regions`)."""
        from .on_demand import solve_liveness  # (on_demand reads this module)

        finals = list(compress(range(self.n), self._is_open))
        self._good, self._filed = solve_liveness(self.groups, self.n, finals, [None] * self.n, self._automaton)

    def __len__(self) -> int:
        return self.n

    def holds(self, q: int) -> bool:
        """Whether ``q``'s sets come from this part's solve (S, and what the first exit added)."""
        return bool(self.solved[q])

    def _answering(self, q: int):
        """The good sets that answer for ``q``: this part's, extended or handed to the whole solve if need be."""
        if self.solved[q]:
            return self._good
        if self._whole is None and not self.extended:
            self.extended = True
            if self._extend_to(q):
                return self._good
        if self._whole is None:
            solve = self._then_whole()  # (the product that owns this: only it reads this object)
            if solve is None:
                raise BpefstError("the promoted language this liveness belongs to is gone")
            self._whole = solve()
        return self._whole

    def __getitem__(self, q: int) -> int:
        return self._answering(q)[q]

    def __iter__(self):
        return map(self.__getitem__, range(self.n))

    def bytes_of(self, q: int, length: int) -> bytes | None:
        """``good[q].to_bytes(length, "little")``, None when the set has a token past ``length`` bytes."""
        from .on_demand import good_as_bytes  # (on_demand reads this module)

        return good_as_bytes(self._answering(q), q, length)

    def filed_of(self, q: int):
        """``q``'s good tokens by group with their targets, from this part's solve (``holds(q)``)."""
        return self._filed[q]

    def undeclared(self) -> bytes:
        """A byte per state: 1 for the states outside S, which ``declared_groups`` has no walks of."""
        return self._declared_solved.translate(_NOT)

    def _extend_to(self, q: int) -> bool:
        """The first exit: the states reachable from ``q`` walked (those not walked yet) and solved with S;
        False, nothing done, when they are most of the rest (an exit from the outermost object reaches every
        extra member after it: the whole solve is no dearer, and serves every later exit)."""
        reached = reachable(self._chunked, q)
        new = _both(reached, self.solved.translate(_NOT))
        if new.count(1) > EXTEND_SHARE * (self.n - self.solved.count(1)):
            return False
        self.groups = self.groups + [(tokens, pairs) for tokens, pairs in walk_groups(
            self._chunked, self._trie, None, keep=self._automaton.reachable_flags, sources=new,
            weights=self._weights) if pairs]
        self.solved = bytearray(map(or_, self.solved, reached))
        self._solve()
        return True


def reachable(automaton: DFA, q: int) -> bytes | bytearray:
    """A byte per state of ``automaton``: 1 where a path from ``q`` leads (``q`` included; ``BOUNDARY`` arcs
    too), from the compiled chunked pattern's ``PackedRows.reachable`` where it has one."""
    rows = automaton.transitions
    sources = bytearray(len(rows))
    sources[q] = 1
    compiled = getattr(rows, "reachable", None)
    if compiled is not None:
        return compiled(sources)
    stack = [q]
    while stack:
        for r in rows[stack.pop()].values():
            if not sources[r]:
                sources[r] = 1
                stack.append(r)
    return sources


def _walk_closed_under_targets(chunked: DFA, trie: SpellingTrie, keep, declared, is_open: bytearray, weights=None):
    """``(S, groups)``: S (a flag per state) the ``declared`` states closed under the targets that are not open,
    and the groups of the walks from S's states, kept tokens only: the declared states' walked together
    (:func:`.agnostic.walk_groups`), the few the closure adds (mid-character states, a key's letters) one by one
    (on the compiled core in one call, ``StateWalk.close``: the loop below, without its Python objects per target)."""
    walker = state_walker(chunked, trie, keep)  # (the rows packed once for every walk here)
    groups = [(tokens, pairs) for tokens, pairs in walk_groups(chunked, trie, None, keep=keep, sources=bytes(declared),
                                                               weights=weights, packed=walker) if pairs]
    walked = bytearray(declared)
    close = getattr(walker, "close", None)
    if close is not None:
        close(groups, walked, is_open)
    else:
        close_by_walks(walker.walk, groups, walked, is_open)
    return walked, groups


def close_by_walks(walk, groups: list, walked: bytearray, is_open: bytes) -> None:
    """The groups' targets neither ``walked`` nor open walked from (``walk(q)``: a state walker's), and their
    walks' targets in turn, last found first; each walk's groups appended to ``groups`` as ``(tokens, {q: r})``
    and ``walked`` marked where a walk starts (the twin of the compiled ``StateWalk.close``)."""
    closing = [r for _, pairs in groups for r in pairs.values() if not walked[r] and not is_open[r]]
    while closing:
        q = closing.pop()
        if walked[q]:
            continue
        walked[q] = 1
        for r, tokens in walk(q):
            groups.append((tokens, {q: r}))
            if not walked[r] and not is_open[r]:
                closing.append(r)
