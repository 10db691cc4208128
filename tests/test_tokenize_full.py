"""Opt-in acceptance runs (minutes): BPEFST_FULL=1 .venv/bin/pytest tests/test_tokenize_full.py -s

* both corpora in full, all seven tokenizers, in-process and streamed (64 KB blocks) vs tiktoken / HF,
  and with ``jobs=2`` for cl100k and o200k;
* 1 MB of each adversarial input vs the oracles;
* BPEFST_FULL_STRINGS (default 15,000) hypothesis strings per tokenizer (7 x 15,000 = 105,000).
"""

from __future__ import annotations

import io
import lzma
import os

import pytest
from hypothesis import HealthCheck, given, settings

from bpefst.pipeline.encoder import Tokenizer
from bpefst.pipeline.tokenize import tokenize_stream
from conftest import ALL_REAL_TOKENIZERS, TIKTOKEN_SPECS, bpefst_encoder, oracle_ids, require_shared, tiktoken_oracle

pytestmark = pytest.mark.skipif(not os.environ.get("BPEFST_FULL"), reason="opt-in: set BPEFST_FULL=1 (takes many minutes)")


def oracle(kind: str, text: str) -> list[int]:
    if kind in TIKTOKEN_SPECS:  # specials as text, to tokenize a corpus that may mention them
        return tiktoken_oracle(kind).encode(text, disallowed_special=())
    return oracle_ids(kind, text)


def ours(tok: Tokenizer, kind: str, text: str) -> list[int]:
    if kind in TIKTOKEN_SPECS:
        return tok.encode(text, disallowed_special=())
    return tok.encode(text, allowed_special="all")


@pytest.mark.parametrize("kind", ALL_REAL_TOKENIZERS)
@pytest.mark.parametrize("corpus", ["pydocs", "fortunes"])
def test_full_corpus(kind: str, corpus: str) -> None:
    data = require_shared()
    raw = lzma.open(data / "corpora" / f"{corpus}.txt.xz").read()
    text = raw.decode("utf-8")
    tok = Tokenizer(bpefst_encoder(kind).model)
    expected = oracle(kind, text)
    assert ours(tok, kind, text) == expected
    if kind in TIKTOKEN_SPECS:  # the forked --jobs path, on a fresh tokenizer
        assert Tokenizer(tok.model).encode(text, disallowed_special=(), jobs=2) == expected
    out = io.BytesIO()
    allowed = set() if kind in TIKTOKEN_SPECS else set(tok.model.specials)
    tokenize_stream(tok, io.BytesIO(raw), out, "ids", allowed, set(), block_size=1 << 16)
    assert list(map(int, out.getvalue().split())) == expected


@pytest.mark.parametrize("kind", ALL_REAL_TOKENIZERS)
def test_one_megabyte_adversarial_inputs(kind: str) -> None:
    require_shared()
    from test_tokenize import ADVERSARIAL

    tok = Tokenizer(bpefst_encoder(kind).model)
    for name, unit in ADVERSARIAL.items():
        text = (unit * (1_000_000 // len(unit.encode()) + 1))[: 1_000_000 // max(1, len(unit[0].encode()))]
        if name in ("random letters", "random utf8", "cjk"):
            text = (unit * 11)[: len(text)]
        try:
            expected = oracle(kind, text)
        except ValueError as exc:  # tiktoken o200k on 1 MB of spaces: "Max stack size exceeded for backtracking"
            print(f"{kind} {name}: oracle failed ({exc}); comparing with the reference encoder")
            expected = bpefst_encoder(kind).encode(text, disallowed_special=())
        assert ours(tok, kind, text) == expected, name


@pytest.mark.parametrize("kind", ALL_REAL_TOKENIZERS)
def test_many_generated_strings(kind: str) -> None:
    require_shared()
    from test_tokenize import STRINGS

    tok = Tokenizer(bpefst_encoder(kind).model)

    @settings(max_examples=int(os.environ.get("BPEFST_FULL_STRINGS", "15000")), deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(text=STRINGS)
    def check(text: str) -> None:
        assert tok.encode(text, allowed_special="all") == oracle_ids(kind, text)

    check()
