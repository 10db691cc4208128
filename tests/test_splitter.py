"""The ASCII fast path of pre-tokenization equals the `regex` module's findall.

Oracle: ``regex.compile(PRESETS[name]).findall`` — the engine the reference
encoder uses and the conformance tests check against tiktoken and HF.
"""

from __future__ import annotations

import itertools
import random
import re

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.tokenizer.pretokenize import PRESETS
from bpefst.tokenizer.splitter import Splitter, ascii_pattern
from conftest import corpus_prefix

# One character of every kind the presets tell apart on ASCII: each literal they
# name (contraction letters in both cases, apostrophe, \r, \n, space, '/'),
# other letters, digits, the other whitespace, punctuation, controls, DEL.
ASCII_KINDS = "'sSdDmMtTlLvVeErRaZ09 \n\r\t\x0b\x0c/._\x00\x1c\x7f"


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_translation_is_exact_on_every_short_ascii_string(name: str) -> None:
    expected = regex.compile(PRESETS[name]).findall
    fast = re.compile(ascii_pattern(PRESETS[name])).findall
    for length in range(1, 4):
        for letters in itertools.product(ASCII_KINDS, repeat=length):
            text = "".join(letters)
            assert fast(text) == expected(text), repr(text)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_translation_is_exact_on_every_ascii_character_pair(name: str) -> None:
    expected = regex.compile(PRESETS[name]).findall
    fast = re.compile(ascii_pattern(PRESETS[name])).findall
    for a in map(chr, range(128)):
        for b in map(chr, range(128)):
            for text in (a + b, " " + a + b + "\n", a + "'" + b + b):
                assert fast(text) == expected(text), repr(text)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_translation_is_exact_on_random_ascii_text(name: str) -> None:
    expected = regex.compile(PRESETS[name]).findall
    fast = re.compile(ascii_pattern(PRESETS[name])).findall
    rng = random.Random(name)
    pieces = list(ASCII_KINDS) + ["'ll", "'ve", "'re", "  ", "\r\n", "\n\n", " \n", "123456", "...", "word"]
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        assert fast(text) == expected(text), repr(text)


MIXED_PIECES = ["word", " word", "é", " ü", "日本語", "😀", "\u2028", "\xa0", "\x85", "\udc80", "7", "123456",
                "'s", "'LL", " ", "  ", "\t", "\n", "\r\n", "\n\n", " \n", ".", "!?", "_", "/", "%\n/"]


@pytest.mark.parametrize("name", sorted(PRESETS) + ["custom"])
def test_splitter_equals_regex_on_mixed_text(name: str) -> None:
    pattern = PRESETS.get(name, r"\p{L}+|\s+|.")
    expected = regex.compile(pattern).findall
    splitter = Splitter(pattern)
    split = splitter.findall
    rng = random.Random(name)
    for _ in range(5_000):
        text = "".join(rng.choice(MIXED_PIECES) for _ in range(rng.randint(0, 60)))
        assert split(text) == expected(text), repr(text)
        if splitter._fast is not None and not text.isascii():  # the cutting path, which dense text skips
            assert splitter._mixed(text) == expected(text), repr(text)
    # long texts: mostly ASCII lines with a few non-ASCII ones, so the cutting runs many times
    for _ in range(50):
        lines = []
        for _ in range(rng.randint(1, 200)):
            line = "".join(rng.choice(MIXED_PIECES[:1] + MIXED_PIECES[10:]) for _ in range(rng.randint(0, 12)))
            if rng.random() < 0.1:
                line += rng.choice(MIXED_PIECES[2:10])
            lines.append(line)
        text = "\n".join(lines)
        assert split(text) == expected(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cn",)), max_size=80))
def test_splitter_equals_regex_on_generated_text(text: str) -> None:
    for pattern in PRESETS.values():
        assert Splitter(pattern).findall(text) == regex.compile(pattern).findall(text)


@pytest.mark.parametrize("corpus", ["pydocs", "fortunes"])
def test_splitter_equals_regex_on_the_corpora(corpus: str) -> None:
    text = corpus_prefix(corpus, 1_000_000)
    for name in ("gpt2", "cl100k", "o200k"):
        assert Splitter(PRESETS[name]).findall(text) == regex.compile(PRESETS[name]).findall(text), name


def test_no_pattern_means_one_chunk() -> None:
    split = Splitter(None).findall
    assert split("") == [] and split("a b\n") == ["a b\n"]
