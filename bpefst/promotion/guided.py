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

The mask API has the shape inference engines use (xgrammar, llguidance):
:meth:`~GuidedAutomaton.fill_next_token_bitmask` writes a state's allowed
tokens into one row of a preallocated packed ``int32`` bitmask (bit ``t % 32``
of word ``t // 32`` set iff token ``t`` may come next), numpy or torch.  The
allowed set is kept as a Python int bitset per state, so filling a row is one
``int.to_bytes`` and one buffer copy, never a Python loop over token ids.
Stop tokens (the tokenizer's EOS, or ids the caller picks) are allowed
exactly in accepting states, so a decoder that samples one has produced a
whole match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from .. import native
from ..automata import DFA
from ..automata.shared_rows import SharedRowDFA
from ..errors import BpefstError
from .canonical import set_bits, token_mask

if TYPE_CHECKING:
    from .on_demand import OnDemandCanonical


MASKS_KEPT = 8192  # states whose masks a guide keeps (cl100k: 100 MB of packed rows at most)


def _bound(kept: dict, size: int) -> None:
    """Make room for one more entry: a full cache starts over (cheaper per call than keeping an order)."""
    if len(kept) >= size:
        kept.clear()


class _PerTokenCalls:
    """The calls a decoder makes per token, as defined: the pure path's base of :class:`GuidedAutomaton`.

    On the compiled core the base is ``bpefst._core.GuideCore`` (``src/core/guide.h``), which answers the
    same three calls from a memo of packed rows and steps once a state has been met, and calls these
    definitions (``_packed_row``, ``_step_missed``) on a miss: a warm step is then two C calls.
    """

    def fill_next_token_bitmask(self, state: int, bitmask, index: int = 0) -> None:
        """Write ``state``'s allowed tokens into row ``index`` of a packed int32 bitmask (numpy or torch).

        ``bitmask`` has shape ``(words,)`` or ``(batch, words)`` with
        ``words * 32`` at least the vocabulary; bit ``t % 32`` of word ``t // 32``
        is set iff token ``t`` may come next (:func:`bpefst.decoding.allocate_token_bitmask`
        makes one, :func:`bpefst.decoding.apply_token_bitmask` applies it).  A
        state's packed row is made once (``int.to_bytes`` of its bitset) and
        kept, so a state met again costs one array copy.
        """
        self._fill_slow(state, bitmask, index)

    def step(self, state: int, token: int) -> int | None:
        """The next state, or None if ``token`` leaves the language (stop ids are no arcs: see :meth:`is_stop`)."""
        return self._step_missed(state, token)

    def advance(self, state: int, tokens: Iterable[int]) -> int | None:
        """The state after ``tokens`` (a forced chain, a draft, a prompt's tail), or None if one leaves the language."""
        return self._advance_slow(state, tokens)

    def _kept(self) -> tuple[int, int]:
        """(packed rows, steps) the per-token memo holds; the pure path keeps rows only."""
        return len(self._packed), 0


_Base = native.core.GuideCore if native.core is not None else _PerTokenCalls


class GuidedAutomaton(_Base):
    """A thin, fast view of a token automaton for constrained decoding."""

    def __init__(self, automaton: "DFA | SharedRowDFA | OnDemandCanonical", stop_ids: int | Iterable[int] = (),
                 masks_kept: int = MASKS_KEPT):
        """``stop_ids``: the tokens that end generation (EOS), allowed exactly in accepting states.

        ``masks_kept``: how many states' masks (as ints and packed rows) are kept for states met again;
        past it the kept ones are dropped and made again when asked (a mask of cl100k is 12.5 KB).
        """
        self.automaton = automaton
        self.masks_kept = self._rows_kept = masks_kept
        self._shared = not isinstance(automaton, DFA)  # shared rows, or states expanded on demand
        self._masks: dict[int, int] = {}
        self._next: dict[int, int] = {}  # allowed_mask plus the stop ids where accepting
        self._packed: dict[tuple, object] = {}  # (state, words, array type) -> the packed int32 row
        self.stop_ids = frozenset([stop_ids] if isinstance(stop_ids, int) else stop_ids)
        self.stop_mask = token_mask(self.stop_ids)
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
        if getattr(self.automaton, "allowed_mask", None) is not None:  # on demand: the row's targets are not needed
            return sorted(set_bits(self.allowed_mask(state)))  # (a string state's row of 50k targets: 130 -> 4 ms)
        return sorted(self._row(state))

    def allowed_mask(self, state: int) -> int:
        """``allowed`` as a bitset over token ids (bit t set iff t may come next); cached."""
        mask = self._masks.get(state)
        if mask is None:
            _bound(self._masks, self.masks_kept)
            own = getattr(self.automaton, "allowed_mask", None)  # on demand: without building the row
            # else linear in the row, also for 100k-token rows
            mask = self._masks[state] = own(state) if own is not None else token_mask(self._row(state))
        return mask

    def _step_missed(self, state: int, token: int) -> int | None:
        return self.automaton.step(state, token)

    def is_stop(self, token: int) -> bool:
        return token in self.stop_ids

    # -- the mask API of inference engines -----------------------------------------------------
    def next_token_mask(self, state: int) -> int:
        """The bitset of the tokens a decoder may sample in ``state``: ``allowed_mask``, plus the stop ids when accepting."""
        mask = self._next.get(state)
        if mask is None:
            _bound(self._next, self.masks_kept)
            mask = self.allowed_mask(state)
            if self.stop_mask and self.is_accepting(state):
                mask |= self.stop_mask
            self._next[state] = mask
        return mask

    def allowed_token_ids(self, state: int) -> list[int]:
        """The token ids a decoder may sample in ``state`` (stop ids included where accepting), sorted."""
        return sorted(set_bits(self.next_token_mask(state)))

    def _fill_slow(self, state: int, bitmask, index: int = 0) -> None:
        """:meth:`fill_next_token_bitmask` through Python: any array type, a kept packed row per state and width."""
        shape = bitmask.shape
        key = (state, shape[-1], type(bitmask))
        packed = self._packed.get(key)
        if packed is None:
            _bound(self._packed, self.masks_kept)
            packed = self._packed[key] = self._pack(state, bitmask)
        if len(shape) == 2:
            bitmask[index] = packed
        else:
            bitmask[:] = packed

    def fill_next_token_bitmasks(self, states: Iterable[int | None], bitmask) -> None:
        """Row ``i`` of ``bitmask`` (shape ``(batch, words)``) for ``states[i]``, for a whole batch in one call.

        A row whose state is None (a sequence that has finished) is left as it
        is, so the caller can keep it all ones or skip it when applying.
        """
        states = list(states)
        if len(bitmask.shape) != 2 or bitmask.shape[0] < len(states):
            raise BpefstError(f"a batch of {len(states)} states needs a bitmask of shape (at least {len(states)}, words), "
                              f"not {tuple(bitmask.shape)}")
        fill = self.fill_next_token_bitmask
        for index, state in enumerate(states):
            if state is not None:
                fill(state, bitmask, index)

    def _advance_slow(self, state: int, tokens: Iterable[int]) -> int | None:
        step = self.step
        for token in tokens:
            if state is None:
                return None
            state = step(state, token)
        return state

    def _packed_row(self, state: int, words: int) -> bytes:
        """The next-token mask of ``state`` as ``words`` little-endian int32 words."""
        if state is None:
            raise BpefstError("no state to fill a mask for: the last token left the language (step returned None)")
        data = self._packed_bytes(state, 4 * words)
        if data is None:
            mask = self.next_token_mask(state)
            if mask.bit_length() > 32 * words:
                raise BpefstError(f"the bitmask holds {32 * words:,} token ids, but token {mask.bit_length() - 1:,} may come "
                                  "next; size it for the whole vocabulary")
            data = mask.to_bytes(4 * words, "little")
        return data

    def _pack(self, state: int, bitmask):
        data = self._packed_row(state, bitmask.shape[-1])
        if type(bitmask).__module__.startswith("torch"):
            import torch

            return torch.frombuffer(bytearray(data), dtype=torch.int32).to(bitmask.device)
        import numpy

        return numpy.frombuffer(data, dtype="<i4")

    def _packed_bytes(self, state: int, length: int) -> bytes | None:
        """The next-token mask as bytes straight from an automaton that makes them (on demand, over the
        compiled core: no Python int of the whole vocabulary on a new state's path), else None."""
        packed_mask = getattr(self.automaton, "packed_mask", None)
        data = packed_mask(state, length) if packed_mask is not None else None
        if data is None or not (self.stop_ids and self.is_accepting(state)):
            return data
        if max(self.stop_ids) >= 8 * length:
            return None  # the int path names the problem
        data = bytearray(data)
        for token in self.stop_ids:
            data[token >> 3] |= 1 << (token & 7)
        return bytes(data)

    def is_accepting(self, state: int) -> bool:
        return state in self.automaton.finals

    def forced_chain(self, state: int) -> list[int]:
        """The tokens ``state`` forces: while a state has one arc and cannot stop, its token."""
        chain = self.forced.get(state)
        if chain is None:
            chain, seen, q = [], set(), state
            while q not in seen and q not in self.automaton.finals and self._single(q):
                seen.add(q)
                token, q = self._only_arc(q)
                chain.append(token)
            self.forced[state] = chain
        return chain

    def _only_arc(self, state: int) -> tuple[int, int]:
        """The token and target of a state with one arc; on demand by its mask and one step (its row is
        not built: rows read the whole lattice)."""
        own = getattr(self.automaton, "allowed_mask", None)
        if own is not None:
            token = own(state).bit_length() - 1
            return token, self.automaton.step(state, token)
        (token, target), = self._row(state).items()
        return token, target

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
