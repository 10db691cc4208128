"""Canonical promotion on demand: the pre-tokenized canonical automaton as a lazy product.

The eager route (:mod:`.pretokenized`) enumerates every state of
``lattice x A_BPE``: tens of thousands of states for e-mail or JSON patterns
over GPT-2 or cl100k, each with a row of thousands of tokens.  A decoder only
visits the states of the sequences it generates, so this module builds the two
things that make the product usable one step at a time and computes the rest
when it is asked for, as seed 000 suggests for A_BPE itself (Sec. 6.5 and its
footnote 11: arcs and states computed on the fly from the local property):

* the **token lattice** of the chunked pattern, grouped as the trie walk finds
  it: a group is a set of tokens with the lattice arcs ``q -> r`` that every
  token of the group takes (:func:`.agnostic.walk_groups`);
* **liveness**, so that no reachable state is a dead end (the automaton is
  trim): ``good[q]``, the tokens of ``q``'s row whose arc leads to a
  configuration from which a final state can still be reached.

A configuration is ``(q, u)``: chunked-lattice state ``q`` and the previous
token ``u`` of the current chunk (``-1`` at a chunk start).  A_BPE is 1-local
(seed 000 Sec. 6.5), so ``(q, u)`` reads ``t`` iff ``t`` is in ``q``'s row and
``(u, t)`` is a canonical pair, and the arc ``q -t-> r`` leads to ``(r, t)``
and, where the chunked pattern may cut after ``r`` (a ``BOUNDARY`` arc to
``r'``), also to ``(r', -1)`` (the rule of :mod:`.pretokenized`).  Hence

    live(q, u)  iff  q final, or some t in good[q] may follow u
    t in good[q] (arc q -t-> r)  iff  open(r), or some v in good[r] may follow t
    open(r)     iff  r final, or r may cut to r' with r' final or good[r'] non-empty

The second line depends on ``(t, r)`` only, and on nothing at all when
``open(r)``, which holds for most targets (a chunk can usually end there):
whole groups are then filed with one bitset OR.  The rest are decided token
by token, cheaply: a token is good as soon as one follower in ``good[r]`` is
compatible, and a few *witnesses* of ``good[r]`` settle almost every token.
The fixpoint grows ``good`` from the final states backwards.

Since the chunked pattern is trim, ``open(r)`` is known before anything is
solved (``r`` final or cut after): :mod:`.regions` proves it and solves
``good`` of the start's region alone, which is all the first mask reads.  A
lattice small enough to be solved whole in a few milliseconds
(:data:`REGIONS_FIRST_STATES`, :data:`REGIONS_FIRST_ARCS`) gets its first
mask that way and is solved whole when the decoder reaches a second region;
larger ones are solved whole when the product is made, unless the product
is given a declared part (:mod:`.declared`: a JSON Schema's listed members,
without the extra members of open objects), which is solved then, the rest
when a decoder first leaves it.

A state of the result is the set of configurations its text can be in (the
cut is not known until the next token; :mod:`.pretokenized`).  Its arcs are
``good[q]`` minus what ``u`` bans, over its configurations; the target of a
token is the set of the configurations it leads to.  States are numbered in
the order they are first reached, and rows are computed once and kept.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import repeat
from operator import itemgetter
from weakref import WeakMethod

from .. import native
from ..artifact import unpack_ints
from ..automata import DFA
from ..automata.numbering import Numbering
from ..bpe import CanonicalAutomaton, ExplicitCanonical
from ..bpe.compatibility import compatible_before
from .agnostic import SpellingTrie, _row_weights, walk_groups
from .canonical import set_bits, token_mask
from .declared import DeclaredLiveness, worth_deferring
from .regions import RegionLiveness

CHUNK_START = -1
_WITNESSES = 8  # followers of good[r] tried first for each token (a compatible one is nearly always among them)


def _lattice_bound(chunked: DFA, trie: SpellingTrie) -> int:
    """A bound on the lattice's arcs: the tokens beginning with a symbol each row reads, summed over the
    rows (:func:`.agnostic._row_weights`)."""
    return sum(_row_weights(chunked.transitions, trie.leading_counts()))


# A chunked pattern of at most this many states whose lattice is bounded by this many arcs (and by
# max_lattice_arcs, so that no walk of it can be refused) has its first mask solved from the start's region
# (regions.RegionLiveness) and the whole lattice solved when the decoder reaches a second region: such a
# lattice is solved whole in a few milliseconds, once, where a region per new state after the first would
# cost 0.1-0.5 ms each (a region's walks of 100,000 tokens are not shared as the whole walk shares them).
# Measured: bench_guided's patterns over cl100k (13-299 states, bounds 0.9-2.8M) solve whole in 2-7 ms, and
# on the JSONSchemaBench sample over GPT-2 the schemas of up to 372 states in at most 3.2 ms, those of 1,498
# states or more (free strings: mid-character states) in 21-96 ms even under 4M arcs.  The rest is solved
# whole when the product is made, as before: deferred, its cost lands on the second mask (the sample's
# documents are 20-50 tokens: 39-66 us a mask on average instead of 12-16 us with the cut at 4M arcs alone),
# and solved by regions to the end, on every few tokens (1.3 ms a mask; docs/decoding.md).
REGIONS_FIRST_STATES = 1_000
REGIONS_FIRST_ARCS = 4_000_000


def _cuts(rows, boundary: int) -> list[int | None]:
    """Per state, the target of its ``boundary`` arc or None; a compiled chunked pattern's rows
    (``bpefst._core.PackedRows``) say it without making their dicts."""
    cuts = getattr(rows, "cuts", None)
    return cuts() if cuts is not None else list(map(dict.get, rows, repeat(boundary)))


class OnDemandCanonical:
    """The pre-tokenization-aware canonical automaton, expanded state by state (see the module docstring).

    The interface of a DFA as :class:`~.guided.GuidedAutomaton` uses it:
    ``start``, ``finals`` (a container), ``step``, ``row`` and ``arc_count``.
    ``declared``: a flag per state of ``chunked``, the states :func:`.declared.reached_by_prefixes` finds (or a
    function returning them or None, called only where they would be used).
    """

    def __init__(self, chunked: DFA, trie: SpellingTrie, automaton: CanonicalAutomaton, boundary: int,
                 max_states: int | None = None, max_lattice_arcs: int | None = None,
                 declared=None):
        self.automaton = automaton
        self.max_states = max_states
        self.finals_q = chunked.finals
        self.cut = _cuts(chunked.transitions, boundary)  # (200k rows for a bounded string)
        self._chunked, self._trie, self._max_lattice_arcs = chunked, trie, max_lattice_arcs
        self.groups = self._filed = self._lattice_arcs = self._weights = None
        limit = REGIONS_FIRST_ARCS if max_lattice_arcs is None else min(REGIONS_FIRST_ARCS, max_lattice_arcs)
        if len(self.cut) <= REGIONS_FIRST_STATES and _lattice_bound(chunked, trie) <= limit:
            # the first mask from the start's region, the rest from one whole solve when the decoder needs more
            self.good = RegionLiveness(chunked, trie, automaton, self.cut, then_whole=WeakMethod(self._whole_good))
        elif (declared_states := self._declared_if_bounded(declared)) is not None and worth_deferring(declared_states):
            # the declared part solved now, the rest when a decoder leaves it (never refused: bounded here)
            self.good = DeclaredLiveness(chunked, trie, automaton, self.cut, declared_states,
                                         WeakMethod(self._whole_good), self._weights)
        else:  # the whole lattice walked now, refused here if it is past the limit
            self._solve_whole()
        self._rows_q: list[dict[int, int] | None] = [None] * len(chunked.transitions)
        self._pattern_rows, self._spellings = chunked.transitions, trie.spellings or trie._spell_all()
        self._begin(chunked.start)

    def _declared_if_bounded(self, declared) -> bytes | bytearray | None:
        """The declared states' flags (``declared``: them, or a function returning them or None), or None when
        there are none or the lattice's bound passes the limit (the whole walk decides then, as without them)."""
        if declared is None or not (self._max_lattice_arcs is None or
                                    sum(self._row_weights()) <= self._max_lattice_arcs):
            return None
        return declared() if callable(declared) else declared

    def _row_weights(self) -> list[int]:
        """The chunked pattern's row weights (:func:`.agnostic._row_weights`), made once for the bound and the
        walks that split by them."""
        if self._weights is None:
            self._weights = _row_weights(self._chunked.transitions, self._trie.leading_counts())
        return self._weights

    def _solve_whole(self) -> None:
        """The lattice of every state walked and ``good`` solved over all of it, with the groups filed per
        state that rows (:meth:`lattice_row`), the disk cache and the shared rows read."""
        # tokens A_BPE never produces are no arcs at all
        keep, declared = self.automaton.reachable_flags, getattr(self, "good", None)
        if not isinstance(declared, DeclaredLiveness):
            groups = walk_groups(self._chunked, self._trie, self._max_lattice_arcs, keep=keep, weights=self._weights)
        else:  # S's walks kept, the rest walked (a lattice bounded below the limit when it was deferred)
            groups = declared.declared_groups + walk_groups(self._chunked, self._trie, None, keep=keep,
                                                            sources=declared.undeclared(), weights=self._weights)
        if not all(map(itemgetter(1), groups)):  # (a transform no state takes); kept groups have tokens
            groups = [(tokens, pairs) for tokens, pairs in groups if pairs]
        self.groups = groups
        self._lattice_arcs = sum(len(tokens) * len(pairs) for tokens, pairs in groups)
        self.good, self._filed = solve_liveness(groups, len(self.cut), self.finals_q, self.cut, self.automaton)

    def _whole_good(self):
        """``good`` of every state, solved whole (RegionLiveness asks at the decoder's second region; rows
        or the disk cache may have asked first)."""
        if self._filed is None:
            self._solve_whole()
        return self.good

    @property
    def filed(self):
        """Per lattice state, the groups of its good tokens with their targets (the whole solve, made once)."""
        if self._filed is None:
            self._solve_whole()
        return self._filed

    def _begin(self, start: int) -> None:
        """Number the start configuration (once liveness is known)."""
        self._good_bytes: dict[tuple[int, int], bytes] = {}  # (q, length) -> good[q] as bytes, for packed masks
        self._stepped: dict[int, dict[int, int | None]] = {}  # state -> the steps taken from it before its row was built
        self._numbering = Numbering("on-demand canonical promotion", self.max_states)
        self._states: list[frozenset] = self._numbering.keys  # state -> its configurations
        self._rows: list[dict[int, int] | None] = []
        self.start_q = start
        self.start = self._number(frozenset({(start, CHUNK_START)})) if (self.good[start] or start in self.finals_q) else None
        self.finals = _Finals(self._states, self.finals_q)

    # -- liveness kept (bpefst.promotion.guide_cache writes it to disk) -----------------------------
    def liveness(self) -> dict:
        """What the constructor computed and the states are expanded from: the chunked pattern's start,
        finals and cuts, ``good[q]`` and the token groups filed per lattice state."""
        filed = self.filed
        return {"start": self.start_q, "finals": self.finals_q, "cut": self.cut, "good": self.good, "filed": filed}

    @classmethod
    def from_liveness(cls, liveness: dict, automaton: CanonicalAutomaton, max_states: int | None = None) -> "OnDemandCanonical":
        """The automaton :meth:`liveness` describes, over the same tokenizer's A_BPE, with no state expanded."""
        self = cls.__new__(cls)
        self.automaton, self.max_states = automaton, max_states
        self.finals_q, self.cut, self.good, self._filed = liveness["finals"], liveness["cut"], liveness["good"], liveness["filed"]
        self.groups = None  # only liveness reads them
        self._lattice_arcs = self._chunked = None
        self._rows_q = [None] * len(self.cut)
        self._pattern_rows = self._spellings = None
        self._begin(liveness["start"])
        return self

    @property
    def lattice_arcs(self) -> int:
        """The arcs of the token lattice: the groups' (a product read from the disk cache: the live ones)."""
        if self._lattice_arcs is None and self._chunked is not None:
            self._solve_whole()
        if self._lattice_arcs is None:
            self._lattice_arcs = sum(len(tokens) for q in range(len(self.cut)) for tokens, _ in self._filed[q])
        return self._lattice_arcs

    # -- states --------------------------------------------------------------------------
    def _number(self, configurations: frozenset) -> int:
        k = self._numbering(configurations)
        if k == len(self._rows):  # a new state: its row is computed when asked for
            self._rows.append(None)
        return k

    def is_final(self, state: int) -> bool:
        return state in self.finals

    @property
    def num_states(self) -> int:
        """States numbered so far (all of them after :meth:`explore`)."""
        return len(self._states)

    # -- arcs ----------------------------------------------------------------------------
    def lattice_row(self, q: int) -> dict[int, int]:
        """``token -> r`` over ``good[q]`` (built on first use, from the groups liveness filed)."""
        row = self._rows_q[q]
        if row is None:
            row = self._rows_q[q] = {}
            for tokens, r in self._filed_of(q):
                row.update(zip(tokens, repeat(r)))
        return row

    def _filed_of(self, q: int):
        """``q``'s filed groups: the declared part's while they answer for ``q``, else the whole solve's."""
        good = self.good
        if self._filed is None and isinstance(good, DeclaredLiveness) and good.holds(q):
            return good.filed_of(q)
        return self.filed[q]

    def _target(self, q: int, t: int) -> int | None:
        """Where ``t`` leads from ``q`` (None when ``t`` is not in ``good[q]``), without building ``q``'s
        whole row (a string-content state of a JSON pattern reads 100,000 tokens of cl100k): the chunked
        pattern read along ``t``'s spelling, which is what the lattice arc is."""
        if not self.good[q] >> t & 1:
            return None
        row = self._rows_q[q]
        if row is not None or self._pattern_rows is None:  # (a product read from the disk cache has no pattern)
            return self.lattice_row(q)[t]
        rows = self._pattern_rows
        follow = getattr(rows, "follow", None)  # (a compiled chunked pattern: no dict made per row read)
        if follow is not None:
            return follow(q, self._spellings[t])
        for symbol in self._spellings[t]:
            q = rows[q][symbol]
        return q

    def _may_follow(self, u: int, t: int) -> bool:
        return u == CHUNK_START or self.automaton.allowed(u, t)

    def _allowed_tokens(self, q: int, u: int) -> list[int]:
        row = self.lattice_row(q)
        if u == CHUNK_START:
            return list(row)
        if len(row) < 64:
            return [t for t in row if self._may_follow(u, t)]
        banned = set_bits(self.automaton.banned_mask(u) & self.good[q])
        if not banned:
            return list(row)
        banned_set = set(banned)
        return [t for t in row if t not in banned_set]

    def _targets(self, t: int, r: int, into: set) -> None:
        into.add((r, t))
        after = self.cut[r]
        if after is not None:
            into.add((after, CHUNK_START))

    def row(self, state: int) -> dict[int, int]:
        """``token -> state`` for every arc of ``state`` (computed once; numbers every target)."""
        found = self._rows[state]
        if found is not None:
            return found
        targets: dict[int, set] = {}
        for q, u in self._states[state]:
            row_q = self.lattice_row(q)
            for t in self._allowed_tokens(q, u):
                into = targets.get(t)
                if into is None:
                    into = targets[t] = set()
                self._targets(t, row_q[t], into)
        row = {t: self._number(frozenset(into)) for t, into in targets.items()}
        self._rows[state] = row
        self._stepped.pop(state, None)
        return row

    def step(self, state: int, token: int) -> int | None:
        """The state after ``token``, or None; a constant number of pair checks, no row built."""
        found = self._rows[state]
        if found is not None:
            return found.get(token)
        stepped = self._stepped.get(state)
        if stepped is None:
            stepped = self._stepped[state] = {}
        elif token in stepped:  # a decoder coming this way again (warm)
            return stepped[token]
        into: set = set()
        for q, u in self._states[state]:
            r = self._target(q, token)
            if r is not None and self._may_follow(u, token):
                self._targets(token, r, into)
        target = stepped[token] = self._number(frozenset(into)) if into else None
        return target

    def allowed_mask(self, state: int) -> int:
        """The tokens that may come next as a bitset over token ids: per configuration one
        AND-NOT of ``good[q]`` with the previous token's banned bitset (built once per token)."""
        mask = 0
        banned_mask = self.automaton.banned_mask
        for q, u in self._states[state]:
            good = self.good[q]
            mask |= good if u == CHUNK_START else good & ~banned_mask(u)
        return mask

    def packed_mask(self, state: int, length: int) -> bytes | None:
        """``allowed_mask(state)`` as ``length`` little-endian bytes, made without a Python int of the whole
        vocabulary where A_BPE computes on the compiled core (else None: use allowed_mask)."""
        if native.core is None:
            return None
        banned_bytes = self.automaton.banned_bytes
        pairs = []
        for q, u in self._states[state]:
            good = self._good_bytes.get((q, length))
            if good is None:
                good = self._good_bytes[(q, length)] = good_as_bytes(self.good, q, length)
                if good is None:
                    return None
            banned = None if u == CHUNK_START else banned_bytes(u)
            if banned is None and u != CHUNK_START:
                return None
            pairs.append((good, banned))
        return native.core.allowed_union(pairs)

    def arc_count(self, state: int) -> int:
        row = self._rows[state]
        return len(row) if row is not None else self.allowed_mask(state).bit_count()

    # -- whole automaton (tests, small patterns) -------------------------------------------
    def explore(self) -> None:
        """Expand every reachable state."""
        if self.start is None:
            return
        k = 0
        while k < len(self._states):
            self.row(k)
            k += 1

    def to_dfa(self) -> DFA:
        """Every reachable state written out (trim: liveness keeps dead ends out)."""
        self.explore()
        if self.start is None:
            return DFA([{}], 0, frozenset(), check=False)
        rows = [self.row(k) for k in range(len(self._states))]
        return DFA(rows, self.start, frozenset(k for k in range(len(rows)) if self.is_final(k)), check=False)


class _Finals:
    """``state in finals`` for an :class:`OnDemandCanonical`: a state is final when one of its configurations'
    lattice states is.  It holds the product's state list, not the product: no reference cycle, so a product
    is freed as soon as its last user lets go, not at the next full collection."""

    def __init__(self, states: list[frozenset], finals_q):
        self.states, self.finals_q = states, finals_q

    def __contains__(self, state) -> bool:
        if not (isinstance(state, int) and 0 <= state < len(self.states)):
            return False
        finals_q = self.finals_q
        return any(q in finals_q for q, _ in self.states[state])


def solve_liveness(groups, n_states: int, finals, cut, automaton: CanonicalAutomaton, engine: str | None = None
                   ) -> tuple[list[int], Sequence[list[tuple[list[int], int]]]]:
    """``(good, filed)``: the fixpoint of the module docstring, and per lattice state the groups of good
    tokens with their target in the order found (a group's own ``array('I')``, or a list of the tokens of
    a group settled one by one).  On the compiled core (``bpefst._core.solve_liveness``)
    where it runs and ``engine`` allows, else :class:`_Liveness`; both give the same lists (the core's
    ``filed`` a ``bpefst._core.Filed``, held as arrays, which makes ``filed[q]`` when it is read)."""
    checker = automaton.pair_checker() if native.choose(engine) == "compiled" else None
    if checker is not None:
        numbers, table, filed = native.core.solve_liveness(checker, n_states, sorted(finals), list(cut), groups)
        return GoodSets(unpack_ints(numbers), table), filed
    liveness = _Liveness(groups, n_states, finals, cut, automaton)
    return liveness.solve(), liveness.filed


def good_as_bytes(good, q: int, length: int) -> bytes | None:
    """``good[q]`` as ``length`` little-endian bytes, None when it has a token past them."""
    as_bytes = getattr(good, "bytes_of", None)
    if as_bytes is not None:
        return as_bytes(q, length)
    if good[q].bit_length() > 8 * length:
        return None
    return good[q].to_bytes(length, "little")


class GoodSets:
    """``good[q]`` per lattice state, each distinct set held once as little-endian bytes (``table``, the
    state's place in it in ``numbers``) and made an int when first read: a decoder reads a few hundred
    states' sets, and a JSON Schema's 1,000-1,500 distinct sets are 6-12 kB each.  Made by the compiled
    liveness solve and by the guide cache's reader; reads as the list of ints the pure solve gives."""

    __slots__ = ("numbers", "table", "_ints")

    def __init__(self, numbers, table: list[bytes]):
        self.numbers, self.table = numbers, table
        self._ints: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, q: int) -> int:
        k = self.numbers[q]
        found = self._ints.get(k)
        if found is None:
            found = self._ints[k] = int.from_bytes(self.table[k], "little")
        return found

    def __iter__(self):
        return map(self.__getitem__, range(len(self.numbers)))

    def bytes_of(self, q: int, length: int) -> bytes | None:
        """``good[q].to_bytes(length, "little")`` without the int (a cold decoding step reads a new state's
        set this way), None when the set has a token past ``length`` bytes."""
        data = self.table[self.numbers[q]]
        if len(data) > length:
            data = data.rstrip(b"\0")  # (whole words are kept; the last may end in zero bytes)
            if len(data) > length:
                return None
        return data.ljust(length, b"\0")

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, GoodSets)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None


class _Liveness:
    """The fixpoint ``good[q]`` of the module docstring, as bitsets over token ids."""

    def __init__(self, groups, n_states: int, finals, cut, automaton: CanonicalAutomaton):
        self.groups, self.finals, self.cut, self.automaton = groups, finals, cut, automaton
        self.n = n_states
        self.preds: list[list[tuple[int, int]]] = [[] for _ in range(n_states)]  # r -> [(group, q)]
        for g, (_, pairs) in enumerate(groups):
            for q, r in pairs.items():
                self.preds[r].append((g, q))
        self.cut_preds: list[list[int]] = [[] for _ in range(n_states)]  # r' -> [r cutting to r']
        for r, after in enumerate(cut):
            if after is not None:
                self.cut_preds[after].append(r)
        self._explicit = isinstance(automaton, ExplicitCanonical)
        self._witnesses: dict[int, tuple[int, list[int]]] = {}
        self._class_answers: dict[tuple[int, int], object] = {}
        self._class_sizes: dict[int, int] = {}

    def solve(self) -> list[int]:
        """Grow ``good`` from the final states: whole groups first, token checks only when nothing opens.

        The work order is fixed (finals in ascending order, then a first-in first-out queue of the
        states whose ``good`` grew), so ``filed`` comes out the same from this loop and from its
        compiled twin ``bpefst._core.solve_liveness``."""
        masks = self.masks = _token_masks([tokens for tokens, _ in self.groups])
        good = self.good = [0] * self.n
        is_open = self.is_open = bytearray(self.n)
        self.filed: list[list[tuple[list[int], int]]] = [[] for _ in range(self.n)]  # q -> (good tokens, r) as found
        self.dirty = _WorkQueue(self.n)  # targets, not open, whose good[r] grew since their tokens were checked
        self.waiting: dict[tuple[int, int], list[int]] | None = None
        for r in sorted(self.finals):
            self._open(r)
        for r, after in enumerate(self.cut):  # a chunk may end at r, and the text with it
            if after is not None and after in self.finals and not is_open[r]:
                self._open(r)
        waiting: dict[tuple[int, int], list[int]] = {}  # (group, q) -> its tokens not yet known good
        for r in range(self.n):
            if not is_open[r]:
                for g, q in self.preds[r]:
                    if masks[g] & ~good[q]:
                        waiting[(g, q)] = self.groups[g][0]
        self.waiting = waiting
        while self.dirty:
            r = self.dirty.pop()
            if is_open[r]:
                continue
            for g, q in self.preds[r]:
                pending = waiting.get((g, q))
                if pending:
                    settled = self.settle(pending, r)
                    if settled:
                        done = set(settled)
                        waiting[(g, q)] = [t for t in pending if t not in done]
                        self.filed[q].append((settled, r))
                        if self._grow(q, token_mask(settled)):
                            for r0 in self.cut_preds[q]:
                                self._open(r0)
        return _shared(good)

    def _open(self, r: int) -> None:
        """Every arc into ``r`` is good (``r`` is final, or a chunk may end there and the text go on)."""
        stack = [r]
        while stack:  # opening r can open the targets that cut to a state r's arcs come from
            r = stack.pop()
            if self.is_open[r]:
                continue
            self.is_open[r] = 1
            for g, q in self.preds[r]:
                if self.waiting is not None:
                    self.waiting.pop((g, q), None)
                self.filed[q].append((self.groups[g][0], r))
                if self._grow(q, self.masks[g]):
                    stack.extend(r0 for r0 in self.cut_preds[q] if not self.is_open[r0])

    def _grow(self, q: int, mask: int) -> bool:
        """``good[q] |= mask``; True when ``good[q]`` was empty before and is not now."""
        before = self.good[q]
        after = before | mask
        if after == before:
            return False
        self.good[q] = after
        if not self.is_open[q]:
            self.dirty.push(q)
        return not before

    def settle(self, pending: list[int], r: int) -> list[int]:
        """The tokens of ``pending`` that some token of ``good[r]`` may follow (by A_BPE's encoding)."""
        return self._settle_explicit(pending, r) if self._explicit else self._settle_implicit(pending, r)

    def _settle_explicit(self, pending: list[int], r: int) -> list[int]:
        """The tokens of ``pending`` that some token of ``good[r]`` may follow.

        Decided once per class of tokens and ``r``: a "yes" holds for good (``good[r]`` only grows),
        a "no" until ``good[r]`` grows.  A class follows when ``good[r]`` has a token its banned set
        lacks: more tokens than that set, or ``good & banned != good``.
        """
        token_class = self.automaton.token_class
        good = self.good[r]
        answers = self._class_answers
        yes = set()
        count = None
        for c in {token_class[t] for t in pending}:
            known = answers.get((c, r))
            if known is True:
                yes.add(c)
                continue
            if known is not None and known == good:
                continue
            banned = self.automaton.class_banned[c]
            size = self._class_sizes.get(c)
            if size is None:
                size = self._class_sizes[c] = banned.bit_count()
            if count is None:
                count = good.bit_count()
            if count > size or good & banned != good:
                answers[(c, r)] = True
                yes.add(c)
            else:
                answers[(c, r)] = good
        return [t for t in pending if token_class[t] in yes] if yes else []

    def _settle_implicit(self, pending: list[int], r: int) -> list[int]:
        return [t for t in pending if self._follows_implicit(t, r)]

    def _follows_implicit(self, t: int, r: int) -> bool:
        forest = self.automaton.forest
        good = self.good[r]
        found = self._witnesses.get(r)
        if found is None or found[0] != good:
            found = self._witnesses[r] = (good, set_bits(good) if good.bit_count() <= 4 * _WITNESSES else _some_bits(good, _WITNESSES))
        for v in found[1]:
            if compatible_before(forest, t, v):
                return True
        if good.bit_count() <= len(found[1]):
            return False
        return any(compatible_before(forest, t, v) for v in set_bits(good))


class _WorkQueue:
    """States waiting to be worked on, first in first out, each at most once at a time."""

    def __init__(self, n: int):
        self._queue: deque[int] = deque()
        self._queued = bytearray(n)

    def __bool__(self) -> bool:
        return bool(self._queue)

    def push(self, r: int) -> None:
        if not self._queued[r]:
            self._queued[r] = 1
            self._queue.append(r)

    def pop(self) -> int:
        r = self._queue.popleft()
        self._queued[r] = 0
        return r


def _shared(bitsets: list[int]) -> list[int]:
    """``bitsets`` with equal values made one object (string states of a JSON pattern share their ``good``)."""
    seen: dict[int, int] = {}
    return [seen.setdefault(b, b) for b in bitsets]


def _token_masks(token_lists: list[list[int]]) -> list[int]:
    """:func:`.canonical.token_mask` of each list, on the compiled core where it runs."""
    if native.core is not None:
        return native.core.token_masks(token_lists)
    return [token_mask(tokens) for tokens in token_lists]


def _some_bits(mask: int, count: int) -> list[int]:
    """Up to ``count`` set bits of ``mask``, lowest first (low ids: short tokens, rarely banned)."""
    bits = []
    while mask and len(bits) < count:
        low = mask & -mask
        bits.append(low.bit_length() - 1)
        mask ^= low
    return bits
