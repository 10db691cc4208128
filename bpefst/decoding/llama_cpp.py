"""A logits processor that keeps llama-cpp-python's generation inside a token automaton.

llama-cpp-python (the ``[llama]`` extra) calls each logits processor once per
generated token with every token of the context so far (prompt and
generated) and the next token's scores, and samples from what the processors
return.  This one reads the tokens generated since its last call, steps its
automaton state over them, and sets the score of every token the state does
not allow to ``-inf`` (the packed bitmask of
:meth:`~bpefst.promotion.GuidedAutomaton.fill_next_token_bitmask`, unpacked
without a Python loop over tokens).  The stop ids (the model's end-of-generation
token) are allowed exactly in accepting states, so a completion ends when it
has spelled a whole match, and llama.cpp ends it there as at any EOS.

The tokenizer must be the model's own: ``bpefst.load("model.gguf")`` reads
it from the same file (see :mod:`bpefst.tokenizer.formats.gguf`)::

    import llama_cpp
    import bpefst
    from bpefst.decoding.llama_cpp import LlamaLogitsProcessor

    llm = llama_cpp.Llama("model.gguf", verbose=False)
    guided = bpefst.promote(bpefst.load("model.gguf"), r"[0-9]{4}-[0-9]{2}-[0-9]{2}").guide(stop_ids=[llm.token_eos()])
    out = llm.create_completion("Today's date: ", max_tokens=32, temperature=0,
                                logits_processor=llama_cpp.LogitsProcessorList([LlamaLogitsProcessor(guided)]))

With the default ``mode="canonical"`` every completion's tokens are the
tokenizer's own encoding of its text; ``mode="agnostic"`` allows every
spelling, as llama.cpp's grammars do.
"""

from __future__ import annotations

import time

from ..errors import BpefstError
from ..promotion import GuidedAutomaton
from .bitmask import _require, allocate_token_bitmask, apply_token_bitmask, check_guided

numpy = _require("numpy", "llama")


class LlamaLogitsProcessor:
    """Mask llama-cpp-python's scores to the tokens the automaton state allows (module docstring).

    One processor follows one generation at a time: a call whose context is
    not the last call's plus one token starts over from the automaton's start
    state, taking that context as the prompt.  ``tokens`` holds what was
    generated so far (the stop token, after which llama.cpp makes no call, is
    not in it); ``mask_seconds`` and ``calls`` add up the time spent in the
    processor, for benchmarks.
    """

    def __init__(self, guided: GuidedAutomaton):
        check_guided(guided, "[llm.token_eos()]")
        self.guided = guided
        self.bitmask = None
        self.mask_seconds = 0.0
        self.calls = 0
        self.reset()

    def reset(self) -> None:
        """Forget the current generation (the next call starts one)."""
        self.context = None
        self.state = self.guided.start
        self.tokens: list[int] = []

    def __call__(self, input_ids, scores):
        began = time.perf_counter()
        context = numpy.asarray(input_ids)
        if not self._continues(context):
            self.reset()
        else:
            self._advance(int(context[-1]))
        self.context = context.copy()
        if self.bitmask is None or self.bitmask.shape[1] * 32 < len(scores):
            self.bitmask = allocate_token_bitmask(1, len(scores))
        self.guided.fill_next_token_bitmask(self.state, self.bitmask)
        masked = numpy.array(scores, dtype=numpy.float32)
        apply_token_bitmask(masked, self.bitmask[0])
        self.mask_seconds += time.perf_counter() - began
        self.calls += 1
        return masked

    def _continues(self, context) -> bool:
        last = self.context
        return last is not None and len(context) == len(last) + 1 and numpy.array_equal(context[:-1], last)

    def _advance(self, token: int) -> None:
        following = self.guided.step(self.state, token)
        if following is None:
            raise BpefstError(f"llama.cpp sampled token {token}, which the automaton does not allow: a logit bias or "
                              f"another processor re-enabled it after this one; put this processor last")
        self.state = following
        self.tokens.append(token)
