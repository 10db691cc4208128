"""Algorithm 2 of Berglund, Martens & van der Merwe (seed 001): merging one rule into a token DFA.

Given a context-invariant token DFA ``A`` and a rule ``u ≀ v`` (result ``uv``):

1. for every run ``s1 -u-> s2 -v-> s3`` add the arc ``s1 -uv-> s3``;
2. for every such middle state ``s2`` create ``fresh(s2)`` (final iff ``s2`` is),
   with all of ``s2``'s arcs except those on ``v`` (and, when ``u == v``, on ``uv``);
3. redirect every arc ``q -u-> s2`` to ``fresh(s2)``.

Applied merge by merge to the base token DFA of a string DFA ``A`` (each base
symbol replaced by its token), the result accepts exactly the BPE
tokenizations of ``L(A)`` (Theorem 1 of seed 001).  Started from the one-state
universal DFA it builds the canonical automaton A_BPE; started from a pattern
it builds the pattern's canonical promotion (Eq. 4 of seed 000).

The working automaton keeps, per symbol, the set of states with an outgoing
arc on it, so a merge costs time proportional to the arcs it touches and a
merge whose tokens do not occur costs nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ..automata import DFA, minimize, trim


class MergeableDFA:
    """A mutable token DFA with an index ``symbol -> states having an arc on it``."""

    def __init__(self, dfa: DFA):
        self.arcs: list[dict[int, int]] = [dict(row) for row in dfa.transitions]
        self.finals: set[int] = set(dfa.finals)
        self.start = dfa.start
        self.sources: dict[int, set[int]] = defaultdict(set)
        self.num_arcs = sum(map(len, self.arcs))
        for q, row in enumerate(self.arcs):
            for symbol in row:
                self.sources[symbol].add(q)

    def _set(self, q: int, symbol: int, target: int) -> None:
        if symbol not in self.arcs[q]:
            self.num_arcs += 1
        self.arcs[q][symbol] = target
        self.sources[symbol].add(q)

    def apply(self, u: int, v: int, uv: int) -> None:
        """Merge the rule ``u ≀ v`` producing token ``uv`` (Algorithm 2)."""
        if not self.sources.get(u) or not self.sources.get(v):
            return
        runs = []  # (s1, s2, s3)
        for s1 in self.sources[u]:
            s2 = self.arcs[s1][u]
            s3 = self.arcs[s2].get(v)
            if s3 is not None:
                runs.append((s1, s2, s3))
        if not runs:
            return
        for s1, _, s3 in runs:
            self._set(s1, uv, s3)
        fresh: dict[int, int] = {}
        for _, s2, _ in runs:
            if s2 in fresh:
                continue
            copy = len(self.arcs)
            fresh[s2] = copy
            self.arcs.append({})
            if s2 in self.finals:
                self.finals.add(copy)
        for s2, copy in fresh.items():
            skip = (v,) if u != v else (v, uv)
            for symbol, target in self.arcs[s2].items():
                if symbol not in skip:
                    self._set(copy, symbol, target)
        for q in list(self.sources[u]):
            target = self.arcs[q][u]
            if target in fresh:
                self.arcs[q][u] = fresh[target]

    def to_dfa(self) -> DFA:
        return DFA(self.arcs, self.start, frozenset(self.finals), check=False)


def apply_merges(dfa: DFA, merges: Iterable[tuple[int, int, int]], growth: float = 3.0) -> DFA:
    """Apply ``(u, v, uv)`` rules in order (Algorithm 2 each); returns the trimmed minimal DFA.

    Algorithm 2 never merges states, so the working automaton grows with every
    rule (by up to its 1-locality degree, Theorem 2 of seed 001) although the
    language's minimal DFA stays small.  Whenever the arc count has grown by
    ``growth`` since the last minimization, trim and minimize: the language is
    unchanged and a trim DFA of a context-invariant language is context-invariant
    (its runs between useful states are factors of accepted sequences), so
    Algorithm 2 may continue on the smaller automaton.
    """
    work = MergeableDFA(minimize(trim(dfa)))
    budget = growth * max(work.num_arcs, 1024)
    for u, v, uv in merges:
        work.apply(u, v, uv)
        if work.num_arcs > budget:
            work = MergeableDFA(minimize(trim(work.to_dfa())))
            budget = growth * max(work.num_arcs, 1024)
    return minimize(trim(work.to_dfa()))
