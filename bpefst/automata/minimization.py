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
    quotient = _acyclic_quotient(dfa)
    if quotient is not None:
        return canonical(quotient)
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


def _acyclic_quotient(dfa: DFA) -> DFA | None:
    """The quotient by language equivalence when the accessible part is acyclic, else None.

    Revuz (1992), "Minimisation of acyclic deterministic automata in linear time":
    in an acyclic DFA, states can be classified children first (depth-first
    postorder), and two states are equivalent exactly when they agree on
    finality and have the same arcs into the same classes.  One search from the
    start gives the postorder and detects a cycle (an arc back into the search
    stack), so a cyclic input costs one aborted search before Hopcroft.  States
    with no path to a final state get class -1 (dead) and arcs into them are
    dropped, so trimming comes for free.
    """
    transitions = dfa.transitions
    color = bytearray(len(transitions))  # 0 unseen, 1 on the stack, 2 done
    start = dfa.start
    color[start] = 1
    order = []
    stack = [(start, iter(transitions[start].values()))]
    push, pop = stack.append, stack.pop
    while stack:
        q, targets = stack[-1]
        for r in targets:
            c = color[r]
            if not c:
                color[r] = 1
                push((r, iter(transitions[r].values())))
                break
            if c == 1:
                return None  # a cycle: not for this method
        else:
            pop()
            color[q] = 2
            order.append(q)

    finals = dfa.finals
    klass = [-1] * len(transitions)
    get_class = klass.__getitem__
    signatures: dict[tuple, int] = {}
    rows: list[dict[int, int]] = []
    final_classes = []
    for q in order:
        row = transitions[q]
        symbols = sorted(row)
        targets = list(map(get_class, map(row.__getitem__, symbols)))
        if -1 in targets:  # arcs into dead states go
            symbols = [a for a, t in zip(symbols, targets) if t >= 0]
            targets = [t for t in targets if t >= 0]
        final = q in finals
        if not targets and not final:
            continue  # dead
        signature = (final, *symbols, -1, *targets)
        k = signatures.get(signature)
        if k is None:
            k = signatures[signature] = len(rows)
            rows.append(dict(zip(symbols, targets)))
            if final:
                final_classes.append(k)
        klass[q] = k
    if klass[start] < 0:
        return DFA.empty_language()
    return DFA(rows, klass[start], frozenset(final_classes), check=False)


def canonical(dfa: DFA) -> DFA:
    """Renumber accessible states breadth-first from start, symbols ascending; drop the rest.

    Rows of the result are dicts built in ascending symbol order.
    """
    transitions = dfa.transitions
    new_id = [-1] * len(transitions)
    new_id[dfa.start] = 0
    order = [dfa.start]
    new_transitions = []
    renumber = new_id.__getitem__
    for q in order:  # grows while we iterate
        row = transitions[q]
        symbols = sorted(row)
        targets = list(map(row.__getitem__, symbols))
        if -1 in map(renumber, targets):  # number new states in order of first appearance
            for r in targets:
                if new_id[r] < 0:
                    new_id[r] = len(order)
                    order.append(r)
        new_transitions.append(dict(zip(symbols, map(renumber, targets))))
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
