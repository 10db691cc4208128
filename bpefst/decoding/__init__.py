"""Constrained decoding: bpefst token automata in a generation loop.

- ``bitmask``: packed int32 token bitmasks (the xgrammar/llguidance layout),
  allocated and applied to logits, numpy or torch
- ``transformers``: a ``LogitsProcessor`` for ``model.generate`` (the
  ``[transformers]`` extra)
- ``llama_cpp``: a logits processor for llama-cpp-python's ``generate`` and
  ``create_completion`` with GGUF models (the ``[llama]`` extra)

The automata come from ``bpefst.promote(tokenizer, regex or json_schema=...).guide()``
(:class:`~bpefst.promotion.GuidedAutomaton`).  A loop without any
framework, for engines that take a mask function (vLLM, SGLang)::

    import numpy as np
    from bpefst.decoding import allocate_token_bitmask, apply_token_bitmask
    import bpefst
    from bpefst.tokenizer import load_tokenizer

    model = load_tokenizer("../shared/data/gpt2/vocab.json")
    guided = bpefst.promote(model, r"(yes|no|maybe)").guide(stop_ids=[50256])
    bitmask = allocate_token_bitmask(1, 50257)
    state, out = guided.start, []
    while True:
        logits = np.random.default_rng(len(out)).standard_normal(50257)  # your model here
        guided.fill_next_token_bitmask(state, bitmask)
        apply_token_bitmask(logits, bitmask[0])
        token = int(logits.argmax())
        if guided.is_stop(token):
            break
        out.append(token)
        state = guided.step(state, token)
"""

from .bitmask import allocate_token_bitmask, apply_token_bitmask, bitmask_words

__all__ = ["allocate_token_bitmask", "apply_token_bitmask", "bitmask_words"]
