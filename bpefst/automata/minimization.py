"""DFA minimization (Hopcroft's partition refinement) and canonical numbering.

Hopcroft (1971), "An n log n algorithm for minimizing states in a finite
automaton".  States start partitioned into finals / non-finals and blocks are
split until every block is *stable*: for each block B and symbol a, a block
either lies entirely inside the a-preimage of B or entirely outside it.  A
worklist holds blocks still to be used as splitters; when a block that is not
on the worklist is split, only the *smaller* half needs to go on it (splitting
by the parent and one half implies splitting by the other half), so each state
enters a splitter O(log n) times and each arc is scanned O(log n) times:
O(m log n) for m arcs, independent of the alphabet size.

Partial transition functions follow Valmari & Lehtinen (2008), "Efficient
minimization of DFAs with partial transition functions": the input is trimmed
first, so no stored state is equivalent to the implicit dead state; the dead
state's block is never used as a splitter and *all* initial blocks go on the
worklist (the "smaller half" shortcut is not valid for the initial split when
the dead block is left out).  Preimages are read from the reversed arcs of the
splitter's states, grouped by symbol, so symbols without arcs cost nothing.

The partition is Valmari's refinable-partition structure: one array holding
the states block by block (``elems``), each state's position in it (``loc``)
and block (``block``), and per block its ``first``/``end`` bounds plus a
``mid`` pointer separating marked states (moved to the front) from unmarked.

The quotient is then numbered canonically (:func:`canonical`): breadth-first
from the start, symbols in increasing order.  Hence two minimal DFAs for the
same language are equal as values (``==``), which makes language equality of
minimized automata a structural comparison.
"""

from __future__ import annotations

from .dfa import DFA
from .trimming import trim


def minimize(dfa: DFA) -> DFA:
    """The minimal trim DFA for ``dfa``'s language, canonically numbered."""
    dfa = trim(dfa)
    if not dfa.finals:
        return DFA.empty_language()
    transitions = dfa.transitions
    block = _coarsest_stable_partition(transitions, dfa.finals)
    num_blocks = max(block) + 1
    rows: list[dict[int, int] | None] = [None] * num_blocks
    for q, row in enumerate(transitions):
        b = block[q]
        if rows[b] is None:
            rows[b] = {symbol: block[r] for symbol, r in row.items()}
    finals = frozenset(block[q] for q in dfa.finals)
    return canonical(DFA(rows, block[dfa.start], finals, check=False))  # type: ignore[arg-type]


def canonical(dfa: DFA) -> DFA:
    """Renumber accessible states breadth-first from start, symbols ascending; drop the rest.

    Rows of the result are dicts built in ascending symbol order.
    """
    transitions = dfa.transitions
    new_id = [-1] * len(transitions)
    new_id[dfa.start] = 0
    order = [dfa.start]
    new_transitions = []
    for q in order:  # grows while we iterate
        row = transitions[q]
        new_row = {}
        for symbol in sorted(row):
            r = row[symbol]
            j = new_id[r]
            if j < 0:
                j = new_id[r] = len(order)
                order.append(r)
            new_row[symbol] = j
        new_transitions.append(new_row)
    finals = frozenset(new_id[q] for q in dfa.finals if new_id[q] >= 0)
    return DFA(new_transitions, 0, finals, check=False)


def _coarsest_stable_partition(transitions: list[dict[int, int]], finals: frozenset[int]) -> list[int]:
    """Hopcroft refinement; returns the block number of every state."""
    n = len(transitions)
    inverse: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for q, row in enumerate(transitions):
        for symbol, r in row.items():
            inverse[r].append((symbol, q))

    elems = [q for q in range(n) if q in finals]
    num_finals = len(elems)
    elems.extend(q for q in range(n) if q not in finals)
    loc = [0] * n
    for i, q in enumerate(elems):
        loc[q] = i
    block = [0] * n
    first, end = [0], [num_finals]
    if num_finals < n:
        first.append(num_finals)
        end.append(n)
        for i in range(num_finals, n):
            block[elems[i]] = 1
    mid = list(first)
    waiting = list(range(len(first)))  # Valmari-Lehtinen: every initial block is a splitter

    while waiting:
        splitter = waiting.pop()
        # Preimage of the splitter, grouped by symbol (its elements are read now;
        # splitting it below is harmless: any union of blocks is a sound splitter).
        preimages: dict[int, list[int]] = {}
        for i in range(first[splitter], end[splitter]):
            for symbol, q in inverse[elems[i]]:
                sources = preimages.get(symbol)
                if sources is None:
                    preimages[symbol] = [q]
                else:
                    sources.append(q)
        for sources in preimages.values():
            touched = []
            for q in sources:  # deterministic: q occurs once per symbol
                b = block[q]
                m = mid[b]
                if m == first[b]:
                    touched.append(b)
                i = loc[q]
                other = elems[m]
                elems[m] = q
                loc[q] = m
                elems[i] = other
                loc[other] = i
                mid[b] = m + 1
            for b in touched:
                f, m, e = first[b], mid[b], end[b]
                if m == e:  # wholly inside the preimage: no split
                    mid[b] = f
                    continue
                new = len(first)
                if m - f <= e - m:  # the marked part is smaller: it becomes the new block
                    first.append(f)
                    end.append(m)
                    mid.append(f)
                    first[b] = mid[b] = m
                    lo, hi = f, m
                else:
                    first.append(m)
                    end.append(e)
                    mid.append(m)
                    end[b] = m
                    mid[b] = f
                    lo, hi = m, e
                for i in range(lo, hi):
                    block[elems[i]] = new
                # If b is waiting, both halves must be (b stays, new joins); if not,
                # the smaller half suffices -- and the new block is the smaller half.
                waiting.append(new)
    return block
