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

The partition is a list of Python sets (``blocks``) plus each state's block
number (``block``).  For one splitter and symbol, the preimage states are
bucketed by block; a block is split by moving its smaller side (the marked
states, or the rest) into a new set, so every step costs O(preimage) set
operations in C and relabelling touches only the smaller side.

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

    final_block = set(finals)
    blocks = [final_block]
    block = [0] * n
    others = set(range(n)) - final_block
    if others:
        blocks.append(others)
        for q in others:
            block[q] = 1
    waiting = list(range(len(blocks)))  # Valmari-Lehtinen: every initial block is a splitter

    while waiting:
        splitter = waiting.pop()
        # Preimage of the splitter, grouped by symbol.  Its members are read now;
        # if it is split below that is harmless: any union of blocks is a sound splitter.
        preimages: dict[int, list[int]] = {}
        for t in blocks[splitter]:
            for symbol, q in inverse[t]:
                sources = preimages.get(symbol)
                if sources is None:
                    preimages[symbol] = [q]
                else:
                    sources.append(q)
        for sources in preimages.values():
            marks: dict[int, list[int]] = {}  # block -> its states in the preimage
            for q in sources:  # deterministic: q occurs once per symbol
                b = block[q]
                marked = marks.get(b)
                if marked is None:
                    marks[b] = [q]
                else:
                    marked.append(q)
            for b, marked in marks.items():
                members = blocks[b]
                if len(marked) == len(members):  # wholly inside the preimage: no split
                    continue
                # The smaller side leaves b and becomes the new block; set operations
                # cost O(len(marked)) either way, since the larger side is < 2 * marked.
                if 2 * len(marked) <= len(members):
                    part = set(marked)
                    members -= part
                else:
                    part = members.difference(marked)
                    members.intersection_update(marked)
                new = len(blocks)
                blocks.append(part)
                for q in part:
                    block[q] = new
                # If b is waiting, both halves must be (b stays, new joins); if not,
                # the smaller half suffices -- and the new block is the smaller half.
                waiting.append(new)
    return block
