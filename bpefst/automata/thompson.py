"""Thompson-style combinators: regular expressions as NFA-building functions.

Thompson (1968), "Regular expression search algorithm", builds an NFA for a
regular expression bottom-up, gluing the NFAs of the subexpressions together
with epsilon arcs; the result has O(|expression|) states and arcs.  These
functions are that construction, one per operator, over NFA values (the
regex compiler, :mod:`bpefst.regex.compiler`, writes the same pieces in place
into one table instead, so that nesting copies nothing):

==================  ===============================================
``empty()``         no string
``epsilon()``       the empty string only
``symbols(S)``      any single symbol in the set ``S`` (a class)
``literal(seq)``    exactly the sequence ``seq``
``concat(*parts)``  concatenation (n-ary: linear, not quadratic)
``union(*parts)``   alternation (n-ary)
``star(a)``         Kleene star ``a*``
``plus(a)``         ``a+``
``optional(a)``     ``a?``
``repeat(a, m, n)`` bounded repetition ``a{m,n}`` (``n=None``: ``a{m,}``)
==================  ===============================================

Each function copies its operands into a fresh NFA (operands are values and
are never modified).  Finals are a set, not a single accepting state, which
saves epsilon arcs; start states have no incoming arcs except where noted.
"""

from __future__ import annotations

from typing import Iterable, Sequence

from .nfa import NFA


def empty() -> NFA:
    """An NFA accepting no string."""
    return NFA([[]], [[]], 0, frozenset(), check=False)


def epsilon() -> NFA:
    """An NFA accepting only the empty string."""
    return NFA([[]], [[]], 0, frozenset((0,)), check=False)


def symbols(alphabet: Iterable[int]) -> NFA:
    """An NFA accepting any one symbol of ``alphabet`` (empty set: no string)."""
    chosen = sorted(set(alphabet))
    _check_symbols(chosen)
    return NFA([[(a, 1) for a in chosen], []], [[], []], 0, frozenset((1,)), check=False)


def literal(seq: Sequence[int]) -> NFA:
    """An NFA accepting exactly ``seq`` (a chain of ``len(seq) + 1`` states)."""
    seq = list(seq)
    _check_symbols(seq)
    arcs = [[(a, i + 1)] for i, a in enumerate(seq)]
    arcs.append([])
    return NFA(arcs, [[] for _ in arcs], 0, frozenset((len(seq),)), check=False)


def concat(*parts: NFA) -> NFA:
    """Concatenation: each part's finals get an epsilon arc to the next part's start."""
    if not parts:
        return epsilon()
    if len(parts) == 1:
        return _copy(parts[0])
    arcs, eps, offsets = _embed(parts)
    for part, offset, next_part, next_offset in zip(parts, offsets, parts[1:], offsets[1:]):
        target = next_part.start + next_offset
        for f in part.finals:
            eps[f + offset].append(target)
    last, last_offset = parts[-1], offsets[-1]
    finals = frozenset(f + last_offset for f in last.finals)
    return NFA(arcs, eps, parts[0].start + offsets[0], finals, check=False)


def union(*parts: NFA) -> NFA:
    """Alternation: a new start state with an epsilon arc to each part's start."""
    if not parts:
        return empty()
    arcs, eps, offsets = _embed(parts, leading=1)
    eps[0] = [part.start + offset for part, offset in zip(parts, offsets)]
    finals = frozenset(f + offset for part, offset in zip(parts, offsets) for f in part.finals)
    return NFA(arcs, eps, 0, finals, check=False)


def star(part: NFA) -> NFA:
    """Kleene star: a new final start state, epsilon to the part, finals loop back."""
    arcs, eps, (offset,) = _embed((part,), leading=1)
    eps[0].append(part.start + offset)
    for f in part.finals:
        eps[f + offset].append(0)
    return NFA(arcs, eps, 0, frozenset((0,)), check=False)


def plus(part: NFA) -> NFA:
    """``a+`` = ``a a*``, built as one copy of ``a`` whose finals loop back to its start."""
    arcs, eps, (offset,) = _embed((part,), leading=1)
    eps[0].append(part.start + offset)  # fresh start, so the loop cannot re-enter a start with in-arcs
    for f in part.finals:
        eps[f + offset].append(0)
    return NFA(arcs, eps, 0, frozenset(f + offset for f in part.finals), check=False)


def optional(part: NFA) -> NFA:
    """``a?``: a new final start state with an epsilon arc to the part."""
    arcs, eps, (offset,) = _embed((part,), leading=1)
    eps[0].append(part.start + offset)
    finals = frozenset(f + offset for f in part.finals) | {0}
    return NFA(arcs, eps, 0, finals, check=False)


def repeat(part: NFA, low: int, high: int | None = None) -> NFA:
    """Bounded repetition ``a{low,high}``; ``high=None`` means unbounded (``a{low,}``).

    Built as ``low`` copies of ``a`` followed by either ``a*`` or a chain
    of ``high - low`` optional copies (``(a(a(a)?)?)?``), so the size is
    linear in ``high``.
    """
    if low < 0 or (high is not None and high < low):
        raise ValueError(f"bad repetition bounds {{{low},{high}}}")
    pieces = [part] * low
    if high is None:
        pieces.append(star(part))
    elif high > low:
        pieces.append(_at_most(part, high - low))
    return concat(*pieces)


def _at_most(part: NFA, count: int) -> NFA:
    """``a{0,count}`` as a chain ``e0 -> a -> e1 -> a -> ... -> e_count`` with every ``e_i`` final.

    Equivalent to the nested optionals ``(a(a(a)?)?)?`` but built in one pass.
    """
    arcs, eps, offsets = _embed([part] * count, leading=count + 1)
    for i, offset in enumerate(offsets):
        eps[i].append(part.start + offset)
        for f in part.finals:
            eps[f + offset].append(i + 1)
    return NFA(arcs, eps, 0, frozenset(range(count + 1)), check=False)


# ---------------------------------------------------------------- helpers
def _embed(parts: Sequence[NFA], leading: int = 0) -> tuple[list, list, list[int]]:
    """Copy ``parts`` side by side after ``leading`` fresh states; return tables and offsets."""
    arcs: list[list[tuple[int, int]]] = [[] for _ in range(leading)]
    eps: list[list[int]] = [[] for _ in range(leading)]
    offsets = []
    for part in parts:
        offset = len(arcs)
        offsets.append(offset)
        if offset:
            arcs.extend([(a, r + offset) for a, r in row] for row in part.arcs)
            eps.extend([r + offset for r in row] for row in part.eps)
        else:
            arcs.extend(list(row) for row in part.arcs)
            eps.extend(list(row) for row in part.eps)
    return arcs, eps, offsets


def _copy(part: NFA) -> NFA:
    return NFA([list(row) for row in part.arcs], [list(row) for row in part.eps], part.start, part.finals, check=False)


def _check_symbols(seq: Sequence[int]) -> None:
    for a in seq:
        if not isinstance(a, int) or a < 0:
            raise ValueError(f"symbols must be non-negative ints, got {a!r}")
