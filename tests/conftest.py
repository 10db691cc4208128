"""Shared test helpers: where the reference data lives, and the independent oracles.

Tests that need ``../shared/data`` (real tokenizers and corpora) use the
``shared_data`` fixture, which skips with a stated reason when it is absent, so
the rest of the suite still runs on a bare checkout.
"""

from __future__ import annotations

import base64
import gzip
import lzma
import os
import unicodedata
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the property tests with a fixed seed so that a submission's verdict does not
# depend on luck; run locally (without CI set) they explore new examples every time.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

# The tests that compare token ids run on both engines: `make test` runs the whole suite
# on the default engine (the compiled core, where it is built), then these modules again
# with BPEFST_PURE_PYTHON=1 (`pytest -m ids`), so the pure-Python twin is held to the
# same oracles.  tests/test_native.py pits the two against each other in one process.
# (The refusal tests of test_hardening and test_fuzz_artifacts run on the default engine only:
# what they check is loading and refusing input, before either engine runs.)
ID_MODULES = {
    "test_api", "test_chunk_encoder", "test_conformance", "test_splitter", "test_stream_jobs", "test_stream_memory",
    "test_tokenize", "test_tokenize_full", "test_validate", "test_validate_tokens", "test_datasets",
    "test_tiktoken_compat", "test_gguf", "test_token_guide", "test_promotion_declared",
}


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "ids: compares token ids; run on both engines (see ID_MODULES)")
    from bpefst import native

    if os.environ.get("BPEFST_PURE_PYTHON", "") not in ("", "0"):
        assert native.core is None, "BPEFST_PURE_PYTHON is set but the compiled core is in use"
    elif os.environ.get("BPEFST_REQUIRE_CORE") == "1" and native.core is None:
        pytest.exit(f"BPEFST_REQUIRE_CORE=1 but the engine is {native.engine_description()}", returncode=3)


def pytest_collection_modifyitems(config, items) -> None:
    for item in items:
        if item.module.__name__.rsplit(".", 1)[-1] in ID_MODULES:
            item.add_marker(pytest.mark.ids)


ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
SKIP_REASON = f"needs the shared reference data at {SHARED_DATA} (absent on this machine)"

# The patterns and special tokens as tiktoken publishes them (tiktoken_ext/openai_public.py),
# written out here independently of bpefst's presets so a slip in either shows up.
TIKTOKEN_SPECS = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    ),
    "o200k_base": (
        "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    ),
}
WIKITEXT_SIZES = (4000, 8000, 16000, 32000)


def require_shared() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(SKIP_REASON)
    return SHARED_DATA


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return require_shared()


@lru_cache(maxsize=None)
def corpus_prefix(name: str, size: int = 2_000_000) -> str:
    """The first ``size`` bytes of a shared .xz corpus, cut back to whole characters."""
    raw = lzma.open(require_shared() / "corpora" / f"{name}.txt.xz").read(size)
    return raw.decode("utf-8", errors="ignore")


@lru_cache(maxsize=None)
def tiktoken_oracle(name: str):
    """tiktoken built offline from the shared rank file and the published pattern."""
    tiktoken = pytest.importorskip("tiktoken")
    ranks = {}
    for line in gzip.open(require_shared() / "tiktoken" / f"{name}.tiktoken.gz").read().splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    pattern, specials = TIKTOKEN_SPECS[name]
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)


@lru_cache(maxsize=None)
def hf_gpt2_oracle():
    """HF tokenizers loading GPT-2's vocab.json + merges.txt, with <|endoftext|> special."""
    tokenizers = pytest.importorskip("tokenizers")
    data = require_shared() / "gpt2"
    tok = tokenizers.Tokenizer(tokenizers.models.BPE.from_file(str(data / "vocab.json"), str(data / "merges.txt")))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    return tok


@lru_cache(maxsize=None)
def hf_wikitext_oracle(size: int):
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(require_shared() / "wikitext-bpe" / f"tokenizer_{size}.json"))


@lru_cache(maxsize=None)
def bpefst_encoder(kind: str):
    """Our reference encoder for the same tokenizers, keyed like the oracles."""
    from bpefst.tokenizer import ReferenceEncoder, load_tokenizer

    data = require_shared()
    if kind in TIKTOKEN_SPECS:
        path = data / "tiktoken" / f"{kind}.tiktoken.gz"
    elif kind == "gpt2":
        path = data / "gpt2" / "vocab.json"
    else:
        path = data / "wikitext-bpe" / f"tokenizer_{kind.removeprefix('wikitext')}.json"
    return ReferenceEncoder(load_tokenizer(path))


def oracle_ids(kind: str, text: str) -> list[int]:
    """Ids from the independent implementation (tiktoken or HF tokenizers)."""
    if kind in TIKTOKEN_SPECS:
        return tiktoken_oracle(kind).encode(text, allowed_special="all")
    if kind == "gpt2":
        return hf_gpt2_oracle().encode(text).ids
    return hf_wikitext_oracle(int(kind.removeprefix("wikitext"))).encode(text).ids


ALL_REAL_TOKENIZERS = ("cl100k_base", "o200k_base", "gpt2", *(f"wikitext{n}" for n in WIKITEXT_SIZES))


def drop_unassigned(text: str) -> str:
    r"""Remove code points unassigned in Unicode 14 (Python 3.11's unicodedata).

    The regex engines disagree about characters assigned later: tiktoken and HF
    use Rust regex tables of their Unicode version (tiktoken's: 16.0), the
    ``regex`` module a newer one (17.0 and later since its November 2025
    releases), so e.g. U+323B0 (CJK Extension J, Unicode 17) or U+3D000 are
    ``\p{L}`` for one and unassigned for the other.  Such characters are a
    known divergence, recorded in the README.
    """
    return "".join(c for c in text if unicodedata.category(c) != "Cn")
