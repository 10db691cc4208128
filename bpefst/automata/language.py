"""The language of a DFA up to a length: enumerate, count, sample, shortest string.

All of these rest on one table, ``ways[r][q]`` = the number of strings of
length exactly ``r`` leading from ``q`` to a final state, computed by dynamic
programming over the arcs, r = 0 .. max_len: ``ways[0][q] = [q final]`` and
``ways[r][q] = sum over arcs q -a-> t of ways[r-1][t]`` (exact Python ints; a
DFA gives each string one path, so these count strings, not paths).  It costs
O(max_len * arcs).

* :func:`enumerate_strings` walks the automaton depth-first with symbols
  ascending, once per length, entering only states with ``ways > 0`` for the
  remaining length -- no dead ends, so each string costs O(its length).
  Output is in length-lexicographic (shortlex) order.
* :func:`count_strings` / :func:`count_by_length` read ``ways[r][start]``.
* :func:`random_accepted` samples *uniformly* among the accepted strings of
  length <= max_len: pick the length with weight ``ways[r][start]``, then each
  arc with weight ``ways[remaining][target]``.
* :func:`random_within_reach` samples without the table (not uniformly),
  for strings too long to count.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Iterator

from .dfa import DFA


def _ways(dfa: DFA, max_len: int) -> list[list[int]]:
    """``ways[r][q]`` for r = 0..max_len (see module docstring)."""
    if max_len < 0:
        raise ValueError("max_len must be >= 0")
    transitions = dfa.transitions
    n = len(transitions)
    row = [0] * n
    for q in dfa.finals:
        row[q] = 1
    ways = [row]
    for _ in range(max_len):
        prev = ways[-1]
        ways.append([sum(prev[t] for t in trans.values()) if trans else 0 for trans in transitions])
    return ways


def count_by_length(dfa: DFA, max_len: int) -> list[int]:
    """``counts[r]`` = number of accepted strings of length exactly r, for r = 0..max_len."""
    return [row[dfa.start] for row in _ways(dfa, max_len)]


def count_strings(dfa: DFA, max_len: int) -> int:
    """Number of accepted strings of length <= ``max_len``."""
    return sum(count_by_length(dfa, max_len))


def enumerate_strings(dfa: DFA, max_len: int, min_len: int = 0) -> Iterator[tuple[int, ...]]:
    """Yield every accepted string with ``min_len <= length <= max_len``, in shortlex order."""
    ways = _ways(dfa, max_len)
    transitions = dfa.transitions
    sorted_rows: dict[int, list[tuple[int, int]]] = {}

    def arcs(q: int) -> list[tuple[int, int]]:
        row = sorted_rows.get(q)
        if row is None:
            row = sorted_rows[q] = sorted(transitions[q].items())
        return row

    for length in range(max(min_len, 0), max_len + 1):
        if not ways[length][dfa.start]:
            continue
        if length == 0:
            yield ()
            continue
        path: list[int] = []
        stack = [iter(arcs(dfa.start))]
        while stack:
            remaining = length - len(path) - 1  # symbols still needed after the next one
            for symbol, t in stack[-1]:
                if ways[remaining][t]:
                    path.append(symbol)
                    if remaining == 0:
                        yield tuple(path)
                        path.pop()
                        continue
                    stack.append(iter(arcs(t)))
                    break
            else:
                stack.pop()
                if path:
                    path.pop()


def random_accepted(dfa: DFA, rng: random.Random, max_len: int) -> tuple[int, ...] | None:
    """A uniformly random accepted string of length <= ``max_len``, or ``None`` if there is none.

    Recomputes the ``ways`` table on each call; to draw many samples from a big
    automaton use :func:`sampler`.
    """
    return sampler(dfa, max_len)(rng)


def sampler(dfa: DFA, max_len: int):
    """A function ``rng -> string or None`` drawing uniformly as :func:`random_accepted` does."""
    ways = _ways(dfa, max_len)
    transitions = dfa.transitions
    start = dfa.start
    totals = [row[start] for row in ways]
    grand_total = sum(totals)

    def draw(rng: random.Random) -> tuple[int, ...] | None:
        if not grand_total:
            return None
        pick = rng.randrange(grand_total)
        length = 0
        while pick >= totals[length]:
            pick -= totals[length]
            length += 1
        q, out = start, []
        for remaining in range(length - 1, -1, -1):
            pick = rng.randrange(ways[remaining + 1][q])
            for symbol in sorted(transitions[q]):
                t = transitions[q][symbol]
                weight = ways[remaining][t]
                if pick < weight:
                    out.append(symbol)
                    q = t
                    break
                pick -= weight
        return tuple(out)

    return draw


def distances_to_final(dfa: DFA) -> list[int | None]:
    """Per state, the length of the shortest string from it to a final state (None: no final state is
    reachable), by a breadth-first search of the reversed arcs."""
    transitions = dfa.transitions
    into: list[list[int]] = [[] for _ in transitions]
    for q, row in enumerate(transitions):
        for r in row.values():
            into[r].append(q)
    distance: list[int | None] = [None] * len(transitions)
    queue = deque(dfa.finals)
    for q in dfa.finals:
        distance[q] = 0
    while queue:
        r = queue.popleft()
        for q in into[r]:
            if distance[q] is None:
                distance[q] = distance[r] + 1
                queue.append(q)
    return distance


def random_within_reach(dfa: DFA, rng: random.Random, max_len: int,
                        distance: list[int | None] | None = None) -> tuple[int, ...] | None:
    """A random accepted string of length <= ``max_len`` (None if there is none), *not* uniform: a walk
    from the start taking at each step a uniformly random symbol among those that keep a final state within
    the length left (``distance``: :func:`distances_to_final`, computed when not given), and stopping at a
    final state with probability 1/2 (always when no symbol keeps one within reach).  O(max_len * alphabet)
    with no table of counts, so it suits long strings over large automata (a JSON Schema's documents),
    where :func:`random_accepted`'s exact counts grow to thousands of bits."""
    if distance is None:
        distance = distances_to_final(dfa)
    q, out = dfa.start, []
    if distance[q] is None or distance[q] > max_len:
        return None
    while True:
        left = max_len - len(out)
        row = dfa.transitions[q]
        onward = [symbol for symbol in sorted(row) if (d := distance[row[symbol]]) is not None and d < left]
        if q in dfa.finals and (not onward or rng.random() < 0.5):
            return tuple(out)
        symbol = rng.choice(onward)
        out.append(symbol)
        q = row[symbol]


def shortest_accepted(dfa: DFA) -> tuple[int, ...] | None:
    """The shortlex-least accepted string (breadth-first search), or ``None`` if the language is empty."""
    transitions, finals = dfa.transitions, dfa.finals
    parent: dict[int, tuple[int, int] | None] = {dfa.start: None}
    queue = deque([dfa.start])
    while queue:
        q = queue.popleft()
        if q in finals:
            out = []
            link = parent[q]
            while link is not None:
                q, symbol = link
                out.append(symbol)
                link = parent[q]
            return tuple(reversed(out))
        row = transitions[q]
        for symbol in sorted(row):
            r = row[symbol]
            if r not in parent:
                parent[r] = (q, symbol)
                queue.append(r)
    return None


def is_finite(dfa: DFA) -> bool:
    """Whether the language is finite: the trimmed automaton has no cycle (iterative DFS)."""
    from .trimming import trim

    transitions = trim(dfa).transitions
    color = bytearray(len(transitions))  # 0 new, 1 on stack, 2 done
    for root in range(len(transitions)):
        if color[root]:
            continue
        color[root] = 1
        stack = [(root, iter(transitions[root].values()))]
        while stack:
            q, it = stack[-1]
            for r in it:
                if color[r] == 1:
                    return False
                if color[r] == 0:
                    color[r] = 1
                    stack.append((r, iter(transitions[r].values())))
                    break
            else:
                color[q] = 2
                stack.pop()
    return True
