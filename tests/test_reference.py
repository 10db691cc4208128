"""The reference encoder against BPE by definition, on random proper merge lists."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.errors import BpefstError
from bpefst.tokenizer import PRESETS, BPEModel, ReferenceEncoder
from small_models import naive_bpe, random_byte_model, random_char_model


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**6), text=st.text(alphabet="abc ", max_size=30))
def test_priority_queue_equals_merges_in_rank_order_byte_level(seed: int, text: str) -> None:
    model = random_byte_model(seed)
    encoder = ReferenceEncoder(model)
    symbols = list(text.encode())
    assert encoder.bpe(symbols) == naive_bpe(model, symbols)


@settings(max_examples=300, deadline=None)
@given(seed=st.integers(0, 10**6), words=st.lists(st.text(alphabet="abc", min_size=1, max_size=10), max_size=5))
def test_char_level_with_end_of_word_suffix(seed: int, words: list[str]) -> None:
    model = random_char_model(seed)
    encoder = ReferenceEncoder(model)
    expected = []
    for word in words:
        symbols = [model.token_to_id[c] for c in word[:-1]] + [model.token_to_id[word[-1] + "▁"]]
        expected += naive_bpe(model, symbols)
    assert encoder.encode(" ".join(words)) == expected
    assert encoder.decode(expected) == " ".join(words)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40))
def test_byte_level_accepts_any_bytes_and_round_trips(data: bytes) -> None:
    encoder = ReferenceEncoder(random_byte_model(7, pattern=PRESETS["gpt2"]))
    assert encoder.decode_bytes(encoder.encode_bytes(data)) == data


def test_char_level_rejects_invalid_utf8_with_offset() -> None:
    encoder = ReferenceEncoder(random_char_model(1))
    with pytest.raises(BpefstError, match="byte offset 3"):
        encoder.encode_bytes(b"abc\xff")


def test_special_tokens_policy() -> None:
    model = random_byte_model(3)
    encoder = ReferenceEncoder(model)
    end = model.specials["<|end|>"]
    assert encoder.encode("ab<|end|>c", allowed_special="all") == [*encoder.encode("ab"), end, *encoder.encode("c")]
    with pytest.raises(BpefstError, match="not allowed"):
        encoder.encode("ab<|end|>c")
    assert end not in encoder.encode_ordinary("ab<|end|>c")
    assert encoder.decode(encoder.encode_ordinary("ab<|end|>c")) == "ab<|end|>c"


def test_unknown_symbols_follow_hf() -> None:
    base = random_char_model(5, suffix=None)
    dropped = ReferenceEncoder(base)
    assert dropped.encode("axb") == dropped.encode("ab")  # no unk token: HF drops the symbol
    vocab = dict(base.vocab)
    vocab[len(vocab)] = "[UNK]"
    for fuse, expected_unks in ((False, 2), (True, 1)):
        model = BPEModel(level="char", vocab=vocab, merges=base.merges, unk_token="[UNK]", fuse_unk=fuse)
        ids = ReferenceEncoder(model).encode("axyb")
        assert ids.count(model.token_to_id["[UNK]"]) == expected_unks


def test_improper_and_duplicate_merges_are_rejected() -> None:
    vocab = {0: b"a", 1: b"b", 2: b"ab", 3: b"abb"}
    with pytest.raises(BpefstError, match="no earlier merge builds"):
        BPEModel(level="byte", vocab=vocab, merges=[(2, 1), (0, 1)])
    with pytest.raises(BpefstError, match="listed twice"):
        BPEModel(level="byte", vocab=vocab, merges=[(0, 1), (0, 1)])
    with pytest.raises(BpefstError, match="not in the vocabulary"):
        BPEModel(level="byte", vocab=vocab, merges=[(1, 0)])
