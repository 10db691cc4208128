"""The cache-miss routes of ``bpefst.bpe.chunk_encoder`` against the reference encoder, route by route.

Oracles: the textbook BPE of :class:`~bpefst.tokenizer.ReferenceEncoder` (a
heap over the merge table), BPE by definition (``naive_bpe``: each merge in
rank order over the whole string) for the random models, and the eager
:class:`~bpefst.bpe.MergeForest` for reachability.  Chunks come from every
Unicode script (any assigned code point below U+30000) and from the scripts'
own letters, so multi-byte characters split and join in every way.
"""

from __future__ import annotations

import random
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.bpe import MergeForest
from bpefst.bpe import backtracking as backtracking_module
from bpefst.bpe.chunk_encoder import ChunkEncoder
from bpefst.pipeline.encoder import Tokenizer
from bpefst.tokenizer import BPEModel, ReferenceEncoder
from bpefst.tokenizer.reference import encode_text
from conftest import bpefst_encoder
from small_models import naive_bpe, random_byte_model

# A few letters of many scripts: their UTF-8 bytes are the alphabets of the random models.
SCRIPT_SAMPLES = "aé ßžкяαωאبदக한中文日本語🙂𝔸ℵ\u0301\t\n"
ASSIGNED = [c for c in map(chr, range(0x20, 0x30000)) if unicodedata.category(c) not in ("Cn", "Cs", "Co")]


def any_script_text(rng: random.Random, size: int) -> str:
    """Random text mixing characters of every script with the sample letters (so merges apply)."""
    pool = SCRIPT_SAMPLES if rng.random() < 0.6 else None
    return "".join(rng.choice(pool) if pool and rng.random() < 0.8 else rng.choice(ASSIGNED) for _ in range(size))


def routes(encoder: ChunkEncoder, chunk: str) -> dict[str, list[int] | None]:
    """Every route's answer for one chunk (a route may decline with None)."""
    data = encode_text(chunk)
    return {
        "encode": encoder.encode(chunk),
        "textbook": encoder.bpe_bytes(data),
        "backtracking": encoder.backtracking.encode(data),
    }


def reference_ids(reference: ReferenceEncoder, chunk: str) -> list[int]:
    return reference.bpe(reference.spell(chunk))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), merges=st.integers(0, 120), data=st.data())
def test_every_route_is_bpe_on_random_merge_lists(seed: int, merges: int, data) -> None:
    rng = random.Random(seed)
    model = random_byte_model(seed, alphabet=SCRIPT_SAMPLES.encode(), num_merges=merges)
    encoder = ChunkEncoder(model)
    assert encoder.forest is not None  # random_byte_model makes one merge per token, in rank order
    for _ in range(5):
        chunk = any_script_text(rng, data.draw(st.integers(1, 60)))
        expected = naive_bpe(model, list(encode_text(chunk)))
        for route, ids in routes(encoder, chunk).items():
            if ids is not None:
                assert list(ids) == expected, (route, chunk)


def test_reachability_is_the_eager_forests() -> None:
    for seed in range(40):
        model = random_byte_model(seed, alphabet=SCRIPT_SAMPLES.encode()[:12], num_merges=60)
        eager = MergeForest.from_model(model)
        lazy = ChunkEncoder(model).forest
        order = list(model.vocab)
        random.Random(seed).shuffle(order)  # lazily decided in any order
        assert [lazy.reachable(t) for t in order] == [eager.reachable[t] for t in order]
        for t in order:  # and both are the definition: BPE of the token's own bytes gives the token
            assert lazy.reachable(t) == (naive_bpe(model, list(model.vocab[t])) == [t])


@pytest.mark.parametrize("kind", ["cl100k_base", "o200k_base", "gpt2"])
def test_every_route_on_real_tokenizers_and_every_script(kind: str) -> None:
    reference = bpefst_encoder(kind)
    encoder = ChunkEncoder(reference.model)
    assert encoder.forest is not None
    rng = random.Random(kind)
    for _ in range(400):
        chunk = any_script_text(rng, rng.choice([1, 2, 3, 5, 8, 20, 60, 200]))
        expected = reference_ids(reference, chunk)
        for route, ids in routes(encoder, chunk).items():
            if ids is not None:
                assert list(ids) == expected, (route, chunk)


def test_long_runs_of_one_script_through_the_backtracking_route(shared_data) -> None:
    reference = bpefst_encoder("cl100k_base")
    encoder = ChunkEncoder(reference.model)
    rng = random.Random(5)
    runs = {
        "cjk": "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(300)),
        "cyrillic": "".join(rng.choice("абвгдежзийклмнопрстуфхцчшщыэюя") for _ in range(500)),
        "letters": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(700)),
        "one letter": "a" * 3000,
        "spaces": " " * 3000,
        "emoji": "🙂🎉👍🏽" * 100,
    }
    for name, run in runs.items():
        ids = encoder.backtracking.encode(encode_text(run))
        assert ids is not None, name
        assert ids == reference_ids(reference, run), name


def test_over_budget_falls_back_to_the_transducer(monkeypatch) -> None:
    model = random_byte_model(0, alphabet=b"ab", num_merges=20)  # these texts need backtracking
    reference = ReferenceEncoder(model)
    monkeypatch.setattr(backtracking_module, "STEPS_PER_BYTE", 0)
    monkeypatch.setattr("bpefst.bpe.chunk_encoder.SHORT_CHUNK", 4)
    monkeypatch.setattr("bpefst.bpe.chunk_encoder.MEDIUM_BEFORE_FOREST", 0)
    for text in ("abba" * 30, "bba" * 40):
        assert ChunkEncoder(model).backtracking.encode(text.encode()) is None  # over the budget left
        tok = Tokenizer(model, engine="pure")  # the pure path's routes (the compiled core has its own)
        assert tok.encode_ordinary(text) == reference.encode_ordinary(text)
        assert "transducer" in vars(tok)  # it took over


def test_a_token_made_by_two_merges_uses_only_the_textbook_route() -> None:
    # bbb comes from (b, bb) and from (bb, b); with two producers the lazy forest's facts do not hold
    # (see merge_forest on rank inversions), so only textbook BPE runs.
    vocab = {i: bytes([i]) for i in range(256)}
    a, b = b"ab"
    vocab[256], vocab[257], vocab[258] = b"bb", b"bbb", b"abbb"
    model = BPEModel(level="byte", vocab=vocab, merges=[(b, b), (b, 256), (256, b), (a, 257)], pattern=None)
    encoder = ChunkEncoder(model)
    assert encoder.forest is None
    reference = ReferenceEncoder(model)
    for text in ("abbb", "bbb", "abbbb", "babbbab", "b" * 7):
        assert list(encoder.encode(text)) == reference.bpe(reference.spell(text))
