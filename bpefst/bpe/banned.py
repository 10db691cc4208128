"""Every banned pair at once, from the merge structure (no pair-by-pair scan).

``BANNED(u)`` (seed 000 Sec. 6.5) is the set of tokens that may not follow
``u``.  Checking all ``|V|^2`` pairs one by one is hours of work for a 32k
vocabulary; instead, read the pair walk of :mod:`.compatibility` as a set
equation and evaluate it with bitsets.

A merge ``m = (x, y)`` fires across the boundary of ``u | v`` iff at time ``m``

* ``x`` is the boundary symbol of ``u``: ``x`` is on ``u``'s right spine and
  ``rank(x) < m < rank(parent)`` (no parent above ``u`` itself), and
* ``y`` is the boundary symbol of ``v``: ``y`` is on ``v``'s left spine and
  ``m <= rank(parent)``.

(The first such merge is what BPE does; any one of them makes the pair
non-canonical.)  So with ``V_m`` = the set of ``v`` satisfying the second
condition for ``m``,

    BANNED(u) = OR { V_m : m = (u, *), m > rank(u) }  |  G(u)
    G(w)      = OR { V_m : m = (right(w), *), rank(right(w)) < m < rank(w) }  |  G(right(w))

with ``G`` of a base symbol empty.  ``V_m`` for all merges with the same right
side ``y`` are nested (a threshold on ``m``), so one sweep per ``y`` builds them;
``G`` needs one sweep per right child.  Everything is a Python int used as a
bitset over token ids, so the cost is about (number of merges) x (vocabulary
size / 64) machine words.  For vocabularies too large to hold all bitsets at
once, :func:`banned_masks` restricts them to a window of ``v`` ids.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from typing import Iterator

from .merge_forest import NO_TOKEN, MergeForest


def follower_sets(forest: MergeForest, lo: int, hi: int) -> dict[int, int]:
    """``m -> V_m`` restricted to ``lo <= v < hi`` (bit ``v - lo``); empty sets omitted."""
    by_right: dict[int, list[tuple[int, int]]] = defaultdict(list)  # y -> [(bound, v)]
    infinity = len(forest.pair_rank) + 1
    for v in range(lo, min(hi, forest.size)):
        if not forest.reachable[v]:
            continue
        y, bound = v, infinity
        while True:
            by_right[y].append((bound, v - lo))
            child = forest.left[y]
            if child == NO_TOKEN:
                break
            y, bound = child, forest.rank[y]
    merges_by_right: dict[int, list[int]] = defaultdict(list)
    for (_, y), m in forest.pair_rank.items():
        if y in by_right:
            merges_by_right[y].append(m)
    width = (hi - lo + 7) // 8
    sets: dict[int, int] = {}
    for y, ranks in merges_by_right.items():
        entries = sorted(by_right[y], reverse=True)
        bits = bytearray(width)
        k, current, dirty = 0, 0, False
        for m in sorted(ranks, reverse=True):
            while k < len(entries) and entries[k][0] >= m:
                offset = entries[k][1]
                bits[offset >> 3] |= 1 << (offset & 7)
                k += 1
                dirty = True
            if dirty:
                current, dirty = int.from_bytes(bits, "little"), False
            if current:
                sets[m] = current
    return sets


def banned_masks(forest: MergeForest, lo: int = 0, hi: int | None = None) -> Iterator[tuple[int, int]]:
    """Yield ``(u, BANNED(u) restricted to [lo, hi))`` for every reachable token ``u``.

    Bit ``v - lo`` of the mask is set iff ``v`` may not follow ``u``.  Tokens are
    yielded in order of their merge rank (base symbols first).
    """
    hi = forest.size if hi is None else hi
    follow = follower_sets(forest, lo, hi)
    direct: dict[int, list[int]] = defaultdict(list)  # x -> ranks of merges (x, *)
    for (x, _), m in forest.pair_rank.items():
        if m in follow:
            direct[x].append(m)
    for ranks in direct.values():
        ranks.sort()

    order = sorted(forest.reachable_ids, key=lambda t: forest.rank[t])
    # G(w) for every non-base token, children before parents; one sweep per right child.
    g: dict[int, int] = {}
    queries: dict[int, list[int]] = defaultdict(list)  # right child x -> tokens w with right(w) == x
    for w in order:
        if forest.right[w] != NO_TOKEN:
            queries[forest.right[w]].append(w)
    prefix_cache: dict[int, tuple[list[int], list[int]]] = {}

    def below(x: int, limit: int) -> int:
        """OR of V_m over merges m = (x, *) with rank(x) < m < limit."""
        ranks = direct.get(x)
        if not ranks:
            return 0
        if x not in prefix_cache:
            prefix, acc = [0], 0
            for m in ranks:
                acc |= follow[m]
                prefix.append(acc)
            prefix_cache[x] = (ranks, prefix)
        ranks, prefix = prefix_cache[x]
        return prefix[bisect_left(ranks, limit)]

    for w in order:
        x = forest.right[w]
        if x == NO_TOKEN:
            continue
        g[w] = below(x, forest.rank[w]) | g.get(x, 0)
        if len(queries.get(x, ())) and w == queries[x][-1]:
            prefix_cache.pop(x, None)  # every parent of x is done: free its prefix table
    for u in order:
        yield u, below(u, 1 << 62) | g.get(u, 0)


class SingleBanned:
    """``BANNED(u)`` for one token at a time, from a per-forest index: for the implicit encoding.

    The set equation above, read for a single ``u``: walk ``u``'s right spine;
    at spine node ``x`` (current at the boundary while ``rank(x) < m <
    limit``, ``limit`` the rank of its parent on the spine, none for ``u``)
    every merge ``m = (x, y)`` in that window bans ``V_m``, the followers whose
    left spine holds ``y`` under a parent built at ``m`` or later.  The index
    lists, per ``y``, those followers by that parent's rank, latest first, so
    ``V_m`` is a prefix; it holds one entry per node of every left spine
    (a few per token).  The cost of a set is the sizes of the ``V_m`` it
    joins: a few hundred entries for most tokens.
    """

    def __init__(self, forest: MergeForest):
        self.forest = forest
        infinity = 1 << 62
        by_right: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for v in forest.reachable_ids:
            y, bound = v, infinity
            while True:
                by_right[y].append((bound, v))
                child = forest.left[y]
                if child == NO_TOKEN:
                    break
                y, bound = child, forest.rank[y]
        self.bounds: dict[int, list[int]] = {}  # y -> -bound, ascending (for bisect)
        self.followers: dict[int, list[int]] = {}  # y -> v in the same order
        for y, entries in by_right.items():
            entries.sort(reverse=True)
            self.bounds[y] = [-bound for bound, _ in entries]
            self.followers[y] = [v for _, v in entries]
        self.merges: dict[int, list[tuple[int, int]]] = defaultdict(list)  # x -> [(m, y)] ascending
        for (x, y), m in forest.pair_rank.items():
            self.merges[x].append((m, y))
        for merges in self.merges.values():
            merges.sort()

    def tokens(self, u: int) -> set[int]:
        """``BANNED(u)``: the tokens that may not follow ``u``."""
        forest = self.forest
        banned: set[int] = set()
        x, limit = u, 1 << 62
        while x != NO_TOKEN:
            merges = self.merges.get(x, ())
            stop = bisect_left(merges, (limit, -1))
            for m, y in merges[:stop]:
                bounds = self.bounds.get(y)
                if bounds:  # the followers with bound >= m: a prefix
                    banned.update(self.followers[y][: bisect_right(bounds, -m)])
            if forest.right[x] == NO_TOKEN:
                break
            x, limit = forest.right[x], forest.rank[x]
        return banned

