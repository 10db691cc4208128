"""Banned sets restricted to the tokens one lattice reads (for promotion with an implicit A_BPE).

The implicit encoding of A_BPE (cl100k, o200k) stores no banned sets, and
deciding ``BANNED(u) ∩ out(r)`` pair by pair costs one spine walk per pair:
hundreds of thousands of walks for a modest lattice.  A lattice only ever
reads the tokens on its arcs, so the set equation of :mod:`bpefst.bpe.banned`
is evaluated here over those tokens alone, with bit ``i`` standing for the
``i``-th of them:

    BANNED(u) = OR { V_m : m = (u, *) }  |  G(u)
    G(w)      = OR { V_m : m = (right(w), *), m < rank(w) }  |  G(right(w))

where ``V_m`` holds the followers ``v`` whose left spine has the merge's right
side ``y`` as a node whose parent is built at ``m`` or later.  Only merges
whose ``V_m`` meets the followers are looked at, and ``G`` is evaluated only
along the right spines of the leaders.  The result equals
``{v : not automaton.allowed(u, v)}`` on the followers (a tested identity).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from typing import Iterable, Sequence
from weakref import ref

from ..bpe.merge_forest import NO_TOKEN, MergeForest

_INFINITY = 1 << 62
_BY_RIGHT: dict[int, tuple[ref, dict[int, list[tuple[int, int]]]]] = {}  # id(forest) -> (weak ref, table)
_CACHED_FORESTS = 4


def merges_by_right(forest: MergeForest) -> dict[int, list[tuple[int, int]]]:
    """``y -> [(rank, x), ...]`` over the merges ``(x, y)``, latest first; built once per forest."""
    cached = _BY_RIGHT.get(id(forest))
    if cached is not None and cached[0]() is forest:
        return cached[1]
    grouped: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (x, y), m in forest.pair_rank.items():
        grouped[y].append((m, x))
    for merges in grouped.values():
        merges.sort(reverse=True)
    if len(_BY_RIGHT) >= _CACHED_FORESTS:  # MergeForest is unhashable: keep a few, by identity
        _BY_RIGHT.clear()
    _BY_RIGHT[id(forest)] = (ref(forest), dict(grouped))
    return _BY_RIGHT[id(forest)][1]


def restricted_banned(forest: MergeForest, leaders: Iterable[int], followers: Sequence[int]) -> dict[int, int]:
    """``u -> BANNED(u) ∩ followers`` for each leader, bit ``i`` meaning ``followers[i]``."""
    direct = _merge_followers(forest, followers)
    rank, right = forest.rank, forest.right
    prefixes: dict[int, tuple[list[int], list[int]]] = {}

    def below(x: int, limit: int) -> int:
        """OR of ``V_m`` over the merges ``m = (x, *)`` with ``m < limit``."""
        table = prefixes.get(x)
        if table is None:
            merges = sorted(direct.get(x, ()))
            ranks, ors, acc = [], [0], 0
            for m, followers_m in merges:
                ranks.append(m)
                acc |= followers_m
                ors.append(acc)
            table = prefixes[x] = (ranks, ors)
        ranks, ors = table
        return ors[bisect_left(ranks, limit)]

    g_memo: dict[int, int] = {}

    def g(w: int) -> int:
        """``G(w)``, iteratively down the right spine (memoized)."""
        spine = []
        while w not in g_memo and right[w] != NO_TOKEN:
            spine.append(w)
            w = right[w]
        acc = g_memo.get(w, 0)
        for node in reversed(spine):
            x = right[node]
            acc = g_memo[node] = below(x, rank[node]) | acc
        return acc

    return {u: below(u, _INFINITY) | g(u) for u in leaders}


def _merge_followers(forest: MergeForest, followers: Sequence[int]) -> dict[int, list[tuple[int, int]]]:
    """``x -> [(m, V_m), ...]`` for the merges ``m = (x, y)`` whose ``V_m`` (over followers) is not empty."""
    rank, left = forest.rank, forest.left
    by_right: dict[int, list[tuple[int, int]]] = defaultdict(list)  # y -> [(bound, bit)]
    for i, v in enumerate(followers):
        y, bound = v, _INFINITY
        while True:
            by_right[y].append((bound, 1 << i))
            child = left[y]
            if child == NO_TOKEN:
                break
            y, bound = child, rank[y]
    all_merges = merges_by_right(forest)
    direct: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for y, entries in by_right.items():
        merges = all_merges.get(y)
        if not merges:
            continue
        entries.sort(reverse=True)
        k, acc = 0, 0
        for m, x in merges:  # latest first: V_m only grows as m falls
            while k < len(entries) and entries[k][0] >= m:
                acc |= entries[k][1]
                k += 1
            if acc:
                direct[x].append((m, acc))
    return direct
