"""Liveness on demand: ``good[q]`` for the states a decoder reaches, one region at a time.

:mod:`.on_demand` solves the fixpoint ``good[q]`` (its module docstring)
for every state of the chunked pattern: a trie walk of every state and the
solve over all of it.  The first mask needs ``good`` of the start alone,
which depends on a few states; this module solves just those.  How the
product uses it (:class:`.on_demand.OnDemandCanonical`): a lattice small
enough to be solved whole in a few milliseconds gets its first mask from
the start's region and is solved whole when the decoder reaches a second
region; larger lattices are solved whole up front (solved region by region
to the end, a JSON Schema's decoding meets a region every few tokens, and
the masks cost a millisecond each instead of microseconds).

**Open targets are known up front.**  A target ``r`` is *open* (every arc
into it is good) when ``r`` is final or the chunker may cut after it and the
state after the cut, ``r'``, is final or has a good token.  The chunked
pattern is trim, so some text leads from ``r'`` to a final state; the
tokenizer cuts that text into chunks and encodes each with BPE, and those
tokens are a path of the lattice from ``r'`` (each spelling inside one
chunk), every token one A_BPE produces and every adjacent pair inside a
chunk canonical (A_BPE is 1-local, seed 000 Sec. 6.5).  So ``good[r']`` is
never empty when ``r'`` is not final, and

    open(r)  iff  r final, or the chunker may cut after r.

**Regions.**  Whether a token ``t`` of ``q``'s row is good depends on
nothing when its target is open, and otherwise on ``good`` of its target,
which depends on that target's arcs in turn.  The *region* of ``q`` is
``q`` with every state reached from it through targets that are not open:
mid-character states, and states inside a chunk the pattern cannot end
(a key's letters).  ``good`` of every state of a region is the fixpoint of
the region alone, with its open targets as final states; the same solve
(:func:`.on_demand.solve_liveness`) gives it.  A JSON Schema's start has a
region of 2-11 states; a string's state between two characters has itself
and the mid-character states its tokens end in (about 70 states over GPT-2).

The walk of one state runs on the compiled core (``TrieWalker.over``: the
chunked pattern's rows packed once, for every walk after) or in Python
(:func:`.agnostic._walk`), the same arcs in the same order.
"""

from __future__ import annotations

from itertools import repeat
from operator import is_not

from .. import native
from ..automata import DFA
from ..bpe import CanonicalAutomaton
from .agnostic import SpellingTrie, _walk, arcs_by_target, token_array


def open_states(finals, cut: list[int | None]) -> bytearray:
    """Per state of the chunked pattern, 1 when it is open (module docstring): final, or cut after."""
    is_open = bytearray(map(is_not, cut, repeat(None)))  # (a loop over a schema's 50,000 states took 3.7 ms)
    for q in finals:
        is_open[q] = 1
    return is_open


def state_walk(chunked: DFA, trie: SpellingTrie, keep, engine: str | None = None):
    """``walk(q) -> [(r, tokens), ...]``: one state's arcs grouped by target in order of first appearance, the
    tokens ``keep`` leaves out dropped (:func:`state_walker`'s)."""
    return state_walker(chunked, trie, keep, engine).walk


def state_walker(chunked: DFA, trie: SpellingTrie, keep, engine: str | None = None):
    """The walks from one state at a time over ``chunked``'s rows: ``TrieWalker.over``'s ``StateWalk`` (the rows
    packed once, which :func:`.agnostic.walk_groups` reads too: its ``packed``), or :class:`_PureStateWalk`."""
    walker = trie.native_walker() if native.choose(engine) == "compiled" else None
    if walker is not None:
        return walker.over(chunked.transitions, bytes(keep))
    return _PureStateWalk(chunked.transitions, trie, keep)


class RegionLiveness:
    """``good[q]`` (an int bitset over token ids), solved region by region when first read.

    Reads as the ``good`` of :func:`.on_demand.solve_liveness`: ``len``,
    ``good[q]`` and :meth:`bytes_of`.
    """

    def __init__(self, chunked: DFA, trie: SpellingTrie, automaton: CanonicalAutomaton, cut: list[int | None],
                 engine: str | None = None, then_whole=None):
        self.automaton, self.engine = automaton, engine
        self._then_whole, self._whole = then_whole, None  # see __getitem__
        self.n = len(cut)
        self.is_open = open_states(chunked.finals, cut)
        self._walk_from = state_walk(chunked, trie, automaton.reachable_flags, engine)
        self._good: dict[int, int] = {}
        self._arcs: dict[int, list[tuple[int, object]]] = {}  # q -> its arcs by target, as walked
        self.regions = 0  # regions solved (tests, benchmarks)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, q: int) -> int:
        """``good[q]``: from the regions solved so far, or by solving ``q``'s.  Given ``then_whole`` (a
        function returning every state's ``good``, for lattices small enough to solve whole in a few
        milliseconds), the first region answers the first mask and the second asks for the whole instead:
        one solve for the rest of the decoding, cheaper than a region per new state.  ``then_whole`` is a
        ``weakref.WeakMethod``: the product owns this object, and no cycle keeps either alive."""
        found = self._good.get(q)
        if found is None:
            if self._whole is None and self._then_whole is not None and self.regions:
                solve = self._then_whole()  # (a weak method: the product that owns this, if it is still there)
                self._whole, self._then_whole = (solve() if solve is not None else None), None
            if self._whole is not None:
                return self._whole[q]
            self._solve(q)
            found = self._good[q]
        return found

    def __iter__(self):
        return map(self.__getitem__, range(self.n))

    def bytes_of(self, q: int, length: int) -> bytes | None:
        """``good[q].to_bytes(length, "little")``, None when the set has a token past ``length`` bytes."""
        good = self[q]
        return None if good.bit_length() > 8 * length else good.to_bytes(length, "little")

    def _arcs_of(self, q: int) -> list[tuple[int, object]]:
        arcs = self._arcs.get(q)
        if arcs is None:
            arcs = self._arcs[q] = self._walk_from(q)
        return arcs

    def _solve(self, root: int) -> None:
        """``good`` of every state of ``root``'s region (module docstring), kept."""
        from .on_demand import solve_liveness  # (on_demand reads this module)

        number = {root: 0}  # lattice state -> its number in the region's solve
        states, walked, groups = [root], [root], []
        while walked:
            q = walked.pop()
            source = number[q]
            for r, tokens in self._arcs_of(q):
                k = number.get(r)
                if k is None:
                    k = number[r] = len(states)
                    states.append(r)
                    if not self.is_open[r]:
                        walked.append(r)
                groups.append((tokens, {source: k}))
        is_open = self.is_open
        finals = [k for k, r in enumerate(states) if is_open[r]]
        good, _ = solve_liveness(groups, len(states), finals, [None] * len(states), self.automaton, self.engine)
        for k, r in enumerate(states):
            if k == 0 or not is_open[r]:  # (an open state of the region is not walked: only arcs into it count)
                self._good[r] = good[k]
        self.regions += 1


class _PureStateWalk:
    """:meth:`bpefst._core.StateWalk.walk` in Python: one state's arcs grouped by target in order of first
    appearance, the kept tokens of each in the walk's order, groups left empty dropped."""

    def __init__(self, transitions, trie: SpellingTrie, keep):
        self.transitions, self.steps, self.ends, self.keep = transitions, trie.steps(), trie.tokens, keep

    def walk(self, q: int) -> list[tuple[int, object]]:
        walked = _walk(self.transitions, self.steps, q, self.ends)
        return [(r, token_array(tokens)) for r, tokens in arcs_by_target(walked, self.keep)]
