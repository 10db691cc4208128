"""JSON Schema -> minimal DFA, built from the translation's expression graph without regex text.

The graph of :mod:`.json_schema_expr` is built straight into a DFA, right to
left: each node is built *in front of* the state that follows it (its
continuation), so that concatenation needs no epsilon arcs and no subset
construction:

* leaves (regex text of numbers, string bodies, formats, patterns) are
  compiled to minimal DFAs over the alphabet's raw symbols, kept in a
  bounded LRU cache shared by all translations (most schemas use the same
  few: a string, a number, an integer); ready-made automata
  (:class:`~.json_schema_expr.Built`: any JSON value up to a depth, shared
  by all translations in a bounded cache; names other than an object's
  listed ones, built per translation as a product of a trie and the name
  automaton) likewise;
* a DFA is put in front of a continuation by copying it: a final state
  without arcs *is* the continuation (arcs into it go there), a final state
  with arcs (a number, which may go on) also takes the continuation's arcs
  (they must read other symbols; where they do not, as whitespace around
  whitespace, the older route below builds the graph); a copied state's
  row is written only if the construction reads it (most are not: the
  minimization reads the copied automaton's rows and profiles);
* a union starts in a state whose arcs are the union of the branches'; where
  two branches read the same symbol (two objects, two strings) the targets
  are joined the same way, a subset construction confined to where the
  branches overlap (JSON branches part after a few symbols: a type's first
  character, a member's name);
* a loop (``part*`` then what follows: array items, extra members) is a state
  made first and filled in once the part has been built in front of it;
* an object's members are a chain: before each listed member, a state for
  "nothing written yet" and one for "something written" (a comma first),
  then the loop of extra members; linear in the members;
* a node built twice in front of the same state is built once.

Where a loop's part can be empty, or a copied final state and its
continuation read the same symbol (``whitespace > 0``), the whole graph is
built the older way instead: one NFA, determinized.  Both ways count states
and arcs as they go and stop with :class:`StateLimitExceeded` /
:class:`ArcLimitExceeded` (the translator names the JSON pointer being built).
The result is minimized once (:func:`minimal`: the construction is nearly
minimal, so most states are told apart by the symbols they read and the
first word they accept before any refinement).
"""

from __future__ import annotations

from array import array
from collections import Counter, OrderedDict
from itertools import groupby
from operator import itemgetter
from typing import NamedTuple

from ..automata import DFA, NFA, determinize, minimize
from ..automata.errors import ArcLimitExceeded, StateLimitExceeded
from .alphabets import Alphabet, ByteAlphabet
from .compiler import minimal_dfa, minimal_of_rows, on_core, to_nfa
from .json_schema_expr import Alt, Built, Leaf, Lit, Members, Node, Rep, Seq, seq
from .syntax import parse

LEAF_CACHE = 256  # compiled leaves kept between translations (least recently used dropped first)
BUILT_CACHE = 32  # ready-made automata kept between translations (any value, per depth and whitespace)
SHARE_AT = 24  # (NFA route) a node used more than once is compiled once when it builds at least this many states
MAX_ARCS = 600_000  # arcs one translation may write: with the states and the minimization, about 200 MB at most
FALLBACK_SIZE = 2_000_000  # NFA states the older route (one NFA, determinized) may be given

_first, _second = itemgetter(0), itemgetter(1)
_leaves: OrderedDict[tuple, DFA] = OrderedDict()
_profiles: dict[int, tuple[DFA, list]] = {}  # id(dfa) -> (dfa, its piece_profiles)
PROFILE_CACHE = 2 * (LEAF_CACHE + BUILT_CACHE)  # cleared when full (its automata are those of the caches, or a translation's)
PROFILE_STATES = 50_000  # ... or when the automata it keeps alive pass this many states (a few MB)
_profiled_states = 0
_built: OrderedDict[tuple, DFA] = OrderedDict()


def leaf_dfa(text: str, alphabet: Alphabet) -> DFA:
    """The minimal DFA over ``alphabet``'s raw symbols of a regex text (bounded LRU cache)."""
    key = (text, _alphabet_key(alphabet))
    found = _leaves.get(key)
    if found is not None:
        _leaves.move_to_end(key)
        return found
    dfa = minimal_dfa(to_nfa(parse(text), alphabet))
    if dfa.num_arcs > MAX_ARCS:  # it could not be copied into any translation: refused before it is kept
        raise ArcLimitExceeded("the automaton of one string, number or pattern", MAX_ARCS, dfa.num_arcs)
    _leaves[key] = dfa
    if len(_leaves) > LEAF_CACHE:
        _leaves.popitem(last=False)
    return dfa


def built_dfa(node: Built, alphabet: Alphabet, made: dict | None = None) -> DFA:
    """The ready-made automaton of ``node``: kept between translations when its key says so
    (``("any", ...)``: a few small automata every translation needs), else in ``made`` (this translation's)."""
    key = (node.key, _alphabet_key(alphabet))
    keep = node.key[0] == "any"
    store = _built if keep else (made if made is not None else {})
    found = store.get(key)
    if found is not None:
        if keep:
            _built.move_to_end(key)
        return found
    dfa = node.make(alphabet)
    if isinstance(dfa, tuple):  # (dfa, its piece_profiles): kept beside it, as long as it is
        dfa, profiles = dfa
        if keep:
            remember_profiles(dfa, profiles)
        else:
            store[("profiles", id(dfa))] = (dfa, profiles)
    store[key] = dfa
    if keep and len(_built) > BUILT_CACHE:
        _built.popitem(last=False)
    return dfa


class Profile(NamedTuple):
    """A state's arcs grouped by target: what :func:`minimal` compares states by, and what a row is written
    from a group at a time (:func:`written_row`).  Kept per copied automaton: a copy's states share them."""

    targets: tuple  # the targets, in the order of their first arc in the row
    groups: tuple  # per target, the frozenset of symbols leading there
    symbols: frozenset  # every symbol the state reads
    lowest: tuple  # per target, the smallest symbol leading there
    widest: int  # the index of the group with the most symbols


def profile_of(row: dict[int, int], groups_by_target: dict[int, frozenset]) -> Profile:
    """The :class:`Profile` of ``row``, its arcs grouped by target in ``groups_by_target``."""
    targets = tuple(dict.fromkeys(row.values()))
    groups = tuple(map(groups_by_target.__getitem__, targets))
    sizes = list(map(len, groups))
    return Profile(targets, groups, frozenset(row), tuple(map(min, groups)), sizes.index(max(sizes)) if sizes else 0)


def piece_profiles(dfa: DFA) -> list[Profile]:
    """Per state of ``dfa``, its :class:`Profile` (kept for the automata copied into many translations, so that
    a copy's rows are written a group at a time and :func:`minimal` need not group a copy's arcs again)."""
    found = _profiles.get(id(dfa))
    if found is not None and found[0] is dfa:
        return found[1]
    profiles = [_profile(row) for row in dfa.transitions]
    remember_profiles(dfa, profiles)
    return profiles


def remember_profiles(dfa: DFA, profiles: list[Profile]) -> None:
    global _profiled_states
    if len(_profiles) >= PROFILE_CACHE or _profiled_states > PROFILE_STATES:
        _profiles.clear()
        _profiled_states = 0
    _profiles[id(dfa)] = (dfa, profiles)
    _profiled_states += len(profiles)


def _profile(row: dict[int, int]) -> Profile:
    if len(row) == 1:  # most rows built here: a literal's
        ((symbol, target),) = row.items()
        symbols = frozenset(row)
        return Profile((target,), (symbols,), symbols, (symbol,), 0)
    by_target = groupby(sorted(row.items(), key=_second), _second)
    return profile_of(row, {t: frozenset(map(_first, arcs)) for t, arcs in by_target})


def written_row(row: dict[int, int], targets: tuple, profile: Profile, target_id, rename=None) -> dict[int, int]:
    """``row`` with its targets mapped by ``target_id`` (and its symbols by ``rename``), keys in ``row``'s order;
    ``profile``: ``row``'s :class:`Profile`, ``targets``: its targets (or the states that stand for them).

    Written a group at a time: every symbol to the widest group's target
    (``dict.fromkeys`` of a dict copies its keys without hashing them again),
    then the other groups' symbols; a string's row of two hundred bytes into
    a few states costs a few steps, not two hundred.
    """
    if len(targets) == 1 and rename is None:  # most rows
        return dict.fromkeys(row, target_id(targets[0]))
    _, groups, _, _, widest = profile
    if not targets:
        return {}
    keys = row if rename is None else map(rename.__getitem__, row)
    out = dict.fromkeys(keys, target_id(targets[widest]))
    for i, target in enumerate(targets):
        if i != widest:
            group = groups[i] if rename is None else map(rename.__getitem__, groups[i])
            out.update(dict.fromkeys(group, target_id(target)))
    return out


def _alphabet_key(alphabet: Alphabet):
    """What the raw symbols of a compiled leaf depend on: bytes are bytes; characters depend on the domain."""
    if isinstance(alphabet, ByteAlphabet):
        return "bytes"
    return (type(alphabet).__name__, getattr(alphabet, "domain", None))


def build_dfa(node: Node, alphabet: Alphabet, max_states: int | None = None, where=None) -> DFA:
    """The minimal trim DFA over ``alphabet``'s symbol ids of the language of ``node``.

    ``where``: a map ``id(node) -> JSON pointer``; a limit exceeded while
    building raises ``(pointer, error)`` through :class:`BuildLimit` for the
    translator to name.
    """
    if isinstance(alphabet, ByteAlphabet) and (alphabet.byte_ids is None or len(alphabet.byte_ids) == 256):
        return raw_dfa(node, alphabet, max_states, where, alphabet.byte_ids)  # symbols renamed as it is numbered
    return alphabet.finish(raw_dfa(node, alphabet, max_states, where))


def raw_dfa(node: Node, alphabet: Alphabet, max_states: int | None = None, where=None, rename=None) -> DFA:
    """The minimal trim DFA over ``alphabet``'s raw symbols of the language of ``node``
    (``rename``: a one-to-one map of every raw symbol to the symbol the result uses instead)."""
    direct = _Direct(alphabet, max_states, where or {})
    try:
        return direct.dfa(node, rename)
    except _NotDirect:
        pass
    except (StateLimitExceeded, ArcLimitExceeded) as exc:
        raise BuildLimit(direct.pointer(), exc) from None
    pointer = direct.pointer()
    del direct
    if node.size > FALLBACK_SIZE:
        raise BuildLimit(pointer, StateLimitExceeded("the schema's automaton (built as one NFA)", FALLBACK_SIZE))
    try:
        dfa = _Builder(node, alphabet, max_states).dfa(node)
    except (StateLimitExceeded, ArcLimitExceeded) as exc:
        raise BuildLimit("", exc) from None
    return dfa if rename is None else minimal(dfa.transitions, dfa.start, [q in dfa.finals for q in range(dfa.num_states)],
                                              rename)


class BuildLimit(Exception):
    """A state or arc limit hit while building; ``pointer``: the innermost schema being built."""

    def __init__(self, pointer: str, error: Exception) -> None:
        super().__init__(pointer, error)
        self.pointer, self.error = pointer, error


class _NotDirect(Exception):
    """The graph has a loop this builder does not take (an empty or colliding part): use the NFA route."""


class _Direct:
    """The right-to-left construction of the module docstring, over one growing table of states."""

    def __init__(self, alphabet: Alphabet, max_states: int | None, where: dict) -> None:
        self.alphabet = alphabet
        self.max_states = max_states
        self.where = where  # id(node) -> pointer, for the message of a limit
        self.stack: list[str] = [""]  # pointers of the nodes being built, innermost last
        self.made_by: Counter = Counter()  # pointer -> states and arcs made while it was the innermost schema
        self.failed_at = ""
        self.rows: list[dict[int, int] | None] = []  # None: a copied state's row, written when first read (row())
        self.finals = bytearray()
        self.arcs = 0
        self.memo: dict[tuple[int, int], int | None] = {}  # (id(node), continuation) -> start
        self.unions: dict[frozenset, int] = {}
        self.waiting: dict[int, list[int]] = {}  # unfinished loop state -> states that take its arcs once it is done
        self.unfinished: set[int] = set()
        self.spelled: dict[str, tuple | None] = {}
        self.made: dict = {}
        self.nullable_memo: dict[int, bool] = {}
        # state -> (the copied state's profile, the copy's ids, the copied state's row), while its row is the copy's
        self.copied: dict[int, tuple[Profile, list, dict]] = {}

    def pointer(self) -> str:
        """Where a limit was hit: the innermost schema being built then, or (at the top) the one that made the
        most states and arcs."""
        if self.failed_at:
            return self.failed_at
        return max(self.made_by, key=self.made_by.__getitem__) if self.made_by else ""

    # -- the table ---------------------------------------------------------------------------
    def new(self, row: dict[int, int], final: bool = False) -> int:
        self.rows.append(row)
        self.finals.append(final)
        self.counted(1, len(row))
        return len(self.rows) - 1

    def counted(self, states: int, arcs: int) -> None:
        """Count states and arcs just added to the table against the limits."""
        self.arcs += arcs
        self.made_by[self.stack[-1]] += states + arcs
        if self.max_states is not None and len(self.rows) > self.max_states:
            self.failed_at = self.stack[-1]
            raise StateLimitExceeded("the schema's automaton", self.max_states)
        if self.arcs > MAX_ARCS:
            self.failed_at = self.stack[-1]
            raise ArcLimitExceeded("the schema's automaton", MAX_ARCS)

    def row(self, q: int) -> dict[int, int]:
        """State ``q``'s row, written now if ``q`` is a copied state whose row no one has read yet."""
        row = self.rows[q]
        if row is None:
            profile, ids, source = self.copied[q]
            row = self.rows[q] = written_row(source, profile.targets, profile, ids.__getitem__)
        return row

    def dfa(self, node: Node, rename=None) -> DFA:
        end = self.new({}, True)
        start = self.build(node, end)
        if start is None:
            return DFA.empty_language()
        rows, finals, copied = self.rows, self.finals, self.copied
        self.rows, self.memo, self.unions, self.copied = [], {}, {}, {}
        return minimal(rows, start, finals, rename, copied)

    # -- nodes -------------------------------------------------------------------------------
    def build(self, node: Node, k: int | None) -> int | None:
        """The start of ``node`` built in front of state ``k`` (None: the empty language)."""
        if k is None:
            return None
        key = (id(node), k)
        if key in self.memo:
            return self.memo[key]
        pointer = self.where.get(id(node))
        if pointer is not None:
            self.stack.append(pointer)
        try:
            start = self._build(node, k)
        finally:
            if pointer is not None:
                self.stack.pop()
        self.memo[key] = start
        return start

    def _build(self, node: Node, k: int) -> int | None:
        if isinstance(node, Lit):
            return self.literal(node.text, k)
        if isinstance(node, Leaf):
            return self.graft(leaf_dfa(node.text, self.alphabet), k)
        if isinstance(node, Built):
            return self.graft(built_dfa(node, self.alphabet, self.made), k)
        if isinstance(node, Seq):
            return self.sequence(node.parts, k)
        if isinstance(node, Alt):
            return self.union([self.build(part, k) for part in node.parts])
        if isinstance(node, Rep):
            return self.repeat(node, k)
        if isinstance(node, Members):
            return self.members(node, k)
        raise TypeError(f"unknown node {node!r}")

    def sequence(self, parts, k: int | None) -> int | None:
        for part in reversed(parts):
            k = self.build(part, k)
            if k is None:
                return None
        return k

    def literal(self, text: str, k: int) -> int | None:
        symbols = self.spelled.get(text)
        if text not in self.spelled:
            symbols = self.spelled[text] = spell(text, self.alphabet)
        if symbols is None:
            return None  # a character the alphabet cannot spell
        for symbol in reversed(symbols):
            k = self.new({symbol: k})
        return k

    def repeat(self, node: Rep, k: int) -> int | None:
        """``low`` copies, then a loop (no bound) or up to ``high - low`` more, each optional."""
        if node.high is None:
            k = self.loop((node.part,), k)
        else:
            end = k
            for _ in range(node.high - node.low):
                k = self.union([self.build(node.part, k), end])
        for _ in range(node.low):
            k = self.build(node.part, k)
        return k

    def loop(self, parts, k: int | None) -> int | None:
        """``(parts)*`` in front of ``k``: a state made first, its arcs those of the parts' start and of ``k``."""
        if k is None:
            return None
        if all(self.nullable(p) for p in parts):
            raise _NotDirect()
        state = self.new({})
        self.unfinished.add(state)
        self.waiting[state] = []
        first = self.sequence(parts, state)
        if first is None:
            row, final = dict(self.row(k)), self.finals[k]
        elif first in self.unfinished:
            raise _NotDirect()
        elif self.row(first).keys().isdisjoint(self.row(k)):
            row, final = {**self.row(k), **self.row(first)}, self.finals[k]
        else:  # both start alike (whitespace before the comma and before the closing bracket)
            joined = self.union([first, k])
            row, final = dict(self.row(joined)), self.finals[joined]
        self.rows[state] = row
        self.arcs += len(row)
        self.made_by[self.stack[-1]] += len(row)
        self.finals[state] = final
        self.unfinished.discard(state)
        for q in self.waiting.pop(state):
            self.unfinished.discard(q)
            self.join(q, state)
        return state

    def members(self, node: Members, k: int) -> int | None:
        """The chain (module docstring): ``some`` after a member (a comma next), ``none`` before any."""
        if node.free:
            return self.free_members(node, k)
        if node.more is not None:
            some = self.loop((node.comma, node.more), k)
            none = self.union([self.build(node.more, some), k if node.allow_empty else None])
        else:
            some, none = k, (k if node.allow_empty else None)
        for member, required in reversed(node.members):
            written = self.build(member, some)
            with_comma = self.build(node.comma, written)
            none = self.union([written, None if required else none])
            some = self.union([with_comma, None if required else some])
        return none

    def free_members(self, node: Members, k: int) -> int | None:
        """Any order (:class:`~.json_schema_expr.Members`): right to left, a loop per gap of the members that may
        come anywhere (``some``: a comma first), the required ones between; the first member written needs no comma."""
        anywhere, comma = node.anywhere, node.comma

        def gap(target: int | None) -> int | None:
            return target if anywhere is None else self.loop((comma, anywhere), target)

        some, first = gap(k), (k if node.allow_empty else None)
        for member, required in reversed(node.members):
            if required:
                first = self.build(member, some)
                some = gap(self.build(comma, first))
        return first if anywhere is None else self.union([self.build(anywhere, some), first])

    def nullable(self, node: Node) -> bool:
        """Whether ``node``'s language has the empty string."""
        found = self.nullable_memo.get(id(node))
        if found is None:
            if isinstance(node, Lit):
                found = not node.text
            elif isinstance(node, Leaf):
                dfa = leaf_dfa(node.text, self.alphabet)
                found = dfa.start in dfa.finals
            elif isinstance(node, Built):
                dfa = built_dfa(node, self.alphabet, self.made)
                found = dfa.start in dfa.finals
            elif isinstance(node, Seq):
                found = all(self.nullable(p) for p in node.parts)
            elif isinstance(node, Alt):
                found = any(self.nullable(p) for p in node.parts)
            elif isinstance(node, Rep):
                found = node.low == 0 or self.nullable(node.part)
            elif isinstance(node, Members):
                found = node.allow_empty and not any(required for _, required in node.members)
            else:
                raise TypeError(f"unknown node {node!r}")
            self.nullable_memo[id(node)] = found
        return found

    # -- gluing ------------------------------------------------------------------------------
    def graft(self, dfa: DFA, k: int) -> int | None:
        """A copy of ``dfa`` in front of ``k``: its final states without arcs are ``k``, the others new states.

        A copied state's row is written only when something reads it (:meth:`row`:
        a union, a join, a loop; most rows of a copy are never read); the
        minimization reads the copied automaton's profiles and rows instead.
        """
        transitions, finals = dfa.transitions, dfa.finals
        if not finals:
            return None
        first = len(self.rows)
        ids = []
        kept = []  # the states copied (the others are k)
        for q, row in enumerate(transitions):
            if q in finals and not row:
                ids.append(k)
            else:
                ids.append(first + len(kept))
                kept.append(q)
        local = self.made.get(("profiles", id(dfa)))
        profiles = local[1] if local is not None and local[0] is dfa else piece_profiles(dfa)
        self.rows.extend([None] * len(kept))
        self.finals.extend(bytes(len(kept)))
        self.copied.update((first + i, (profiles[q], ids, transitions[q])) for i, q in enumerate(kept))
        self.counted(len(kept), dfa.num_arcs)  # the states left out have no arcs
        for q in kept:
            if q in finals:
                self.join(ids[q], k)
        return ids[dfa.start]

    def join(self, q: int, k: int) -> None:
        """State ``q`` also goes on as ``k`` does (``q`` is a final state of a copied DFA)."""
        self.row(q)
        self.copied.pop(q, None)  # its arcs are no longer the copied state's
        if k in self.unfinished:  # a loop's state, filled in later
            self.waiting[k].append(q)
            self.unfinished.add(q)
            return
        row, more = self.rows[q], self.row(k)
        if not row.keys().isdisjoint(more):
            # the copy may go on where the continuation starts (whitespace after a nullable whitespace leaf):
            # the joined arcs would need the other copied states' joined arcs first, so the NFA route builds it
            raise _NotDirect()
        self.finals[q] = self.finals[k]
        self.arcs += len(more)
        self.made_by[self.stack[-1]] += len(more)
        row.update(more)

    def union(self, states) -> int | None:
        """A state whose language is the union of the states' (a subset construction where they overlap)."""
        members = frozenset(s for s in states if s is not None)
        if len(members) <= 1:
            return next(iter(members)) if members else None
        found = self.unions.get(members)
        if found is not None:
            return found
        first = self.new({})
        self.unions[members] = first
        todo = [(first, members)]
        rows, finals, unions = self.rows, self.finals, self.unions
        while todo:
            state, subset = todo.pop()
            if not self.unfinished.isdisjoint(subset):
                raise _NotDirect()
            row: dict[int, int] = {}
            clash: dict[int, set[int]] = {}
            final = False
            for q in subset:
                final = final or finals[q]
                more = self.row(q)
                # only the symbols both read are looked at one by one (a set intersection finds them), the
                # rest are copied by update: a string's row of two hundred bytes beside an object's brace
                for symbol in row.keys() & more.keys():
                    mine, target = row[symbol], more[symbol]
                    if mine != target:
                        clash.setdefault(symbol, {mine}).add(target)
                row.update(more)  # (a clashing symbol's entry is replaced below)
            for symbol, targets in clash.items():
                key = frozenset(targets)
                target = unions.get(key)
                if target is None:
                    target = unions[key] = self.new({})
                    todo.append((target, key))
                row[symbol] = target
            rows[state] = row
            self.arcs += len(row)
            self.made_by[self.stack[-1]] += len(row)
            if self.arcs > MAX_ARCS:
                self.failed_at = self.stack[-1]
                raise ArcLimitExceeded("the schema's automaton", MAX_ARCS)
            finals[state] = final
        return first


def minimal(rows: list[dict[int, int]], start: int, finals, rename=None, copied=None, engine: str | None = None) -> DFA:
    """The minimal DFA of the states of ``rows`` that ``start`` reaches (``finals[q]``: whether ``q`` is final),
    numbered breadth-first; ``rename`` maps symbols to the ones the result uses.

    Every stored state must reach a final state (the construction keeps only
    such states), so two equivalent states read the same symbols and accept
    the same first word (in length-then-symbols order): states start in
    blocks by both, which leaves most states alone in theirs.  Blocks of
    several states are then split by where their arcs lead (Moore's
    refinement on a state's arcs grouped by target, so a row of two hundred
    bytes into three states costs three steps; only states with an arc into
    a state that moved are looked at again), until no block splits: the
    coarsest stable partition, i.e. the minimal automaton.  Past a budget of
    rounds (long chains of equal-looking states) the reachable automaton goes
    to Hopcroft's :func:`~bpefst.automata.minimize` instead, whose worst case
    is ``O(m log n)``.  ``copied`` (:class:`_Direct`'s): the states whose
    profiles and rows are a copied automaton's.

    Where ``engine`` (:func:`bpefst.native.choose`) says compiled, the core's
    subset construction and Hopcroft refinement do the same over the table's
    arcs (:func:`_minimal_on_core`): the same language and number of states,
    numbered canonically instead (translations of the JSONSchemaBench sample:
    median 9.8 -> 7.4 ms, best of three).
    """
    if on_core(engine):
        return _minimal_on_core(rows, start, finals, rename, copied)
    order, arcs, before = _reachable(rows, start, copied)
    words = _shortest_words(order, arcs, before, finals, len(rows))
    block_of, groups, count = _first_blocks(order, arcs, words, len(rows))
    if not _refine(block_of, groups, count, arcs, before):
        return _hopcroft(rows, order, finals, rename, copied, arcs)
    return _quotient(rows, order, finals, block_of, rename, copied, arcs)


def _minimal_on_core(rows: list, start: int, finals, rename, copied) -> DFA:
    """:func:`minimal` on the compiled core's NFA-to-minimal-DFA routine, the table read as an NFA without
    epsilon arcs, a copied state's row read through its copy's ids (not written out), symbols relabelled by
    ``rename`` as the core reads them; numbered canonically (breadth-first, symbols ascending)."""
    if copied:
        rows = [_copy_of(copied[q]) if row is None else row for q, row in enumerate(rows)]
    relabelling = None
    if rename is not None:
        relabelling = array("i", (rename.get(b, -1) for b in range(max(rename, default=-1) + 1))).tobytes()
    finals_list = [q for q, final in enumerate(finals) if final]
    return minimal_of_rows(rows, [[]] * len(rows), start, finals_list, None, relabelling)


def _copy_of(copy: tuple) -> tuple:
    """A copied state's row as the core reads it: the copied row and the copy's state for each of its targets."""
    _, ids, source = copy
    return source, ids


def _reachable(rows: list[dict[int, int]], start: int, copied) -> tuple[list[int], dict[int, tuple], dict[int, list]]:
    """The states ``start`` reaches, in breadth-first order; each one's ``(targets, profile)``: its
    :class:`Profile` and the targets in this table (a copied state's profile is its copied state's); and each
    one's predecessors (a state with several arcs into it may be listed several times)."""
    order = [start]
    arcs = {}
    before: dict[int, list[int]] = {start: []}
    seen = bytearray(len(rows))
    seen[start] = 1
    copied = copied or {}
    for q in order:  # grows while we iterate: breadth-first
        known = copied.get(q)
        if known is None:
            profile = _profile(rows[q])
            targets = profile.targets
        else:
            profile, ids, _ = known
            targets = tuple(map(ids.__getitem__, profile.targets))
        arcs[q] = (targets, profile)
        for r in (set(targets) if len(profile.symbols) > 4 else targets):  # the order of set(row.values()), as before
            if seen[r]:
                before[r].append(q)
            else:
                seen[r] = 1
                order.append(r)
                before[r] = [q]
    return order, arcs, before


def _shortest_words(order: list[int], arcs: dict[int, tuple], before: dict[int, list], finals, size: int) -> list:
    """Per state, a number naming the first in length-then-symbols order of the words it accepts (None where
    none): equal for equivalent states, so a first partition much closer to the final one than finality
    alone (the refinement's rounds are what minimizing costs).  Found from the final states backwards,
    a length at a time: a state's word is its smallest symbol into a state of the previous length, then that
    state's word."""
    words: list = [None] * size
    layer = [q for q in order if finals[q]]
    for q in layer:
        words[q] = 0
    named: dict[tuple, int] = {}  # (symbol, the rest's number) -> number
    while layer:
        done = set(layer)
        nxt = {p for q in layer for p in before[q] if words[p] is None}
        for p in nxt:
            targets, profile = arcs[p]
            if len(targets) == 1:
                symbol, target = profile.lowest[0], targets[0]
            else:
                symbol, target = min((low, t) for t, low in zip(targets, profile.lowest) if t in done)
            words[p] = named.setdefault((symbol, words[target]), len(named) + 1)
        layer = list(nxt)
    return words


def _first_blocks(order: list[int], arcs: dict[int, tuple], words: list,
                  size: int) -> tuple[list[int], dict[int, set[int]], int]:
    """The first partition, by the symbols read and the first word accepted (which says whether the state is
    final): each state's block, the blocks of two or more states, and the number of blocks."""
    blocks: dict[tuple, list[int]] = {}
    for q in order:
        blocks.setdefault((arcs[q][1].symbols, words[q]), []).append(q)
    block_of = [0] * size
    groups: dict[int, set[int]] = {}  # blocks of two or more states
    for i, members in enumerate(blocks.values()):
        for q in members:
            block_of[q] = i
        if len(members) > 1:
            groups[i] = set(members)
    return block_of, groups, len(blocks)


def _refine(block_of: list[int], groups: dict[int, set[int]], count: int, arcs: dict[int, tuple],
            before: dict[int, list]) -> bool:
    """Split the groups until every block's states lead to the same blocks on the same symbols: the coarsest
    stable partition.  False when the budget of signatures runs out first (``block_of`` is then partial).

    Only a state with an arc into a state that changed block can stop being
    like the others of its block, so a round looks at those states only (at
    first, all of them): they are split by signature, the untouched states
    keep the block's number, and where all were touched the largest part
    keeps it; the states given a new number are the next round's.
    """
    budget = 24 * sum(map(len, groups.values())) + 1000  # signatures computed before giving the work to Hopcroft
    touched = {b: set(members) for b, members in groups.items()}
    while touched:
        moved: list[int] = []
        for b, states in touched.items():
            budget -= len(states)
            count = _split(b, states, block_of, groups, arcs, count, moved)
        if budget < 0:
            return False
        touched = {}
        for q in moved:
            for p in before.get(q, ()):
                b = block_of[p]
                if b in groups:
                    touched.setdefault(b, set()).add(p)
    return True


def _split(b: int, states: set[int], block_of: list[int], groups: dict[int, set[int]], arcs: dict[int, tuple],
           count: int, moved: list[int]) -> int:
    """Split block ``b``'s touched ``states`` by signature (the rest of the block keeps its number); the
    states numbered anew are added to ``moved``; the number of blocks after."""
    members = groups[b]
    parts: dict = {}
    for q in states:
        targets, profile = arcs[q]
        parts.setdefault(_signature(block_of, targets, profile.groups), []).append(q)
    if len(parts) == 1 and len(states) == len(members):
        return count
    split = list(parts.values())
    if len(states) == len(members):  # no untouched state: the largest part keeps the number
        split.remove(max(split, key=len))
    for part in split:
        members.difference_update(part)
        for q in part:
            block_of[q] = count
        moved.extend(part)
        if len(part) > 1:
            groups[count] = set(part)
        count += 1
    if len(members) < 2:
        del groups[b]
    return count


def _signature(block_of: list[int], targets: tuple, symbols: tuple):
    """The blocks a state's arcs lead to, each with its symbols: equal for the states of a block that stay
    together.  The states of a block read the same symbols, so arcs all into one block are that block's
    number; targets sharing a block have their symbols merged."""
    if len(targets) == 1:
        return block_of[targets[0]]
    blocks = tuple(map(block_of.__getitem__, targets))
    distinct = len(set(blocks))
    if distinct == 1:
        return blocks[0]
    if distinct == len(blocks):
        return frozenset(zip(blocks, symbols))
    where: dict[int, frozenset] = {}
    for c, group in zip(blocks, symbols):
        seen = where.get(c)
        where[c] = group if seen is None else seen | group
    return frozenset(where.items())


def _hopcroft(rows, order: list[int], finals, rename, copied, arcs: dict[int, tuple]) -> DFA:
    """The minimal DFA of the reachable states by Hopcroft's :func:`~bpefst.automata.minimize` (long chains of
    equal-looking states, where the refinement's rounds would not end soon)."""
    number = [0] * len(rows)
    for i, q in enumerate(order):
        number[q] = i
    reachable = [written_row(_row_of(q, rows, copied), *arcs[q], number.__getitem__) for q in order]
    dfa = minimize(DFA(reachable, 0, frozenset(i for i, q in enumerate(order) if finals[q]), check=False))
    if rename is None:
        return dfa
    return DFA([{rename[a]: r for a, r in row.items()} for row in dfa.transitions], dfa.start, dfa.finals, check=False)


def _quotient(rows, order: list[int], finals, block_of: list[int], rename, copied, arcs: dict[int, tuple]) -> DFA:
    """The automaton of the blocks, numbered by first appearance in the breadth-first order; a block's row is
    its first state's, written a group of arcs at a time (:func:`written_row`)."""
    new_id: dict[int, int] = {}
    keep = []
    for q in order:
        b = block_of[q]
        if b not in new_id:
            new_id[b] = len(keep)
            keep.append(q)
    ids = [0] * len(rows)  # states outside ``order`` are never a target
    for q in order:
        ids[q] = new_id[block_of[q]]
    to_id = ids.__getitem__
    out = [written_row(_row_of(q, rows, copied), *arcs[q], to_id, rename) for q in keep]
    return DFA(out, 0, frozenset(i for i, q in enumerate(keep) if finals[q]), check=False)


def _row_of(q: int, rows, copied) -> dict[int, int]:
    """State ``q``'s row, or (a copied state's row not written yet) its copied state's: the same symbols in the
    same order, its targets those of ``q``'s profile."""
    row = rows[q]
    return copied[q][2] if row is None else row


def spell(text: str, alphabet: Alphabet) -> tuple | None:
    """The raw symbols that spell ``text`` in ``alphabet`` (None when a character cannot be spelled)."""
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        return None
    if isinstance(alphabet, ByteAlphabet):
        return tuple(text.encode("utf-8"))
    out = []
    for char in text:
        chain = determinize(alphabet.literal(ord(char)))
        state = chain.start
        while state not in chain.finals or chain.transitions[state]:
            row = chain.transitions[state]
            if len(row) != 1:
                return None
            (symbol, state), = row.items()
            out.append(symbol)
    return tuple(out)


class _Builder:
    def __init__(self, root: Node, alphabet: Alphabet, max_states: int | None) -> None:
        self.alphabet = alphabet
        self.max_states = max_states
        self.uses = _count_uses(root)
        self.shared: dict[int, DFA] = {}  # id(node) -> its minimal DFA, for nodes used more than once (root keeps them alive)
        self.literals: dict[int, NFA] = {}
        self.made: dict = {}

    def dfa(self, node: Node) -> DFA:
        """The minimal raw DFA of ``node`` (one NFA, determinized and minimized)."""
        arcs: list[list[tuple[int, int]]] = []
        eps: list[list[int]] = []
        start, finals = self.emit(node, arcs, eps, top=True)
        nfa = NFA(arcs, eps, start, frozenset(finals), check=False)
        return minimal_dfa(nfa, self.max_states)

    def emit(self, node: Node, arcs: list, eps: list, top: bool = False) -> tuple[int, list[int]]:
        """Add ``node``'s NFA to the tables; its start state and final states."""
        if not top and self.uses[id(node)] > 1 and node.size >= SHARE_AT and not isinstance(node, (Leaf, Built)):
            found = self.shared.get(id(node))
            if found is None:
                found = self.shared[id(node)] = self.dfa(node)
            return _copy_dfa(found, arcs, eps)
        if isinstance(node, Leaf):
            return _copy_dfa(leaf_dfa(node.text, self.alphabet), arcs, eps)
        if isinstance(node, Built):
            return _copy_dfa(built_dfa(node, self.alphabet, self.made), arcs, eps)
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
        if node.free:
            return self.free_members(node, arcs, eps)
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

    def free_members(self, node: Members, arcs: list, eps: list) -> tuple[int, list[int]]:
        """Any order: ``start`` (nothing written yet), then per gap a state ``some`` looping through the members
        that may come anywhere (a comma first), the required members from gap to gap."""
        start, anywhere, some = _state(arcs, eps), node.anywhere, None
        later = seq(node.comma, anywhere) if anywhere is not None else None
        if anywhere is not None:
            some = _state(arcs, eps)
            self.link(anywhere, start, some, arcs, eps)
            self.link(later, some, some, arcs, eps)
        first = True
        for member, required in node.members:
            if not required:
                continue
            entry, after = _state(arcs, eps), _state(arcs, eps)
            if first:
                eps[start].append(entry)
            if some is not None:
                self.link(node.comma, some, entry, arcs, eps)
            self.link(member, entry, after, arcs, eps)
            if later is not None:
                self.link(later, after, after, arcs, eps)
            some, first = after, False
        if not first:
            return start, [some]
        return start, ([start] if node.allow_empty else []) + ([some] if some is not None else [])

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
        if node.free:  # the members that may come anywhere are built once per gap
            return [m for m, _ in node.members] + [node.comma] * 2 + ([node.anywhere] * 2 if node.anywhere else [])
        kids = [m for m, _ in node.members] + [node.comma]
        return kids + ([node.more] if node.more is not None else [])
    return ()
