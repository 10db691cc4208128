"""Graphviz ``dot`` output for DFAs and NFAs.

Parallel arcs between the same two states are drawn as one edge whose label
lists the symbols, with runs of consecutive symbols shown as ranges
(``97-122``, or ``a-z`` with a label function).  Epsilon arcs are labelled
``ε``.  Final states are double circles; an invisible node points at the
start.  Drawing is refused (``StateLimitExceeded``) above ``max_states``:
Graphviz cannot usefully lay out tens of thousands of states.
"""

from __future__ import annotations

from typing import Callable

from .dfa import DFA
from .errors import check_limit
from .nfa import NFA


def to_dot(
    automaton: DFA | NFA,
    label: Callable[[int], str] | None = None,
    *,
    max_states: int | None = 1000,
    name: str = "automaton",
) -> str:
    """Render ``automaton`` in the dot language; ``label(symbol)`` names symbols (default: the number)."""
    check_limit(automaton.num_states, max_states, "drawing")
    show = label or str
    edges: dict[tuple[int, int], list[int]] = {}
    epsilons: list[tuple[int, int]] = []
    if isinstance(automaton, DFA):
        for q, symbol, r in automaton.arcs():
            edges.setdefault((q, r), []).append(symbol)
    else:
        for q, row in enumerate(automaton.arcs):
            for symbol, r in row:
                edges.setdefault((q, r), []).append(symbol)
        for q, row in enumerate(automaton.eps):
            epsilons.extend((q, r) for r in row)
    lines = [
        f"digraph {_quote(name)} {{",
        "  rankdir=LR;",
        '  __start [shape=point, label=""];',
    ]
    for q in range(automaton.num_states):
        shape = "doublecircle" if q in automaton.finals else "circle"
        lines.append(f"  {q} [shape={shape}];")
    lines.append(f"  __start -> {automaton.start};")
    for (q, r), symbols in sorted(edges.items()):
        lines.append(f"  {q} -> {r} [label={_quote(_ranges(sorted(set(symbols)), show))}];")
    for q, r in epsilons:
        lines.append(f'  {q} -> {r} [label="ε", style=dashed];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _ranges(symbols: list[int], show: Callable[[int], str]) -> str:
    parts = []
    i = 0
    while i < len(symbols):
        j = i
        while j + 1 < len(symbols) and symbols[j + 1] == symbols[j] + 1:
            j += 1
        if j - i >= 2:
            parts.append(f"{show(symbols[i])}-{show(symbols[j])}")
        else:
            parts.extend(show(s) for s in symbols[i : j + 1])
        i = j + 1
    return ",".join(parts)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
