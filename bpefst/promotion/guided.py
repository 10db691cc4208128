"""Guided generation over a promoted token automaton.

A decoder asks, at each step, which tokens keep the output inside the
language, masks the rest, samples, and steps.  States with exactly one way to
go and no option to stop force their token: these chains ("coalescence",
seed 000 Sec. 7) are precomputed so a decoder can emit them without calling
the model.
"""

from __future__ import annotations

from ..automata import DFA


class GuidedAutomaton:
    """A thin, fast view of a token DFA for constrained decoding."""

    def __init__(self, dfa: DFA):
        self.dfa = dfa
        self._masks: list[int | None] = [None] * dfa.num_states
        self.forced = self._forced_chains()

    @property
    def start(self) -> int:
        return self.dfa.start

    def allowed(self, state: int) -> list[int]:
        """Token ids that may come next, sorted."""
        return sorted(self.dfa.transitions[state])

    def allowed_mask(self, state: int) -> int:
        """``allowed`` as a bitset over token ids (bit t set iff t may come next); cached."""
        mask = self._masks[state]
        if mask is None:
            mask = 0
            for token in self.dfa.transitions[state]:
                mask |= 1 << token
            self._masks[state] = mask
        return mask

    def step(self, state: int, token: int) -> int | None:
        """The next state, or None if ``token`` leaves the language."""
        return self.dfa.transitions[state].get(token)

    def is_accepting(self, state: int) -> bool:
        return state in self.dfa.finals

    def _forced_chains(self) -> dict[int, list[int]]:
        """``state -> the tokens it forces``, for states with one arc and no way to stop."""
        single = {
            q: next(iter(row.items()))
            for q, row in enumerate(self.dfa.transitions)
            if len(row) == 1 and q not in self.dfa.finals
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
