"""DFAs whose states share rows, for automata too large to write out arc by arc.

In a canonical token automaton (seed 000, Eq. 5) a state pairs a lattice state
``q`` with what A_BPE remembers of the last token. By 1-locality, every such
state reads the arcs of ``q`` minus the few tokens the last token bans. So
thousands of states carry nearly the same row of up to 100k tokens, and
written out arc by arc, e-mail or JSON patterns over cl100k come to hundreds
of millions of arcs.

:class:`SharedRowDFA` stores each row once. A state is a tuple of *parts*
``(shared row, excluded symbols)`` plus optional *overrides*
``symbol -> state or None``:

* a symbol in the overrides goes where the override says (None: no arc);
* otherwise it follows the first part whose shared row has it and does not
  exclude it.

This is the transition function of an ordinary DFA (:meth:`to_dfa` writes it
out). Several parts arise from subset constructions, where a state is a set
of configurations; the overrides hold the symbols that more than one part
reads. The arcs of a state cost nothing until a caller asks for them.
Excluded symbols may be any read-only set; one with a ``count_in(row)``
method (a bitset) is counted without being listed.

A compiled build (the canonical subsets of promotion on ``bpefst._core``)
keeps its states as arrays: :meth:`SharedRowDFA.from_core` reads them as the
same lists, each item made when it is read, and lets the core answer
:meth:`~SharedRowDFA.step`, :meth:`~SharedRowDFA.row` and the arc counts.
"""

from __future__ import annotations

from collections.abc import Sequence as SequenceABC
from typing import Callable, Sequence

from .dfa import DFA

Part = tuple[int, frozenset]


class SharedRowDFA:
    """A DFA given by shared rows (see the module docstring); states are ``0..len(parts)-1``.

    A symbol that parts over different shared rows both read (and do not
    exclude) must be in the state's overrides.  ``dead`` marks states that
    are unreachable or reach no final state: they keep their numbers and have
    no parts and no arcs.  The other states are the trim automaton
    (``num_states`` counts them), and no arc leads to a dead state.
    """

    def __init__(self, shared: list[dict[int, int]], parts: list[tuple[Part, ...]], overrides: list[dict[int, int | None] | None],
                 start: int, finals: frozenset[int], dead: Sequence[bool] | None = None):
        self.shared = shared
        self.parts = parts
        self.overrides = overrides
        self.start = start
        self.finals = finals
        self.dead = list(dead) if dead is not None else [False] * len(parts)
        self._core = None

    @classmethod
    def from_core(cls, core) -> "SharedRowDFA":
        """The states a compiled build made (``bpefst._core.SharedSubsets``: ``parts_of(s)``,
        ``overrides_of(s)``, ``shared_row(q)``, ``final_states()``, ``dead_flags()``, and ``step``, ``row``,
        ``arc_count``, ``arc_total``), start 0."""
        automaton = cls.__new__(cls)
        states = len(core)
        automaton.shared = _Items(core.shared_row, core.lattice_states())
        automaton.parts = _Items(core.parts_of, states)
        automaton.overrides = _Items(core.overrides_of, states)
        automaton.start, automaton.finals = 0, frozenset(core.final_states())
        automaton.dead = list(map(bool, core.dead_flags()))
        automaton._core = core
        return automaton

    @property
    def num_states(self) -> int:
        """Live states (dead ones are numbered but not counted)."""
        return self.dead.count(False)

    @property
    def num_arcs(self) -> int:
        if self._core is not None:
            return self._core.arc_total()
        return sum(map(self.arc_count, range(len(self.parts))))

    def arc_count(self, state: int) -> int:
        """The number of arcs of ``state``, without writing its row out."""
        if self._core is not None:
            return self._core.arc_count(state)
        parts = self.parts[state]
        if len({q for q, _ in parts}) < len(parts):  # two parts over one row: count the union
            return len(self.row(state))
        over = self.overrides[state] or {}
        total = sum(1 for target in over.values() if target is not None)
        for q, excluded in parts:
            row = self.shared[q]
            count_in = getattr(excluded, "count_in", None)  # bitset-backed sets count without listing
            total += len(row) - (count_in(row) if count_in is not None else sum(1 for t in excluded if t in row))
            total -= sum(1 for t in over if t in row and t not in excluded)
        return total

    def step(self, state: int, symbol: int) -> int | None:
        if self._core is not None:
            return self._core.step(state, symbol)
        over = self.overrides[state]
        if over is not None and symbol in over:
            return over[symbol]
        shared = self.shared
        for q, excluded in self.parts[state]:
            target = shared[q].get(symbol)
            if target is not None and symbol not in excluded:
                return target
        return None

    def run(self, seq, state: int | None = None) -> int | None:
        state = self.start if state is None else state
        for symbol in seq:
            state = self.step(state, symbol)
            if state is None:
                return None
        return state

    def accepts(self, seq) -> bool:
        state = self.run(seq)
        return state is not None and state in self.finals

    def row(self, state: int) -> dict[int, int]:
        """The arcs of ``state`` written out: ``symbol -> target``."""
        if self._core is not None:
            return self._core.row(state)
        parts = self.parts[state]
        if len(parts) == 1:
            q, excluded = parts[0]
            row = dict(self.shared[q])
            for t in excluded:
                row.pop(t, None)
        else:
            row = {}
            for q, excluded in reversed(parts):  # the first part wins, as in step()
                shared = self.shared[q]
                row.update(shared if not excluded else {t: r for t, r in shared.items() if t not in excluded})
        over = self.overrides[state]
        if over:
            for t, target in over.items():
                if target is None:
                    row.pop(t, None)
                else:
                    row[t] = target
        return row

    def to_dfa(self) -> DFA:
        """The same automaton with every row written out (dead states stay, empty)."""
        return DFA([self.row(s) for s in range(len(self.parts))], self.start, self.finals, check=False)


class _Items(SequenceABC):
    """A read-only list whose items are made by ``item(k)`` when read (a compiled build's states)."""

    def __init__(self, item: Callable[[int], object], length: int):
        self._item, self._length = item, length

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, k):
        if isinstance(k, slice):
            return [self[i] for i in range(*k.indices(self._length))]
        if k < 0:
            k += self._length
        if not 0 <= k < self._length:
            raise IndexError("state out of range")
        return self._item(k)
