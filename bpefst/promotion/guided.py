"""Guided generation over a promoted token automaton.

A decoder asks, at each step, which tokens keep the output inside the
language, masks the rest, samples, and steps.  States with exactly one way to
go and no option to stop force their token: these chains ("coalescence",
seed 000 Sec. 7) let a decoder emit tokens without calling the model.

The automaton is a :class:`~bpefst.automata.DFA`, or, for canonical automata
too large to write out, a :class:`~bpefst.automata.shared_rows.SharedRowDFA`
(``promote(..., minimal=False)``) or an :class:`~.on_demand.OnDemandCanonical`
(``promote(..., on_demand=True)``), whose states are built as they are
reached.  The forced chains of a DFA are precomputed.  Those of the other
two are found the first time a state is asked about
(:meth:`GuidedAutomaton.forced_chain`), since counting the arcs of every
state of a 50,000-state JSON automaton costs more than most decodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..automata import DFA
from ..automata.shared_rows import SharedRowDFA
from .canonical import token_mask

if TYPE_CHECKING:
    from .on_demand import OnDemandCanonical


class GuidedAutomaton:
    """A thin, fast view of a token automaton for constrained decoding."""

    def __init__(self, automaton: "DFA | SharedRowDFA | OnDemandCanonical"):
        self.automaton = automaton
        self._shared = not isinstance(automaton, DFA)  # shared rows, or states expanded on demand
        self._masks: dict[int, int] = {}
        self.forced: dict[int, list[int]] = {} if self._shared else self._forced_chains()

    @property
    def dfa(self) -> DFA | SharedRowDFA:
        return self.automaton

    @property
    def start(self) -> int:
        return self.automaton.start

    def _row(self, state: int) -> dict[int, int]:
        return self.automaton.row(state) if self._shared else self.automaton.transitions[state]

    def allowed(self, state: int) -> list[int]:
        """Token ids that may come next, sorted."""
        return sorted(self._row(state))

    def allowed_mask(self, state: int) -> int:
        """``allowed`` as a bitset over token ids (bit t set iff t may come next); cached."""
        mask = self._masks.get(state)
        if mask is None:
            own = getattr(self.automaton, "allowed_mask", None)  # on demand: without building the row
            # else linear in the row, also for 100k-token rows
            mask = self._masks[state] = own(state) if own is not None else token_mask(self._row(state))
        return mask

    def step(self, state: int, token: int) -> int | None:
        """The next state, or None if ``token`` leaves the language."""
        return self.automaton.step(state, token)

    def is_accepting(self, state: int) -> bool:
        return state in self.automaton.finals

    def forced_chain(self, state: int) -> list[int]:
        """The tokens ``state`` forces: while a state has one arc and cannot stop, its token."""
        chain = self.forced.get(state)
        if chain is None:
            chain, seen, q = [], set(), state
            while q not in seen and q not in self.automaton.finals and self._single(q):
                seen.add(q)
                (token, q), = self._row(q).items()
                chain.append(token)
            self.forced[state] = chain
        return chain

    def _single(self, state: int) -> bool:
        if self._shared:
            return self.automaton.arc_count(state) == 1
        return len(self.automaton.transitions[state]) == 1

    def _forced_chains(self) -> dict[int, list[int]]:
        """``state -> the tokens it forces``, for states with one arc and no way to stop."""
        dfa = self.automaton
        single = {
            q: next(iter(row.items()))
            for q, row in enumerate(dfa.transitions)
            if len(row) == 1 and q not in dfa.finals
        }
        chains: dict[int, list[int]] = {}
        for q in single:
            chain, seen, state = [], set(), q
            while state in single and state not in seen:
                seen.add(state)
                token, state = single[state]
                chain.append(token)
            chains[q] = chain
        return chains
