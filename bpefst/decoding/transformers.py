"""A transformers ``LogitsProcessor`` that keeps ``model.generate`` inside a token automaton.

Needs the ``[transformers]`` extra (torch and transformers).  One automaton
state per batch row: at each step the processor reads the token each row
sampled last, steps that row's state, and masks the scores of every token
the new state does not allow (a packed bitmask filled by
:meth:`~bpefst.promotion.GuidedAutomaton.fill_next_token_bitmask` and
unpacked on the tensor's device).  The stop ids (EOS) are allowed exactly in
accepting states, so a row ends when it has spelled a whole match and the
model picks EOS, or is made to when no other token is left; ``generate``
stops a row at its EOS as usual.  Greedy search, sampling, batches and
``num_return_sequences`` all go through the same ``__call__``.

>>> import torch, transformers                                          # doctest: +SKIP
>>> from bpefst.decoding.transformers import AutomatonLogitsProcessor
>>> import bpefst
>>> guided = bpefst.promote(bpefst.load("gpt2/vocab.json"), json_schema=schema).guide(stop_ids=[50256])
>>> out = model.generate(input_ids, logits_processor=transformers.LogitsProcessorList(
...     [AutomatonLogitsProcessor(guided)]), eos_token_id=50256, pad_token_id=50256, max_new_tokens=64)

With the default ``mode="canonical"`` of :func:`bpefst.promote`,
every sequence is the tokenizer's own encoding of its text, the one the
model saw in training; ``mode="agnostic"`` allows every spelling (as
outlines-core, llguidance and xgrammar do).
"""

from __future__ import annotations

from ..errors import BpefstError
from ..promotion import GuidedAutomaton
from .bitmask import _require, allocate_token_bitmask, apply_token_bitmask, check_guided

torch = _require("torch", "transformers")
transformers = _require("transformers", "transformers")

FINISHED = -1  # a row that has sampled a stop id


class AutomatonLogitsProcessor(transformers.LogitsProcessor):
    """Mask the scores of each batch row to the tokens its automaton state allows (module docstring).

    The processor remembers the rows' states between calls; it starts over
    when it sees a new prompt (a call whose sequences are not one token longer
    than the last call's), so one processor serves one ``generate`` call at a
    time.
    """

    def __init__(self, guided: GuidedAutomaton):
        check_guided(guided, "[the model's eos_token_id]")
        self.guided = guided
        self.states: list[int] | None = None
        self.length = -1
        self.bitmask = None

    def reset(self) -> None:
        self.states, self.length, self.bitmask = None, -1, None

    def __call__(self, input_ids, scores):
        batch, length = input_ids.shape
        if self.states is None or length != self.length + 1 or batch != len(self.states):
            self.states = [self.guided.start] * batch  # a new prompt: nothing generated yet
        else:
            self._advance(input_ids[:, -1].tolist())
        self.length = length
        words = (scores.shape[-1] + 31) // 32
        if self.bitmask is None or self.bitmask.shape != (batch, words):
            self.bitmask = allocate_token_bitmask(batch, scores.shape[-1], "torch")
        active = [i for i, state in enumerate(self.states) if state != FINISHED]
        self.guided.fill_next_token_bitmasks([None if state == FINISHED else state for state in self.states], self.bitmask)
        if active:
            mask = self.bitmask.to(scores.device, non_blocking=True)
            apply_token_bitmask(scores, mask, rows=None if len(active) == batch else active)
        return scores

    def _advance(self, tokens: list[int]) -> None:
        guided = self.guided
        for i, token in enumerate(tokens):
            state = self.states[i]
            if state == FINISHED:
                continue
            if guided.is_stop(token) and guided.is_accepting(state):
                self.states[i] = FINISHED
                continue
            following = guided.step(state, token)
            if following is None:
                raise BpefstError(f"batch row {i} sampled token {token}, which its automaton does not allow: another "
                                  "logits processor or warper changed the scores after this one; put this one last")
            self.states[i] = following

    def finished(self) -> list[bool]:
        """Per row: whether it sampled a stop id before the last call (``generate`` makes no call after
        the step at which every row has stopped)."""
        return [state == FINISHED for state in (self.states or [])]
