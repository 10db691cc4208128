"""Validation of id streams against "decode, re-encode, compare" (the check a user would write)."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bpefst.bpe import MergeForest, build_canonical, is_canonical_pair
from bpefst.errors import BpefstError
from bpefst.pipeline.validate import Validator, parse_id_blocks
from bpefst.tokenizer import PRESETS, ReferenceEncoder, load_tokenizer
from conftest import corpus_prefix, require_shared
from small_models import random_byte_model, random_char_model

REAL = {"cl100k": "tiktoken/cl100k_base.tiktoken.gz", "o200k": "tiktoken/o200k_base.tiktoken.gz", "gpt2": "gpt2/vocab.json", "wikitext8000": "wikitext-bpe/tokenizer_8000.json"}


@lru_cache(maxsize=None)
def real(name: str):
    model = load_tokenizer(require_shared() / REAL[name])
    return model, ReferenceEncoder(model), build_canonical(MergeForest.from_model(model), "implicit")


def oracle_verdict(encoder: ReferenceEncoder, ids: list[int]) -> int | None:
    """Index of the first difference between ids and encode(decode(ids)), or None when equal."""
    if encoder.model.is_byte_level:
        again = encoder.encode_bytes(encoder.decode_bytes(ids), allowed_special="all")
    else:
        again = encoder.encode(encoder.decode(ids), allowed_special="all")
    if again == ids:
        return None
    return next((k for k, (a, b) in enumerate(zip(ids, again)) if a != b), min(len(ids), len(again)))


def validate(model, automaton, ids, block_tokens=1 << 16, pretokenize=True):
    validator = Validator(model, automaton, pretokenize=pretokenize, block_tokens=block_tokens)
    step = max(1, block_tokens // 3)
    return validator.check_stream(ids[i : i + step] for i in range(0, len(ids), step))


# Texts that may follow a prefix of ids: one that re-encodes to ids followed by more proves the prefix
# can still be continued canonically.
CONTINUATIONS = ["", "a", " a", "A", "1", " 1", ".", " .", "\n", " ", "'", "é", "😀", "<|endoftext|>"]


def can_continue(encoder: ReferenceEncoder, prefix: list[int]) -> bool:
    """Is there a witness that ``prefix`` starts a canonical stream (some text after it keeps it)?"""
    byte_level = encoder.model.is_byte_level
    text = encoder.decode_bytes(prefix) if byte_level else encoder.decode(prefix)
    for tail in CONTINUATIONS:
        again = (encoder.encode_bytes(text + tail.encode(), allowed_special="all") if byte_level
                 else encoder.encode(text + tail, allowed_special="all"))
        if again[: len(prefix)] == prefix:
            return True
    return False


def assert_agrees(model, encoder, automaton, ids, block_tokens=1 << 16):
    expected = oracle_verdict(encoder, ids)
    violation = validate(model, automaton, ids, block_tokens)
    if expected is None:
        assert violation is None, violation and violation.describe(model)
    else:
        assert violation is not None, f"missed a non-canonical stream (first difference at {expected})"
        # The violation is the first token no canonical stream can have after the ones before it: at or
        # after the first difference from re-encoding, and later only where the tokens before it can
        # still be continued (a later token may change the chunks of earlier ones: " .", "'." then ".DESC").
        assert expected <= violation.position, (expected, violation.describe(model))
        assert violation.position <= expected + 1 or can_continue(encoder, ids[: violation.position]), (
            expected, violation.describe(model))
        # the message names the stream's own tokens, also after earlier blocks were settled and dropped
        assert violation.token == ids[violation.position], violation.describe(model)
        assert violation.previous == (ids[violation.position - 1] if violation.position else None), violation.describe(model)


def mutate(ids: list[int], model, forest: MergeForest, rng: random.Random) -> list[int]:
    """Make a (probably) non-canonical variant: split a token, merge two, or swap in another."""
    ids = list(ids)
    k = rng.randrange(len(ids))
    kind = rng.randrange(3)
    token = ids[k]
    if kind == 0 and token in model.vocab and forest.left[token] >= 0:
        ids[k : k + 1] = [forest.left[token], forest.right[token]]
    elif kind == 1 and k + 1 < len(ids):
        joined = model.token_to_id.get(model.vocab.get(ids[k], b"") + model.vocab.get(ids[k + 1], b""))
        if joined is not None:
            ids[k : k + 2] = [joined]
    else:
        ids[k] = rng.choice(list(model.vocab))
    return ids


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2"])
def test_real_tokenizer_output_is_canonical(name: str) -> None:
    model, encoder, automaton = real(name)
    for text in (corpus_prefix("pydocs", 200_000), corpus_prefix("fortunes", 200_000)):
        ids = encoder.encode(text, allowed_special="all")
        for block in (1 << 16, 50):
            assert validate(model, automaton, ids, block) is None


@pytest.mark.parametrize("name", ["cl100k", "gpt2", "wikitext8000"])
def test_mutated_streams_agree_with_reencoding(name: str) -> None:
    model, encoder, automaton = real(name)
    text = corpus_prefix("fortunes", 20_000)
    base = encoder.encode(text, allowed_special="all")
    rng = random.Random(5)
    for trial in range(150):
        start = rng.randrange(len(base) - 60)
        ids = mutate(base[start : start + 60], model, automaton.forest, rng)
        assert_agrees(model, encoder, automaton, ids, block_tokens=rng.choice([8, 1 << 16]))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=st.lists(st.sampled_from(list("ab c\n\t1234.,'é😀") + ["<|endoftext|>", "   ", "ll", "don't"]), max_size=30).map("".join), seed=st.integers(0, 10**6))
@example(text=" .'.a", seed=103)  # a later token changes earlier chunks (found by hypothesis in a loaded run)
def test_generated_streams_cl100k(text: str, seed: int) -> None:
    model, encoder, automaton = real("cl100k")
    ids = encoder.encode(text, allowed_special="all")
    assert_agrees(model, encoder, automaton, ids, block_tokens=6)
    if ids:
        assert_agrees(model, encoder, automaton, mutate(ids, model, automaton.forest, random.Random(seed)), block_tokens=6)


def test_injected_violations_are_reported_with_the_canonical_span() -> None:
    model, encoder, automaton = real("cl100k")
    hello = encoder.encode(" hello world")
    # a multi-byte token spelled out byte by byte
    spelled = [model.token_to_id[bytes([b])] for b in b" hello"] + hello[1:]
    violation = validate(model, automaton, spelled)
    assert violation.position == 1 and violation.canonical == encoder.encode(" h")  # " h" then "e" ...
    # two tokens across a pre-tokenization boundary that BPE alone would not produce: canonical after all
    text_ids = encoder.encode(corpus_prefix("pydocs", 20_000))
    x, y = next((u, v) for u, v in zip(text_ids, text_ids[1:]) if not is_canonical_pair(automaton.forest, u, v))
    assert validate(model, automaton, [x, y]) is None and oracle_verdict(encoder, [x, y]) is None
    assert validate(model, automaton, [x, y], pretokenize=False) is not None
    # ... and the same two tokens glued into one chunk's worth of text are not canonical
    assert oracle_verdict(ReferenceEncoder(replace(model, pattern=None)), [x, y]) is not None
    # a special token split into ordinary pieces
    pieces = encoder.encode_ordinary("x<|endoftext|>")
    violation = validate(model, automaton, pieces)
    assert violation is not None and "special token" in violation.reason
    assert oracle_verdict(encoder, pieces) is not None
    # ... shown whole, with the special's id in how the tokenizer encodes that text
    assert b"<|endoftext|>" in violation.span and model.specials["<|endoftext|>"] in violation.canonical, violation.describe(model)


def test_across_boundary_pair_is_exempt_but_bpe_only_check_flags_it() -> None:
    model, encoder, automaton = real("cl100k")
    ids = encoder.encode(corpus_prefix("pydocs", 5_000))
    assert validate(model, automaton, ids) is None
    violation = validate(model, automaton, ids, pretokenize=False)
    assert violation is not None and violation.reason == "BPE merges across this pair"
    chunks = encoder.pretokenizer.chunks(encoder.decode(ids))
    boundary = len(encoder.decode(ids[: violation.position]))
    assert boundary in set(itertools.accumulate(map(len, chunks)))  # the flagged pair straddles a chunk boundary


def test_small_models_without_shared_data() -> None:
    for seed in range(40):
        model = random_byte_model(seed, pattern=PRESETS["gpt2"])
        encoder = ReferenceEncoder(model)
        automaton = build_canonical(MergeForest.from_model(model), "explicit")
        rng = random.Random(seed)
        text = "".join(rng.choice(["a", "b", "c", " ", "ab", "  ", "<|end|>"]) for _ in range(30))
        ids = encoder.encode(text, allowed_special="all")
        assert_agrees(model, encoder, automaton, ids, block_tokens=5)
        assert_agrees(model, encoder, automaton, mutate(ids, model, automaton.forest, rng), block_tokens=5)
    model = random_char_model(3)
    encoder = ReferenceEncoder(model)
    automaton = build_canonical(MergeForest.from_model(model), "explicit")
    ids = encoder.encode("abc cab bba")
    assert validate(model, automaton, ids) is None
    assert_agrees(model, encoder, automaton, mutate(ids, model, automaton.forest, random.Random(1)))


def test_bad_ids() -> None:
    model = random_byte_model(1)
    automaton = build_canonical(MergeForest.from_model(model), "explicit")
    with pytest.raises(BpefstError, match="not in the vocabulary"):
        validate(model, automaton, [1, 2, 10**6])
    with pytest.raises(BpefstError, match="not a non-negative integer"):
        list(parse_id_blocks([b"1 2 -3 4"]))
    with pytest.raises(BpefstError, match="token 3"):
        list(parse_id_blocks([b"1 2 ", b"3 x"]))
    assert [i for block in parse_id_blocks([b"1 2", b"3 4\n5"]) for i in block] == [1, 23, 4, 5]
