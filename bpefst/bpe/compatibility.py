"""Whether two tokens may stand next to each other in a canonical sequence.

The canonical token automaton is 1-local: a sequence is what BPE produces
exactly when every token is reachable and every adjacent pair ``(u, v)`` is, i.e.
``BPE(spell(u) + spell(v)) == [u, v]`` (Berglund & van der Merwe 2023,
Corollary 2, restated in seed 000 Sec. 6.5; seed 001 Sec. 5).  Deciding that
for a pair needs no re-encoding.

Run BPE on ``spell(u) + spell(v)``.  As long as no merge joins symbols from both
sides, each side evolves exactly as it does alone, so at time (rank) ``m`` the
symbol at the boundary on the left is the node of ``u``'s right spine that is
built before ``m`` and whose parent is not, and likewise on the right with
``v``'s left spine.  The pair is non-canonical iff some merge ``(x, y)`` of rank
``m`` joins the two boundary symbols current at time ``m``.  Walk backwards in
time from the finished pair ``(u, v)``: at each step undo the later-built of the
two boundary symbols (replace it by its child on the spine); the current pair
``(x, y)`` is live from the larger of their ranks up to the time of the last
undone merge, and we ask whether ``(x, y)`` has a merge rank inside that window.

Ties: ranks are unique per pair, so the only tie is a pair merging at the same
rank as the merge that builds a spine node.  BPE takes the leftmost occurrence
first, so on the left side the spine merge wins (the window is open at the
top), on the right side the boundary merge wins (closed at the top).

Each step descends one spine, so a check costs at most the sum of the two
spines' depths in dictionary lookups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .merge_forest import MergeForest

_NO_LIMIT = 1 << 62


def compatible_before(forest: "MergeForest", u: int, v: int, limit: int = _NO_LIMIT, limit_from_left: bool = True) -> bool:
    """True iff no merge across the ``u | v`` boundary fires before time ``limit``.

    With the default limit this is "``(u, v)`` is a canonical pair"; with
    ``limit = m`` it is "merge ``m = (u, v)`` finds ``u`` and ``v`` side by side".
    """
    rank, left, right, pair_rank = forest.rank, forest.left, forest.right, forest.pair_rank
    x, y = u, v
    strict = limit_from_left
    while True:
        m = pair_rank.get((x, y))
        if m is not None and (m < limit or (m == limit and not strict)):
            return False
        rx, ry = rank[x], rank[y]
        if rx < 0 and ry < 0:
            return True
        if rx > ry:
            limit, strict = rx, True
            x = right[x]
        else:
            limit, strict = ry, False
            y = left[y]


def is_canonical_pair(forest: "MergeForest", u: int, v: int) -> bool:
    """True iff ``BPE(spell(u) + spell(v)) == [u, v]`` (both tokens must be reachable)."""
    return forest.reachable[u] and forest.reachable[v] and compatible_before(forest, u, v)
