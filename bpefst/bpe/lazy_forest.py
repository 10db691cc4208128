"""The merge forest as an encoder needs it: built in one pass, reachability decided per token on first use.

:class:`~.merge_forest.MergeForest` decides every token's reachability up
front (one pair walk per merge: a third of a second for cl100k), which the
compilers need.  An encoder touches only the tokens its text uses, so this
form keeps the same facts (``rank``, ``left``, ``right`` per token; the pair
table) and asks the questions lazily:

* :meth:`reachable` — BPE of the token's own bytes gives the token, i.e. its
  merge finds its two halves side by side (the walk of :mod:`.compatibility`
  with the time limit set to the merge's rank);
* :meth:`canonical_pair` — ``BPE(spell(u) + spell(v)) == [u, v]`` (Berglund &
  van der Merwe 2023; seed 000 Sec. 6.5), cached;
* :meth:`compatible_before` — no merge across ``u | v`` fires before a given
  time.

It needs every token to come from one merge (the caller checks; the
``Tokenizer``'s ``_unique_producers``), and looks pairs up in the packed merge
table of :mod:`..tokenizer.packed_bpe`.
"""

from __future__ import annotations

from operator import gt, itemgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..tokenizer import BPEModel

BASE_RANK = -1
NO_LIMIT = 1 << 62
PAIR_CACHE = 1 << 20  # canonical-pair verdicts kept before the cache is cleared

UNKNOWN, REACHABLE, UNREACHABLE = 0, 1, 2
_LEFT, _RIGHT = itemgetter(0), itemgetter(1)


class LazyForest:
    """Per-token merge trees of a model whose tokens each come from one merge."""

    @classmethod
    def of(cls, model: "BPEModel") -> "LazyForest | None":
        """The forest, or None when its facts do not hold for the model.

        They need every token to come from one merge and no merge to use a
        token that a later merge builds (a *rank inversion*, see
        :mod:`.merge_forest`); published tokenizers have neither.
        """
        results = model.merge_results
        if len(set(results)) != len(results):
            return None
        forest = cls(model)
        rank, merges = forest.rank, model.merges
        positions = range(len(merges))
        for side in (_LEFT, _RIGHT):
            if any(map(gt, map(rank.__getitem__, map(side, merges)), positions)):
                return None
        return forest

    def __init__(self, model: "BPEModel"):
        packed, shift = model.packed_merges
        self.pair = packed.get  # (left << shift | right) -> rank << 32 | result
        self.shift = shift
        self.size = size = max(model.vocab) + 1
        self.rank = rank = [BASE_RANK] * size
        self.left = left = [0] * size
        self.right = right = [0] * size
        merges, results = model.merges, model.merge_results
        for m, t in enumerate(results):
            rank[t] = m
        for (a, b), t in zip(merges, results):
            left[t], right[t] = a, b
        self.state = state = bytearray(size)  # UNKNOWN, REACHABLE or UNREACHABLE per id
        known = model.known_reachable
        if known is not None:  # the reader knows (rank files): every other id is unreachable
            state[:] = bytes([UNREACHABLE]) * size
            for t in known:
                state[t] = REACHABLE
        for t in model.base_ids:
            state[t] = REACHABLE
        self.verdicts = ComputedTable(self._verdict, PAIR_CACHE)  # u << shift | v -> canonical pair?

    def compatible_before(self, u: int, v: int, limit: int = NO_LIMIT, strict: bool = True) -> bool:
        """True iff no merge across the ``u | v`` boundary fires before time ``limit`` (see :mod:`.compatibility`)."""
        pair, shift, rank, left, right = self.pair, self.shift, self.rank, self.left, self.right
        x, y = u, v
        while True:
            found = pair((x << shift) | y)
            if found is not None:
                m = found >> 32
                if m < limit or (m == limit and not strict):
                    return False
            rx, ry = rank[x], rank[y]
            if rx < 0 and ry < 0:
                return True
            if rx > ry:
                limit, strict, x = rx, True, right[x]
            else:
                limit, strict, y = ry, False, left[y]

    def reachable(self, token: int) -> bool:
        """Whether BPE of the token's own bytes gives the token.

        Decided children first, with an explicit stack: the merge trees of a
        hostile model can be deeper than Python's recursion limit.
        """
        state = self.state
        if state[token]:
            return state[token] == REACHABLE
        rank, left, right = self.rank, self.left, self.right
        stack = [token]
        while stack:
            t = stack[-1]
            if state[t]:
                stack.pop()
                continue
            m = rank[t]
            if m == BASE_RANK:  # an id no merge makes and no base symbol
                state[t] = UNREACHABLE
                stack.pop()
                continue
            a, b = left[t], right[t]
            pending = [c for c in (a, b) if not state[c]]
            if pending:
                stack.extend(pending)
                continue
            ok = state[a] == REACHABLE and state[b] == REACHABLE and self.compatible_before(a, b, m)
            state[t] = REACHABLE if ok else UNREACHABLE
            stack.pop()
        return state[token] == REACHABLE

    def canonical_pair(self, u: int, v: int) -> bool:
        """``(u, v)`` may stand side by side in a canonical sequence (both tokens assumed reachable); cached."""
        return self.verdicts[(u << self.shift) | v]

    def _verdict(self, key: int) -> bool:
        return self.compatible_before(key >> self.shift, key & ((1 << self.shift) - 1))


class ComputedTable(dict):
    """A dictionary that computes a missing entry with ``compute(key)`` and keeps it (hits stay in C).

    Holds at most ``limit`` entries: when full, it starts over (hostile input
    could otherwise fill it with one entry per distinct key).
    """

    __slots__ = ("_compute", "_limit")

    def __init__(self, compute, limit: int):
        super().__init__()
        self._compute = compute
        self._limit = limit

    def __missing__(self, key):
        if len(self) >= self._limit:
            self.clear()
        value = self[key] = self._compute(key)
        return value
