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
walks group them).  Reading any state outside S solves the whole lattice,
which leaves S's sets as they were, so no answer given before changes.
"""

from __future__ import annotations

from itertools import compress

from ..automata import DFA
from ..bpe import CanonicalAutomaton
from ..errors import BpefstError
from .agnostic import SpellingTrie, walk_groups
from .pretokenized import BOUNDARY
from .regions import open_states, state_walk

# A part reaching more than this share of the chunked pattern's states is solved with the rest at once: a
# second solve later would cost more than the states the first leaves out (a schema whose objects list no
# properties, or whose extra members the schema spells out, is declared almost whole).
DECLARED_SHARE = 0.5


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
    """``good[q]`` and the filed groups of the declared states S (module docstring), solved when made; reading
    any other state asks ``then_whole`` (a ``weakref.WeakMethod`` of the product that owns this, returning
    every state's ``good``) and every read after goes to the whole solve.

    Reads as the ``good`` of :func:`.on_demand.solve_liveness`: ``len``, ``good[q]`` and :meth:`bytes_of`.
    """

    def __init__(self, chunked: DFA, trie: SpellingTrie, automaton: CanonicalAutomaton, cut: list[int | None],
                 declared: bytes | bytearray, then_whole):
        from .on_demand import solve_liveness  # (on_demand reads this module)

        n = self.n = len(cut)
        is_open = open_states(chunked.finals, cut)
        self.solved, groups = _walk_closed_under_targets(chunked, trie, automaton.reachable_flags, declared, is_open)
        finals = list(compress(range(n), is_open))
        self._good, self._filed = solve_liveness(groups, n, finals, [None] * n, automaton)
        self._then_whole, self._whole = then_whole, None

    def __len__(self) -> int:
        return self.n

    def holds(self, q: int) -> bool:
        """Whether ``q``'s sets come from the declared part's solve (the whole not solved yet)."""
        return self._whole is None and bool(self.solved[q])

    def __getitem__(self, q: int) -> int:
        return self._good[q] if self.holds(q) else self._whole_good()[q]

    def __iter__(self):
        return map(self.__getitem__, range(self.n))

    def bytes_of(self, q: int, length: int) -> bytes | None:
        """``good[q].to_bytes(length, "little")``, None when the set has a token past ``length`` bytes."""
        good = self._good if self.holds(q) else self._whole_good()
        as_bytes = getattr(good, "bytes_of", None)
        if as_bytes is not None:
            return as_bytes(q, length)
        return None if good[q].bit_length() > 8 * length else good[q].to_bytes(length, "little")

    def filed_of(self, q: int):
        """``q``'s good tokens by group with their targets, from the declared part's solve (``holds(q)``)."""
        return self._filed[q]

    def _whole_good(self):
        if self._whole is None:
            solve = self._then_whole()
            if solve is None:
                raise BpefstError("the promoted language this liveness belongs to is gone")
            self._whole, self._good, self._filed = solve(), None, None  # (the declared part's sets are the whole's)
        return self._whole


def _walk_closed_under_targets(chunked: DFA, trie: SpellingTrie, keep, declared, is_open: bytearray):
    """``(S, groups)``: S (a flag per state) the ``declared`` states closed under the targets that are not open,
    and the groups of the walks from S's states, kept tokens only: the declared states' walked together
    (:func:`.agnostic.walk_groups`), the few the closure adds (mid-character states, a key's letters) one by one."""
    groups = [(tokens, pairs) for tokens, pairs in walk_groups(chunked, trie, None, keep=keep, sources=bytes(declared))
              if pairs]
    walked = bytearray(declared)
    closing = [r for _, pairs in groups for r in pairs.values() if not walked[r] and not is_open[r]]
    walk_from = state_walk(chunked, trie, keep) if closing else None
    while closing:
        q = closing.pop()
        if walked[q]:
            continue
        walked[q] = 1
        for r, tokens in walk_from(q):
            groups.append((tokens, {q: r}))
            if not walked[r] and not is_open[r]:
                closing.append(r)
    return walked, groups
