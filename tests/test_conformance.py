"""The reference encoder against tiktoken and HF tokenizers on real tokenizers.

Zero mismatches on the shared texts, the first 2 MB of each shared corpus, and
10,000 generated strings (arbitrary Unicode, emoji, whitespace runs, special
tokens, contractions, digits).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ALL_REAL_TOKENIZERS, bpefst_encoder, corpus_prefix, drop_unassigned, oracle_ids, require_shared


def _mismatch_report(kind: str, text: str, expected: list[int], got: list[int]) -> str:
    k = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b), min(len(expected), len(got)))
    return f"{kind}: first mismatch at token {k}: oracle {expected[k:k + 5]} vs bpefst {got[k:k + 5]} near {text[:80]!r}"


def _check(kind: str, text: str) -> None:
    expected = oracle_ids(kind, text)
    got = bpefst_encoder(kind).encode(text, allowed_special="all")
    assert got == expected, _mismatch_report(kind, text, expected, got)


def _shared_texts() -> list[tuple[str, str]]:
    data = require_shared()
    texts = [(p.name, p.read_text(encoding="utf-8")) for p in sorted((data / "cs336").glob("*.txt"))]
    texts.append(("corpus.en", (data / "cs336" / "corpus.en").read_text(encoding="utf-8")))
    return texts


@pytest.mark.parametrize("kind", ALL_REAL_TOKENIZERS)
def test_cs336_texts(kind: str) -> None:
    for _, text in _shared_texts():
        _check(kind, text)


@pytest.mark.parametrize("corpus", ["pydocs", "fortunes"])
@pytest.mark.parametrize("kind", ALL_REAL_TOKENIZERS)
def test_corpus_first_2mb(kind: str, corpus: str) -> None:
    _check(kind, corpus_prefix(corpus))


SPECIALS = ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>"]
EMOJI = ["😀", "👍🏽", "👨‍👩‍👧", "🇩🇪", "❤️", "🤖", "\u200d"]
PIECES = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    st.sampled_from(SPECIALS + EMOJI),
    st.text(alphabet=" \t\n\r\u00a0\u3000\u2028\x0b\x0c", min_size=1, max_size=6),
    st.sampled_from(["'s", "'T", "'ll", "'VE", "don't", "1234567", "3.14", "__init__", "   x", "\n\n", "Ünïcödé", "日本語", "ما", "Ж"]),
    st.from_regex(r"[A-Za-z]{1,10}", fullmatch=True),
    st.from_regex(r"[0-9]{1,8}", fullmatch=True),
)


TEXTS = st.lists(PIECES, max_size=10).map("".join).map(drop_unassigned)


# 10,000 strings drawn ten at a time: most of a drawn example's cost is hypothesis's own (generation, the
# database of examples), not the encoders', so ten per example take half the time of one per example.
@settings(max_examples=1_000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.lists(TEXTS, min_size=10, max_size=10))
def test_generated_strings_all_tokenizers(texts: list[str]) -> None:
    require_shared()
    for text in texts:
        for kind in ALL_REAL_TOKENIZERS:
            _check(kind, text)
