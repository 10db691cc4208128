"""The token-level validate path (``TokenChunks``) against independent oracles.

Verdicts: ``encode(decode(ids), allowed_special="all") == ids`` with tiktoken
(cl100k, o200k) and HF ``tokenizers`` (GPT-2) on streams that decode to valid
UTF-8, and with the reference encoder's ``encode_bytes(decode_bytes(ids))`` on
any stream.  Diagnostics: the violation must be the one the decoding checker
(the pre-existing algorithm, which re-runs the pattern on decoded blocks)
reports for the same stream.  Streams are canonical encodings of random text
built from the pieces the chunk rules care about (contractions in both cases,
digit runs, whitespace runs before letters, line breaks, punctuation runs,
slashes, marks and letters of other scripts, special tokens and their
fragments), and mutations of them (a token split into its merge parts, two
tokens merged, a token replaced by a random one, by a token that splits a UTF-8
character, or by a special token).
"""

from __future__ import annotations

import random
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpefst.pipeline.validate import DecodingValidator, Validator, parse_id_blocks
from conftest import corpus_prefix, hf_gpt2_oracle, tiktoken_oracle
from test_validate import mutate, oracle_verdict, real

PIECES = ["a", "b", "S", "t", "I", "'s", "'S", "'ll", "'LL", "'re", "'ve", "'m", "'d", "'x", "'", "don't", "DON'T",
          " the", " The", "THE", "1", "12", "1234567", " 42", "  ", "   ", "    ", "\t", "\n", "\n\n", "\r\n", " \n",
          "!", "...", " (", "//", "/", "a/b", "é", "É", "ß", "Ж", "жизнь", "中文", "日本語", "😀", "🙂🙃", "\u0301",
          "e\u0301", "ʰ", "ǅ", "x²", "٣", "<|endoftext|>", "<|", "|>", "<|end", "endoftext", "<", ">", "<|endofprompt|>"]
ORACLES = {"cl100k": "cl100k_base", "o200k": "o200k_base", "gpt2": "gpt2"}


def peer_roundtrip(name: str, model, ids: list[int]) -> bool | None:
    """tiktoken / HF tokenizers: does ``encode(decode(ids))`` give ``ids`` back? None when the ids do not
    decode to valid UTF-8 (the peers' text APIs cannot carry those bytes)."""
    try:
        text = b"".join(model.token_bytes(t) for t in ids).decode("utf-8")
    except UnicodeDecodeError:
        return None
    if name == "gpt2":
        return hf_gpt2_oracle().encode(text).ids == ids
    return tiktoken_oracle(ORACLES[name]).encode(text, allowed_special="all") == ids


def random_text(rng: random.Random, length: int) -> str:
    return "".join(rng.choice(PIECES) for _ in range(length))


def bpefst_encoder_for(model):
    return next(encoder for name in ORACLES if (encoder := real(name)[1]).model is model)


@lru_cache(maxsize=None)
def partial_tokens(name: str) -> list[int]:
    return split_character_tokens(real(name)[0])


def split_character_tokens(model) -> list[int]:
    """Tokens that are not whole UTF-8 characters (a stream with them decodes to invalid text unless a
    neighbour completes the character)."""
    out = []
    for t in model.vocab:
        try:
            model.token_bytes(t).decode("utf-8")
        except UnicodeDecodeError:
            out.append(t)
    return sorted(out)[:: max(1, len(out) // 200)]


def mutate_more(ids: list[int], model, automaton, rng: random.Random, partial: list[int]) -> list[int]:
    kind = rng.randrange(6)
    if kind < 3 or not ids:
        return mutate(ids, model, automaton.forest, rng) if ids else ids
    ids = list(ids)
    k = rng.randrange(len(ids) + 1)
    if kind == 3:
        ids.insert(k, rng.choice(partial))
    elif kind == 4:
        ids.insert(k, rng.choice(sorted(model.specials.values())))
    else:  # a special token's text in ordinary tokens: spelled byte by byte, or as ordinary text encodes it
        text = rng.choice(sorted(model.specials))
        spelled = [model.token_to_id[bytes([b])] for b in text.encode()]
        ids[k:k] = spelled if rng.random() < 0.3 else bpefst_encoder_for(model).encode_ordinary(text)
    return ids


@lru_cache(maxsize=None)
def validators(name: str) -> tuple[Validator, DecodingValidator]:
    """One of each per tokenizer (a check starts afresh; only the cache of canonical pairs is kept)."""
    model, _, automaton = real(name)
    return Validator(model, automaton), DecodingValidator(model, automaton)


def check_against_oracles(name: str, ids: list[int], rng: random.Random) -> None:
    model, encoder, automaton = real(name)
    fast, decoding = validators(name)
    expected = oracle_verdict(encoder, ids)
    peer = peer_roundtrip(name, model, ids)
    if peer is not None:
        assert peer == (expected is None), "the reference encoder and the peer disagree"
    step = rng.choice([1, 3, 17, 1 << 16])
    violation = fast.check_stream(ids[i : i + step] for i in range(0, len(ids), step))
    if expected is None:
        assert violation is None, violation.describe(model)
        assert fast.tokens_seen == len(ids)
    else:
        assert violation is not None, f"missed a non-canonical stream (first difference at {expected})"
        # near the first difference: usually at it or one after; a token that crosses a chunk boundary
        # can be named one before it, and a special token's text spelled in ordinary tokens at a bad pair
        # inside it when there is one (as the decoding checker has always reported them)
        assert expected - 1 <= violation.position, (expected, violation.describe(model))
    # the same diagnostic as the decoding checker on the same stream (one block each)
    whole = fast.check(ids)
    slow = decoding.check(ids)
    assert (whole is None) == (slow is None)
    if slow is not None:
        assert (whole.position, whole.previous, whole.token, whole.reason, whole.span, whole.canonical) == (
            slow.position, slow.previous, slow.token, slow.reason, slow.span, slow.canonical)


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2"])
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), length=st.integers(0, 40))
def test_random_streams_agree_with_the_oracles(name: str, seed: int, length: int) -> None:
    model, encoder, automaton = real(name)
    rng = random.Random(seed)
    ids = encoder.encode(random_text(rng, length), allowed_special="all")
    check_against_oracles(name, ids, rng)
    partial = partial_tokens(name)
    for _ in range(3):
        check_against_oracles(name, mutate_more(ids, model, automaton, rng, partial), rng)


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2"])
def test_canonical_corpora_are_decided_without_decoding(name: str) -> None:
    """Real text (English and multilingual): canonical, and decided by the token walk alone (the decoding
    checker never runs), in blocks of any size."""
    model, encoder, automaton = real(name)
    for corpus in ("pydocs", "fortunes"):
        ids = encoder.encode(corpus_prefix(corpus, 100_000), allowed_special="all")
        assert oracle_verdict(encoder, ids[:3000]) is None
        for step in (len(ids), 4096, 7):
            validator = Validator(model, automaton)
            assert validator.check_stream(ids[i : i + step] for i in range(0, len(ids), step)) is None
            assert validator.decoding.tokens_seen == 0 and validator.tokens_seen == len(ids)


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2"])
def test_corpus_mutations_match_the_decoding_checker(name: str) -> None:
    """One mutation deep inside a long stream: the fast path restarts the decoding checker before it and
    reports what that checker reports for the whole stream, and what the oracle says."""
    model, encoder, automaton = real(name)
    base = encoder.encode(corpus_prefix("fortunes", 60_000), allowed_special="all")
    rng = random.Random(11)
    fast, decoding = validators(name)
    for _ in range(25):
        ids = mutate_more(base, model, automaton, rng, partial_tokens(name))
        start = rng.randrange(0, len(ids) // 2)
        window = ids[start:]
        whole = fast.check(window)
        slow = decoding.check(window)
        assert (whole is None) == (slow is None)
        if slow is not None:
            assert (whole.position, whole.previous, whole.token, whole.reason, whole.canonical) == (
                slow.position, slow.previous, slow.token, slow.reason, slow.canonical)
        expected = oracle_verdict(encoder, window)
        assert (expected is None) == (whole is None)


def test_parsed_ids_match_int_split() -> None:
    """The JSON-based id parser reads exactly what ``int`` of each word gives, and sends everything else
    to the word-by-word parser (which names the bad word)."""
    rng = random.Random(3)
    for _ in range(200):
        words = [str(rng.choice([0, 7, 65535, 100256, 10**19, 10**20 - 1])) for _ in range(rng.randrange(0, 30))]
        if words and rng.random() < 0.3:
            words[rng.randrange(len(words))] = rng.choice(["007", "0", "00"])
        text = "".join(w + rng.choice([" ", "\n", "\t", "  ", "\r\n"]) for w in words).encode()
        pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
        assert [i for block in parse_id_blocks(pieces) for i in block] == [int(w) for w in words]
    for bad, message in ((b"1 2 " + b"9" * 21, "more than 20 digits"), (b"1 2 1e5", "'1e5' is not"), (b"1 -2", "'-2' is not"),
                         (b"1 " + b"1" * 5000, "more than 20 digits"), (b"[1, 2]", "is not a non-negative")):
        with pytest.raises(Exception, match=message):
            list(parse_id_blocks([bad]))


@pytest.mark.parametrize("with_numpy", [True, False])
def test_large_blocks_parse_as_int_split(with_numpy: bool, monkeypatch) -> None:
    """Blocks large enough for numpy's reader (and the JSON reader without numpy) give ``int`` of each
    word, including ids of 18-20 digits (beyond int64: those blocks must not go to numpy) and leading zeros."""
    from bpefst.pipeline import validate

    if with_numpy:
        pytest.importorskip("numpy")
    else:
        monkeypatch.setattr(validate, "_numpy", lambda: None)
    rng = random.Random(5)
    for big in (None, 10**18 - 1, 10**19 + 7, 2**63, 10**20 - 1):
        words = [str(rng.randrange(300_000)) for _ in range(30_000)] + ["007", "0"]
        if big is not None:
            words[rng.randrange(len(words))] = str(big)
        rng.shuffle(words)
        text = "".join(w + rng.choice([" ", "\n", "\t", "  ", "\r\n"]) for w in words).encode()
        assert len(text) > 1 << 16
        assert [i for block in parse_id_blocks([text]) for i in block] == [int(w) for w in words]

def test_restart_keeps_streaming_memory_bounded() -> None:
    """A long canonical stream in small blocks keeps only a short history for restarts."""
    model, encoder, automaton = real("cl100k")
    ids = encoder.encode(corpus_prefix("pydocs", 200_000), allowed_special="all")
    validator = Validator(model, automaton)
    seen = []

    def blocks():
        for i in range(0, len(ids), 500):
            yield ids[i : i + 500]
            seen.append(i)

    assert validator.check_stream(blocks()) is None
    assert len(seen) == (len(ids) + 499) // 500
    assert validator.longest_history < 500 + 1000, validator.longest_history
