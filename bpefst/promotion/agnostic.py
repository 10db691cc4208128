"""Tokenization-agnostic promotion (Eq. 3 of seed 000): every token sequence that spells a match.

Given a DFA ``P`` over base symbols (the tokenizer's bytes or characters, as
their token ids), the promoted automaton has ``P``'s states and an arc
``q -t-> δ*(q, spell(t))`` for every token ``t`` whose spelling ``P`` can read
from ``q``.  Since ``P`` is deterministic and each token has one spelling, the
result is deterministic too.  Rather than composing with the character-to-subword
transducer, walk a trie of all token spellings against ``P`` from every state:
the trie prunes a whole family of tokens as soon as their common prefix leaves
``P``'s language.

The walk from every state (patterns of more than ``_TRANSFORM_WALK_STATES``
states) runs on the compiled core where it is present
(``bpefst._core.TrieWalker``, the trie packed once per tokenizer by
:meth:`SpellingTrie.native_walker`); :func:`_walk` and :func:`_rows_by_walks`
are its pure twin and the fallback, and give the same rows in the same order.
Patterns of fewer states are walked once, carrying *transforms* (the partial
map ``q -> δ*(q, w)`` of the spellings ``w`` so far), tokens filed by the
transform they end in: ``TrieWalker.walk_transforms`` on the core, with
:func:`_groups_by_transforms` as its twin (the same groups in the same order).
In a larger pattern the states whose walks may find many tokens (a JSON
string's states between characters, each reading most of the vocabulary) are
still walked together carrying transforms, and only the others state by state
(:func:`walk_groups`; both walks take the states to start from).
"""

from __future__ import annotations

import threading
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import repeat

from .. import native
from ..artifact import pack_ints, unpack_ints
from ..automata import DFA, minimize, trim
from ..automata.errors import ArcLimitExceeded
from ..tokenizer import BPEModel
from .subtrees import NOT_INDEXED, Subtrees


@dataclass
class SpellingTrie:
    """Token spellings as a trie: ``children[node]`` maps a base symbol to a node; ``tokens[node]`` end there."""

    children: list[dict[int, int]]
    tokens: list[Sequence[int]]  # per node: tuples from from_model and from_tables (lists also walk)
    spellings: dict[int, tuple[int, ...]] | None = field(default=None, repr=False, compare=False)  # token -> symbols, if known
    _steps: list[dict[int, tuple[int, int]]] | None = field(default=None, init=False, repr=False, compare=False)
    _chains: list[dict[int, tuple[tuple[int, ...], int, int, int]]] | None = field(default=None, init=False, repr=False, compare=False)
    _chain_lists: list[Sequence[tuple[int, tuple[int, ...], int, int, int]]] | None = field(default=None, init=False, repr=False, compare=False)
    _subtrees: Subtrees | None = field(default=None, init=False, repr=False, compare=False)
    _walks: int = field(default=0, init=False, repr=False, compare=False)
    _symbols: frozenset[int] | None = field(default=None, init=False, repr=False, compare=False)
    _leading: array | None = field(default=None, init=False, repr=False, compare=False)
    _walker: object = field(default=None, init=False, repr=False, compare=False)
    _walker_packed: bool = field(default=False, init=False, repr=False, compare=False)

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

    def native_walker(self):
        """The trie packed for the compiled core's walk (:func:`bpefst.native.trie_walker`), or None on the
        pure path or where the core cannot take this trie; packed once, read-only, shared by every pattern."""
        if not self._walker_packed:
            self._walker = native.trie_walker(self.children, self.tokens, self.steps())
            self._walker_packed = True
        return self._walker

    def chains(self) -> list[dict[int, tuple[tuple[int, ...], int, int, int]]]:
        """The trie with unary chains collapsed: per node, ``first symbol -> (rest, token, end, rest id)``; built once.

        A chain follows nodes that end no token and have one child, so a walk
        pops only branching nodes and steps through ``rest`` in a tight loop
        (about half the nodes of the GPT-2 and cl100k tries are such links).
        ``token`` codes what ends at the chain's last node as in :meth:`steps`;
        ``end`` is that node, or 0 when it is a leaf.  Equal ``rest`` tuples
        share a ``rest id`` (0 for the empty one): the same few suffixes
        ("ing", "tion") end thousands of chains, so a walk can remember where
        a rest leads from a given state.  Only nodes that start a chain (the
        root, branching nodes, nodes ending a token) have entries.
        """
        if self._chains is None:
            children, ends = self.children, self.tokens
            rest_ids: dict[tuple[int, ...], int] = {(): 0}
            chains: list[dict[int, tuple[tuple[int, ...], int, int, int]]] = [{} for _ in children]
            lists: list[list[tuple[int, tuple[int, ...], int, int, int]]] = [[] for _ in children]
            for node, kids in enumerate(children):
                if node and len(kids) == 1 and not ends[node]:
                    continue  # inside a chain
                here, listed = chains[node], lists[node]
                for s, c in kids.items():
                    rest, token, end = self._chain(c)
                    rest_id = rest_ids.setdefault(rest, len(rest_ids))
                    here[s] = (rest, token, end, rest_id)
                    listed.append((s, rest, token, end, rest_id))
            self._chains, self._chain_lists = chains, [tuple(listed) for listed in lists]  # (see from_model)
        return self._chains

    def chain_lists(self) -> list[Sequence[tuple[int, tuple[int, ...], int, int, int]]]:
        """:meth:`chains` as flat lists ``(first symbol, rest, token, end, rest id)``: the walk's loop unpacks them in one step."""
        if self._chain_lists is None:
            self.chains()
        return self._chain_lists

    def symbols(self) -> frozenset[int]:
        """Every symbol some token spells (what a walk can read); found once."""
        if self._symbols is None:
            self._symbols = frozenset(s for kids in self.children for s in kids)
        return self._symbols

    def leading_counts(self) -> array:
        """Per symbol, how many tokens' spellings begin with it, as an ``array('q')`` indexed by symbol: at
        most that many tokens are found by a walk from a state reading the symbol.  Counted once."""
        if self._leading is None:
            spellings = self.spellings if self.spellings is not None else self._spell_all()
            counts = Counter(spelling[0] for spelling in spellings.values() if spelling)
            table = array("q", bytes(8 * (max(counts, default=-1) + 1)))
            for symbol, count in counts.items():
                table[symbol] = count
            self._leading = table
        return self._leading

    def subtrees(self) -> Subtrees:
        """The index of large subtrees (:mod:`.subtrees`) for filing tokens in bulk; built once."""
        if self._subtrees is None:
            self._subtrees = Subtrees(self.children, self.spellings if self.spellings is not None else self._spell_all())
        return self._subtrees

    def subtrees_if_reused(self) -> Subtrees | None:
        """:meth:`subtrees` once the trie is walked a second time (or the index exists), else None.

        Building the index costs more than it saves in one walk (0.25 s for
        cl100k, against at most tens of milliseconds), so a one-off promotion,
        as from the command line, does without; a trie kept to promote pattern
        after pattern builds it on its second walk.
        """
        self._walks += 1
        if self._subtrees is None and self._walks < 2:
            return None
        return self.subtrees()

    def _spell_all(self) -> dict[int, tuple[int, ...]]:
        """``token -> spelling`` read off the trie (for tries built without their spellings)."""
        spellings: dict[int, tuple[int, ...]] = {}
        stack: list[tuple[int, tuple[int, ...]]] = [(0, ())]
        while stack:
            node, prefix = stack.pop()
            spellings.update(dict.fromkeys(self.tokens[node], prefix))
            stack.extend((child, (*prefix, symbol)) for symbol, child in self.children[node].items())
        return spellings

    def _chain(self, node: int) -> tuple[tuple[int, ...], int, int]:
        """From ``node`` (just entered), the symbols of the chain below it, its token code and its end."""
        children, ends = self.children, self.tokens
        rest = []
        while len(children[node]) == 1 and not ends[node]:
            (symbol, node), = children[node].items()
            rest.append(symbol)
        found = ends[node]
        token = found[0] if len(found) == 1 else -1 if not found else -2 - node
        return tuple(rest), token, node if children[node] else 0

    # -- kept on disk (bpefst.promotion.parts) ---------------------------------------------------------------
    def to_tables(self) -> dict:
        """The trie and every walk index (built now where not built yet) as msgpack-ready values, for
        :meth:`from_tables`.  The compiled walker's packed arrays go too, whichever engine runs here (packing
        them needs no core), or None where the core cannot take this trie."""
        walker = native.trie_walker_tables(self.children, self.tokens, self.steps())
        return {
            "children": self.children,
            "tokens": self.tokens,
            "spellings": self.spellings if self.spellings is not None else self._spell_all(),  # 5x faster read than made
            "steps": self.steps(),
            "chains": self.chain_lists(),  # chains() is the same entries by first symbol
            "subtrees": self.subtrees().to_tables(),
            "walker": None if walker is None else [*(pack_ints(table, "i") for table in walker[:-1]), walker[-1]],
        }

    @classmethod
    def from_tables(cls, tables: dict) -> "SpellingTrie":
        """The trie :meth:`to_tables` wrote (msgpack-read with ``use_list=False`` and ``strict_map_key=False``),
        its indexes built.  Raises (ValueError, KeyError, TypeError, ...) on tables
        that do not hold together; the caller treats any exception as a damaged file."""
        children, steps = list(tables["children"]), list(tables["steps"])
        tokens, chain_lists = list(tables["tokens"]), list(tables["chains"])  # a tuple per node (see from_model)
        spellings, nodes = tables["spellings"], len(children)
        if not (nodes == len(tokens) == len(steps) == len(chain_lists) >= 1):
            raise ValueError("the trie's tables differ in length")
        if {*map(type, children), *map(type, steps), type(spellings)} != {dict}:
            raise TypeError("a trie node is not a map")
        if sum(map(len, tokens)) != len(spellings) or sum(map(len, children)) != nodes - 1:
            raise ValueError("the trie's nodes or tokens do not hold together")
        trie = cls(children, tokens, spellings)
        trie._steps, trie._chain_lists = steps, chain_lists
        trie._chains = [{symbol: (rest, token, end, rest_id) for symbol, rest, token, end, rest_id in listed} if listed else {}
                        for listed in chain_lists]
        trie._subtrees = Subtrees.from_tables(tables["subtrees"], spellings, nodes)
        if native.core is not None:
            walker = tables["walker"]
            trie._walker = None if walker is None else native.trie_walker_of(
                (*(unpack_ints(table, "i") for table in walker[:-1]), walker[-1]))
            trie._walker_packed = True
        return trie

    @classmethod
    def from_model(cls, model: BPEModel, tokens=None) -> "SpellingTrie":
        """The trie of ``model``'s tokens (or of ``tokens``), nodes numbered as they are made, tokens inserted in
        ascending order; on the compiled core in one pass with its steps and packed walker
        (:func:`bpefst.native.spelling_trie`: cl100k about 1.0 s -> 0.2 s with them), else by the loop below, the spec."""
        spellings = model.spellings
        kept = spellings if tokens is None else {t: spellings[t] for t in tokens}
        built = native.spelling_trie(spellings, sorted(kept))
        if built is not None:
            trie = cls(*built[:2], kept)
            trie._steps, trie._walker, trie._walker_packed = built[2], built[3], True
            return trie
        children: list[dict[int, int]] = [{}]
        ends: list[list[int]] = [[]]
        for token in sorted(kept):
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
        # a tuple of tokens per node, not a list: the collector leaves a tuple of ints alone once it has seen
        # it, and the trie's lists (cl100k: 216,750 nodes, and as many chain lists) made each full collection
        # 72 ms (37 ms now), one every ten JSON Schema set-ups or so
        return cls(children, [tuple(found) for found in ends], kept)


def token_arcs(pattern: DFA, trie: SpellingTrie, state: int) -> dict[int, int]:
    """``token -> target`` for every token the pattern can read from ``state``."""
    return _walk(pattern.transitions, trie.steps(), state, trie.tokens)


# Patterns up to this many states are promoted by one walk carrying transforms; larger
# ones (e.g. Table 1's 2,381-state edit-distance automaton, whose states share few
# trie paths) by one walk per state, which measures 3-4x faster there: a transform of
# thousands of states is costly to step and rarely shared.
_TRANSFORM_WALK_STATES = 256


def token_rows(pattern: DFA, trie: SpellingTrie, max_arcs: int | None = None) -> list[dict[int, int]]:
    """``token_arcs`` of every state of ``pattern`` (same numbering), by the faster walk for its size.

    Raises ArcLimitExceeded as soon as the rows are known to hold more than
    ``max_arcs`` arcs: a pattern such as ``[a-z]{3000}`` over cl100k would
    fill gigabytes with its lattice before any later limit is checked.
    """
    transitions = pattern.transitions
    if len(transitions) <= _TRANSFORM_WALK_STATES:
        return _rows_by_transform(transitions, trie, max_arcs)
    walker = trie.native_walker()
    if walker is not None:
        return _walk_natively(walker, transitions, max_arcs, groups=False)
    return _rows_by_walks(transitions, trie, max_arcs)


def _rows_by_walks(transitions: list[dict[int, int]], trie: SpellingTrie, max_arcs: int | None = None) -> list[dict[int, int]]:
    """One :func:`_walk` per state, arcs counted as rows are made: the pure twin of ``TrieWalker.walk``."""
    steps = trie.steps()
    rows = []
    arcs = 0
    for q in range(len(transitions)):
        rows.append(_walk(transitions, steps, q, trie.tokens))
        arcs += len(rows[-1])
        _check_arcs(arcs, max_arcs)
    return rows


def _walk_natively(walker, transitions: list[dict[int, int]], max_arcs: int | None, groups: bool, keep=None,
                   transforms: bool = False, sources: bytes | None = None) -> list:
    """``TrieWalker.walk`` (src/core/promote.h): the rows of :func:`_rows_by_walks`, or with ``groups`` the
    groups of :func:`_groups_by_walks` (equal token lists shared across states), equal to the pure ones in
    value and order; with ``transforms``, ``TrieWalker.walk_transforms``: the groups of one walk
    carrying transforms (:func:`_walk_transforms`), tokens ascending and groups by their first token.
    A group's pairs are a ``bpefst._core.Pairs`` (src/core/pairs.h): two arrays the compiled solve reads
    as they are, read from Python as the dict ``{q: r}`` the pure walks make.
    ``sources``: one byte per state, 0 for the states not walked from (None: all)."""
    if max_arcs is not None and max_arcs < 0 and transitions:  # the pure walk raises after its first row, however short
        raise ArcLimitExceeded(LATTICE, max_arcs, written_out=not groups)
    if keep is not None and not isinstance(keep, (bytes, bytearray)):
        keep = bytes(keep)
    limit = -1 if max_arcs is None else min(max_arcs, 1 << 62)
    if transforms:
        found = walker.walk_transforms(transitions, limit, keep, sources)
    else:
        found = walker.walk(transitions, limit, groups, keep, sources)
    if found is None:
        raise ArcLimitExceeded(LATTICE, max_arcs, written_out=not groups)
    return found


LATTICE = "the token lattice (every spelling of every match)"


def _check_arcs(arcs: int, max_arcs: int | None, written_out: bool = True) -> None:
    if max_arcs is not None and arcs > max_arcs:
        raise ArcLimitExceeded(LATTICE, max_arcs, written_out=written_out)


def promote_agnostic(pattern: DFA, model: BPEModel, trie: SpellingTrie | None = None, minimal: bool = True,
                     max_arcs: int | None = None) -> DFA:
    """The automaton over token ids accepting every tokenization of every match of ``pattern``.

    ``max_arcs`` bounds the arcs of the unminimized result (ArcLimitExceeded).
    """
    trie = trie or SpellingTrie.from_model(model)
    pattern = trim(pattern)
    promoted = DFA(token_rows(pattern, trie, max_arcs), pattern.start, pattern.finals, check=False)
    if minimal:
        return minimize(promoted)
    return promoted if _reads_every_symbol(pattern, trie) else trim(promoted)


def _reads_every_symbol(pattern: DFA, trie: SpellingTrie) -> bool:
    """Whether each symbol on ``pattern``'s arcs is a one-symbol token.

    Then every arc of the (trim) pattern is also an arc of the promoted
    automaton, which only adds arcs between the same states, so the promoted
    automaton is trim already and trimming it again (a pass over all its arcs)
    is skipped.  Byte-level tokenizers have every byte as a token.
    """
    root = trie.steps()[0]
    for symbol in pattern.alphabet():
        step = root.get(symbol)
        if step is None or step[0] == -1:  # (no token ends one symbol down)
            return False
    return True


class _Transforms:
    """The partial maps ``q -> δ*(q, w)`` induced by trie paths ``w``, interned.

    A token's arcs in the promoted automaton are exactly its transform (pairs
    ``(q, δ*(q, spell(t)))``), and in patterns with large classes few transforms
    exist: every token spelled inside ``[a-z0-9._]`` with ``L`` symbols shifts
    the loop of ``[a-z0-9._]{1,12}`` by ``L``.  So the trie is walked once,
    carrying a transform id instead of one pattern state, and each step
    ``(transform, symbol)`` is computed once (memoized); the per-state walks
    of the trie, which redid the same steps for every state, are gone.
    """

    def __init__(self, transitions: list[dict[int, int]], sources: bytes | None = None):
        self.transitions = transitions
        identity = tuple(range(len(transitions))) if sources is None else tuple(q for q, on in enumerate(sources) if on)
        self.sources: list[tuple[int, ...]] = [identity]
        self.targets: list[tuple[int, ...]] = [identity]
        self.tokens: list[list[int]] = [[]]  # transform -> the tokens whose spelling induces it
        self._index: dict[tuple[tuple[int, ...], tuple[int, ...]], int] = {(identity, identity): 0}
        self._next: list[dict[int, int]] = [{}]  # transform -> symbol -> transform (memo)
        self._readable: list[set[int] | None] = [None]
        self._after_rest: list[dict[int, int]] = [{}]  # transform -> rest id -> transform after that rest (memo)
        self._uniform: list[dict[int, int]] = [{}]  # transform -> alphabet id -> uniform_step (memo)

    def readable(self, tid: int) -> set[int]:
        """Symbols some target of transform ``tid`` reads: the only ones worth following."""
        symbols = self._readable[tid]
        if symbols is None:
            transitions = self.transitions
            symbols = self._readable[tid] = set().union(*(transitions[r] for r in set(self.targets[tid])))
        return symbols

    def step(self, tid: int, symbol: int) -> int:
        """The transform after one more ``symbol``, or -1 when no target reads it (memoized)."""
        nxt = self._next[tid]
        child = nxt.get(symbol)
        if child is None:
            child = nxt[symbol] = self._extend(tid, symbol) if symbol in self.readable(tid) else -1
        return child

    def _extend(self, tid: int, symbol: int) -> int:
        transitions = self.transitions
        sources, targets = [], []
        for q, r in zip(self.sources[tid], self.targets[tid]):
            s = transitions[r].get(symbol)
            if s is not None:
                sources.append(q)
                targets.append(s)
        key = (tuple(sources), tuple(targets))
        child = self._index.get(key)
        if child is None:
            child = self._index[key] = len(self.sources)
            self.sources.append(key[0])
            self.targets.append(key[1])
            self.tokens.append([])
            self._next.append({})
            self._readable.append(None)
            self._after_rest.append({})
            self._uniform.append({})
        return child

    def uniform_run(self, tid: int, alphabet: int, symbols: frozenset[int], height: int) -> list[int] | None:
        """The transforms after 1, 2, ... symbols of ``symbols`` when each step moves alike, else None.

        ``run[d - 1]`` is where every spelling of length ``d`` over ``symbols``
        leads from ``tid``; the run stops early where they all die.  None when
        at some length different symbols lead to different transforms.
        """
        run = []
        for _ in range(height):
            memo = self._uniform[tid]
            nxt = memo.get(alphabet)
            if nxt is None:
                nxt = memo[alphabet] = self._uniform_step(tid, symbols)
            if nxt == _MIXED:
                return None
            if nxt < 0:
                break
            run.append(nxt)
            tid = nxt
        return run

    def _uniform_step(self, tid: int, symbols: frozenset[int]) -> int:
        """The transform every symbol of ``symbols`` leads to from ``tid``; -1 if none is readable; else _MIXED."""
        live = self.readable(tid)
        if not symbols <= live:
            return -1 if symbols.isdisjoint(live) else _MIXED
        others = iter(symbols)
        first = self.step(tid, next(others))
        return first if all(self.step(tid, symbol) == first for symbol in others) else _MIXED


_MIXED = -2


def _rows_by_transform(transitions: list[dict[int, int]], trie: SpellingTrie, max_arcs: int | None = None) -> list[dict[int, int]]:
    """``rows[q]`` = ``token -> δ*(q, spell(token))`` for every state, from one walk of the trie."""
    transforms = _walk_transforms(transitions, trie)
    if max_arcs is not None:  # counted before any row is built
        _check_arcs(sum(len(tokens) * len(transforms.sources[tid]) for tid, tokens in enumerate(transforms.tokens)), max_arcs)
    parts: list[list[tuple[list[int], int]]] = [[] for _ in transitions]
    for tid, tokens in enumerate(transforms.tokens):
        if tokens:
            for q, r in zip(transforms.sources[tid], transforms.targets[tid]):
                parts[q].append((tokens, r))
    return [_row(part) for part in parts]


def _row(part: list[tuple[list[int], int]]) -> dict[int, int]:
    """One state's row from its (tokens, target) groups: C-level dict building, no per-arc bytecode.

    The largest group seeds the dict (``dict.fromkeys``); the rest are added
    through ``update(zip(tokens, repeat(target)))``, which measures faster
    than merging a ``fromkeys`` dict per group.
    """
    if not part:
        return {}
    part.sort(key=lambda group: len(group[0]), reverse=True)
    row = dict.fromkeys(*part[0])
    for tokens, target in part[1:]:
        row.update(zip(tokens, repeat(target)))
    return row


def _walk_transforms(transitions: list[dict[int, int]], trie: SpellingTrie, sources: bytes | None = None) -> _Transforms:
    """Walk the trie once (depth first) carrying transforms; file each token under its transform.
    ``sources``: one byte per state, 0 for the states the walk does not start from (None: all).

    The loop is the hot spot on large patterns (one iteration per live chain
    of the trie), so the memo ``next_of[tid]`` is read inline; it also
    records dead steps as -1, and a node with more chains than its transform
    has readable symbols is entered from the smaller side.  A large subtree
    whose symbols all move the transform alike is not walked: its tokens are
    filed by length (:mod:`.subtrees`).
    """
    transforms = _Transforms(transitions, sources)
    chains, chain_lists, ends, tokens_of = trie.chains(), trie.chain_lists(), trie.tokens, transforms.tokens
    next_of, readable, extend = transforms._next, transforms.readable, transforms.step
    after_rest = transforms._after_rest
    subtrees = trie.subtrees_if_reused()
    if subtrees is None:
        alphabet_id, alphabets, height = [NOT_INDEXED] * len(chains), [], []
    else:
        alphabet_id, alphabets, height = subtrees.alphabet_id, subtrees.alphabets, subtrees.height
    uniform_run = transforms.uniform_run
    stack = [(0, 0)] if transforms.sources[0] else []
    pop, push = stack.pop, stack.append
    while stack:
        node, tid = pop()
        alphabet = alphabet_id[node]
        if alphabet != NOT_INDEXED and (run := uniform_run(tid, alphabet, alphabets[alphabet], height[node])) is not None:
            for distance, after in enumerate(run, 1):
                tokens_of[after].extend(subtrees.tokens_below(node, distance))
            continue
        kids = chain_lists[node]
        get = next_of[tid].get
        if len(kids) > 32 and len(kids) > len(live := readable(tid)):
            by_symbol = chains[node]
            kids = [(symbol, *arc) for symbol in live if (arc := by_symbol.get(symbol)) is not None]
        for symbol, rest, token, child, rest_id in kids:
            ctid = get(symbol)
            if ctid is None:
                ctid = extend(tid, symbol)
            if ctid < 0:
                continue
            if rest_id:
                memo = after_rest[ctid]
                after = memo.get(rest_id)
                if after is None:
                    after = ctid
                    for symbol in rest:
                        nxt = next_of[after].get(symbol)
                        after = extend(after, symbol) if nxt is None else nxt
                        if after < 0:
                            break
                    memo[rest_id] = after
                if after < 0:
                    continue
                ctid = after
            if token >= 0:
                tokens_of[ctid].append(token)
            elif token < -1:
                tokens_of[ctid].extend(ends[-2 - token])
            if child:
                push((child, ctid))
    return transforms


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
            found = [(step, target) for symbol, step in kids.items() if (target := get(symbol)) is not None]
        else:
            get = kids.get
            found = [(step, target) for symbol, target in row.items() if (step := get(symbol)) is not None]
        for (token, child), target in found:
            if token >= 0:
                arcs[token] = target
            elif token < -1:
                arcs.update(dict.fromkeys(ends[-2 - token], target))
            if child:
                push((child, target))
    return arcs


def walk_groups(pattern: DFA, trie: SpellingTrie, max_arcs: int | None = None,
                keep=None, sources: bytes | None = None, weights: list[int] | None = None,
                packed=None) -> list[tuple[array, dict[int, int]]]:
    """The lattice of ``pattern`` as groups ``(tokens, {q: r})``: every token of a group takes every arc ``q -> r``;
    ``tokens`` ascending, an ``array('I')`` (:func:`token_array`).

    For patterns walked by transforms a group is a transform (one pass of the
    trie, no row written); otherwise the tokens of one row with one target.
    A large pattern's states whose walks may find many tokens (at least
    :data:`_TRANSFORM_WALK_WEIGHT` tokens begin with a symbol their row reads:
    a JSON string's states between two characters, which read most of the
    vocabulary, or after a space, which begins half of it) are walked together
    carrying transforms, their groups first, and the rest (mid-character
    states, reading a few continuation bytes; digits, punctuation) one by one,
    in two walks (:func:`_light_split`) where no walk can be refused; on the
    compiled core the walks run on two threads (:func:`_walk_both_natively`).
    ``keep``: a flag per token (A_BPE's ``reachable``); the
    tokens without it are left out of their groups and groups left empty are
    dropped (``max_arcs`` counts the arcs before that).  ``sources``: one byte per state, 0 for the states not
    walked from (None: all).  ``weights``: the rows' weights (:func:`_row_weights`) where the caller has them.
    ``packed``: the caller's :func:`.regions.state_walker` over ``pattern``, whose packed rows the compiled
    walks read instead of packing them again (a JSON Schema's 2M arcs: 2 ms a packing); where two walks run
    and none is given, one is made for both.
    """
    transitions = pattern.transitions
    walker = trie.native_walker()
    walked = transitions if walker is None or packed is None else packed  # what the compiled walks read
    if len(transitions) <= _TRANSFORM_WALK_STATES:
        if walker is not None:
            return _walk_natively(walker, walked, max_arcs, groups=True, keep=keep, transforms=True,
                                  sources=sources)
        return _groups_by_transforms(transitions, trie, max_arcs, keep, sources)
    if weights is None:
        weights = _row_weights(transitions, trie.leading_counts())
    heavy = bytes(map(_TRANSFORM_WALK_WEIGHT.__le__, weights))  # (a generator expression took 3-4 ms for 50,000)
    light = heavy.translate(_NOT)
    if sources is not None:
        heavy, light = _both(heavy, sources), _both(light, sources)
    if not any(heavy):
        return _walk_one_by_one(walked, trie, walker, max_arcs, keep, sources=light)
    if walker is not None and walked is transitions:  # (two walks or more: the rows packed once for all)
        walked = walker.over(transitions)
    if max_arcs is None or sum(weights) <= max_arcs:  # (no refusal to wait for: below)
        first, rest = _light_split(heavy, light)
        if walker is not None:
            return _walk_both_natively(walker, walked, heavy, first, rest, max_arcs, keep)
        groups = _kept(_groups_by_transforms(transitions, trie, None, sources=heavy), keep)
        groups.sort(key=_first_token)
        return groups + [group for part in (first, rest) if any(part)
                         for group in _groups_by_walks(transitions, trie, None, keep, part)]
    if walker is not None:
        groups = _walk_natively(walker, walked, max_arcs, groups=True, transforms=True, sources=heavy)
    else:
        groups = _groups_by_transforms(transitions, trie, max_arcs, sources=heavy)
    arcs = sum(len(tokens) * len(pairs) for tokens, pairs in groups)  # (before keep, as the limit counts)
    groups = _kept(groups, keep)
    groups.sort(key=_first_token)
    try:
        rest = _walk_one_by_one(walked, trie, walker, None if max_arcs is None else max_arcs - arcs, keep,
                                sources=light)
    except ArcLimitExceeded:
        raise ArcLimitExceeded(LATTICE, max_arcs, written_out=False) from None
    return groups + rest


def _both(flags: bytes, other: bytes) -> bytes:
    """The bytes 1 in both flag strings (each byte 0 or 1)."""
    return (int.from_bytes(flags, "little") & int.from_bytes(other, "little")).to_bytes(len(flags), "little")


# A state walked carrying transforms takes about as long as this many walked one by one (over cl100k, the
# JSONSchemaBench schemas near the median set-up: 15-37 us against 1.4-2.4 us a state).
_HEAVY_STATE_COST = 12


def _light_split(heavy: bytes, light: bytes) -> tuple[bytes, bytes]:
    """``light`` as two flag strings: the first light states, walked after the heavy ones on their thread, and
    the rest, as many as make the two threads' walks about as long (:data:`_HEAVY_STATE_COST`).  A schema's
    mid-character states are most of its states: walked on one thread while the other walked the few heavy
    ones, they took 2-3 times as long (a whole lattice over cl100k: 32 ms against 10)."""
    share = (light.count(1) - _HEAVY_STATE_COST * heavy.count(1)) // 2
    if share <= 0:
        return bytes(len(light)), light
    low, high = 0, len(light)  # the shortest prefix holding `share` light states
    while low < high:
        middle = (low + high) // 2
        if light.count(1, 0, middle) < share:
            low = middle + 1
        else:
            high = middle
    return light[:low] + bytes(len(light) - low), bytes(low) + light[low:]


def _walk_both_natively(walker, transitions, heavy: bytes, first: bytes, rest: bytes, max_arcs: int | None,
                        keep) -> list:
    """walk_groups on the compiled core: the ``heavy`` states carrying transforms, then the ``first`` light ones
    one by one, on a second thread while this one walks the ``rest`` one by one (:func:`_light_split`).  The
    walks run without the GIL and read only what none writes, so on two cores they take the time of the longer
    thread (a median JSON Schema's over GPT-2: the walks 60 -> 44 ms, its set-up 171 -> 161 ms); the groups
    are the pure route's.  For a lattice the row weights bound below ``max_arcs`` (walk_groups): one that may
    be refused is walked one walk after the other, since the walk left over by a refusal could not be stopped
    here, and the arcs the first walk found shorten the second."""
    walked = {}

    def walk_heavy() -> None:
        try:
            walked["heavy"] = _walk_natively(walker, transitions, max_arcs, groups=True, keep=keep, transforms=True,
                                             sources=heavy)
            if any(first):
                walked["heavy"] += _walk_natively(walker, transitions, max_arcs, groups=True, keep=keep, sources=first)
        except BaseException as error:  # (raised again on the caller's thread)
            walked["error"] = error

    thread = threading.Thread(target=walk_heavy, name="bpefst-heavy-walk", daemon=True)
    try:
        thread.start()
    except RuntimeError:  # (no thread to be had, as under a container's limit: one walk, then the other)
        walk_heavy()
        thread = None
    try:
        after = _walk_natively(walker, transitions, max_arcs, groups=True, keep=keep, sources=rest)
    finally:
        if thread is not None:
            thread.join()
    if "error" in walked:
        raise walked["error"]
    return walked["heavy"] + after  # (the heavy walk's kept and ordered by first token, as _groups_by_transforms)


def _row_weights(transitions, leading: array) -> list[int]:
    """Per state, how many tokens begin with a symbol its row reads (``leading``: :meth:`SpellingTrie.leading_counts`),
    a bound on the arcs of the walk from it; a compiled chunked pattern's rows (``bpefst._core.PackedRows``)
    sum them without making their dicts."""
    weights = getattr(transitions, "weights", None)
    if weights is not None:
        return weights(leading)
    size = len(leading)
    return [sum(leading[symbol] for symbol in row if 0 <= symbol < size) for row in transitions]


# States whose walks may find this many tokens are walked carrying transforms in a large pattern (walk_groups).
# By row size (at least 96 symbols, a string's states between characters) the states after a space (five
# symbols, the space beginning 33,000 of GPT-2's tokens) and inside a word (77 symbols, 35,000 tokens) were
# walked one by one: 94 such states of a median schema (GPT-2) filed 2.4M of its 5.5M arcs from states walked
# one by one.  By this bound the walk of four schemas from the median to the p75 takes 0.06-0.24 s -> 0.03-0.14 s;
# a mid-character state's continuation bytes begin a few dozen tokens.
_TRANSFORM_WALK_WEIGHT = 1000
_NOT = bytes([1] + [0] * 255)  # bytes.translate table: 0 -> 1, anything else -> 0


def _walk_one_by_one(transitions, trie: SpellingTrie, walker, max_arcs: int | None, keep, sources: bytes | None = None):
    """The groups of the walks from each state (of ``sources``), on the compiled core where it runs."""
    if walker is not None:
        return _walk_natively(walker, transitions, max_arcs, groups=True, keep=keep, sources=sources)
    return _groups_by_walks(transitions, trie, max_arcs, keep, sources)


def _groups_by_transforms(transitions: list[dict[int, int]], trie: SpellingTrie, max_arcs: int | None = None,
                          keep=None, sources: bytes | None = None) -> list[tuple[array, dict[int, int]]]:
    """The groups of one walk carrying transforms (:func:`_walk_transforms`): a group per transform, its
    tokens ascending, groups by their first token (an order that does not depend on how the walk went, so
    the compiled ``TrieWalker.walk_transforms`` gives the same list)."""
    transforms = _walk_transforms(transitions, trie, sources)
    arcs = sum(len(tokens) * len(transforms.sources[tid]) for tid, tokens in enumerate(transforms.tokens))
    _check_arcs(arcs, max_arcs, written_out=False)
    groups = _kept([(token_array(sorted(tokens)), dict(zip(transforms.sources[tid], transforms.targets[tid])))
                    for tid, tokens in enumerate(transforms.tokens) if tokens], keep)
    groups.sort(key=_first_token)
    return groups


def _first_token(group: tuple[array, dict[int, int]]) -> int:
    return group[0][0]


def _kept(groups: list[tuple[array, dict[int, int]]], keep) -> list[tuple[array, dict[int, int]]]:
    """``groups`` without the tokens ``keep`` leaves out, and without the groups left empty."""
    if keep is None:
        return groups
    return [(token_array(kept), pairs) for tokens, pairs in groups if (kept := [t for t in tokens if keep[t]])]


def token_array(tokens) -> array:
    """A group's tokens as every walk hands them over: an ``array('I')``, ascending.  The compiled walk makes
    one with a copy and the compiled liveness solve reads it with another; as lists of ints, making, reading
    and freeing them took 10-14 % of a JSON Schema's first mask (GPT-2 and cl100k)."""
    return array("I", tokens)


def arcs_by_target(walked: dict[int, int], keep=None) -> list[tuple[int, list[int]]]:
    """One state's walk (``token -> target``, in the walk's order) as ``(target, tokens)`` by target in order of
    first appearance (every token counts for the order, kept or not), the tokens ``keep`` leaves out dropped and
    targets left without tokens dropped: how ``TrieWalker`` files a state (``walker_group_by_target``)."""
    by_target: dict[int, list[int]] = {}
    for t, r in walked.items():
        by_target.setdefault(r, []).append(t)
    if keep is None:
        return list(by_target.items())
    return [(r, kept) for r, tokens in by_target.items() if (kept := [t for t in tokens if keep[t]])]


def _groups_by_walks(transitions: list[dict[int, int]], trie: SpellingTrie, max_arcs: int | None = None,
                     keep=None, sources: bytes | None = None) -> list[tuple[array, dict[int, int]]]:
    """Each state's row walked (:func:`_walk`) and grouped by target, targets in order of first appearance,
    the tokens ``keep`` leaves out dropped and groups left empty dropped; a group whose token list an
    earlier state filed already is that group, with one more ``q: r`` pair (the groups of
    ``TrieWalker.walk``).  A JSON Schema's string states (one per string of the schema) read the same
    tokens back into themselves: one list per distinct list, not one per state (cl100k, a schema of 300
    strings: 21.5M tokens held become 0.9M).  A state whose row reads the same symbols to the same targets
    as an earlier state's (in the same order, and with as many arcs in all) is not walked again: it takes
    that state's groups.  ``sources``: one byte per state, 0 for the states not walked from (None: all)."""
    steps, symbols = trie.steps(), trie.symbols()
    groups: list[tuple[array, dict[int, int]]] = []
    group_of: dict[tuple[int, ...], int] = {}  # a token list -> its group
    first_of: dict[tuple, tuple[list[tuple[int, int]], int]] = {}  # row -> (its (group, r) filed, its arcs)
    arcs = 0
    for q, row in enumerate(transitions):
        if sources is not None and not sources[q]:
            continue
        key = (len(row), tuple((s, r) for s, r in row.items() if s in symbols))
        earlier = first_of.get(key)
        if earlier is not None:
            filed, count = earlier
        else:
            walked = _walk(transitions, steps, q, trie.tokens)
            filed, count = [], len(walked)
            for r, kept in arcs_by_target(walked, keep):
                g = group_of.setdefault(tuple(kept), len(groups))
                if g == len(groups):
                    groups.append((token_array(kept), {}))
                filed.append((g, r))
            first_of[key] = (filed, count)
        for g, r in filed:
            groups[g][1][q] = r
        arcs += count
        _check_arcs(arcs, max_arcs, written_out=False)
    return groups
