"""The compiled core (``bpefst._core``) against its independent oracles.

* its Unicode class table against the ``regex`` module, code point by code point;
* its pre-tokenizers against ``regex.finditer`` of the preset patterns,
  exhaustively on short strings over the characters the patterns tell apart,
  and on generated text of every script;
* its encoder against the pure-Python path, tiktoken and HF ``tokenizers``
  (hypothesis, every script), and against the reference encoder on random
  merge lists;
* its inputs: tables that lie, wrong types, surrogates: an exception or a
  declined call, never a crash.

Each test skips with the reason when the extension is not built here.
"""

from __future__ import annotations

import itertools
import operator
import os
import pickle
import random
import subprocess
import sys
import unicodedata
from array import array

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpefst import native
from bpefst.pipeline.encoder import Tokenizer
from bpefst.tokenizer import PRESETS, ReferenceEncoder

from conftest import TIKTOKEN_SPECS, corpus_prefix, hf_gpt2_oracle, require_shared, tiktoken_oracle
from small_models import random_byte_model

core = native.core
needs_core = pytest.mark.skipif(core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")
pytestmark = needs_core

# Characters the preset patterns tell apart: letters of each case class, a mark, numbers,
# each kind of space and line break, the apostrophe and contraction letters (ſ folds to s), '/'.
ALPHABET = ["a", "B", "ǅ", "ʰ", "中", "\u0301", "1", "٣", " ", "\n", "\r", "\t", "'", "s", "S", "ſ", "l", "r",
            "e", "v", "/", ".", "\u00a0", "\x1c"]
PRESET_NUMBERS = {"gpt2": "PATTERN_GPT2", "cl100k": "PATTERN_CL100K", "o200k": "PATTERN_O200K"}


def scanner(preset: str):
    """An encoder with no merges, only for its ``chunk_ends``."""
    return core.Encoder(bytes(1024), b"", 0, getattr(core, PRESET_NUMBERS[preset]))


def regex_ends(preset: str, text: str) -> list[int]:
    return [match.end() for match in regex.finditer(PRESETS[preset], text)]


def test_class_table_matches_the_regex_module() -> None:
    """Each code point's class bits equal what ``regex`` says of \\p{Lu} ... \\s (a stale table fails here)."""
    every = "".join(map(chr, range(0x110000)))
    expected = bytearray(0x110000)
    for bit, pattern in enumerate([r"\p{Lu}", r"\p{Ll}", r"\p{Lt}", r"\p{Lm}", r"\p{Lo}", r"\p{M}", r"\p{N}", r"\s"]):
        for match in regex.finditer(pattern + "+", every):
            for code in range(match.start(), match.end()):
                expected[code] |= 1 << bit
    table = core.class_table()
    differing = [hex(code) for code in range(0x110000) if table[code] != expected[code]][:10]
    assert not differing, f"classes differ from regex {regex.__version__} at {differing}; run tools/gen_unicode_classes.py"


@pytest.mark.parametrize("preset", sorted(PRESET_NUMBERS))
def test_scanner_exhaustive_short_strings(preset: str) -> None:
    """Every string of up to 4 characters over ALPHABET is cut exactly as ``regex`` cuts it."""
    scan = scanner(preset)
    for length in range(1, 5):
        for letters in itertools.product(ALPHABET, repeat=length):
            text = "".join(letters)
            assert scan.chunk_ends(text) == regex_ends(preset, text), repr(text)


def random_text(rng: random.Random, size: int) -> str:
    """Code points from the whole range, the BMP, and ASCII, mixed."""
    pick = (lambda: rng.randrange(0x110000), lambda: rng.randrange(0x3000), lambda: rng.randrange(128))
    return "".join(chr(rng.choice(pick)()) for _ in range(size))


@pytest.mark.parametrize("preset", sorted(PRESET_NUMBERS))
def test_scanner_random_text_of_every_script(preset: str) -> None:
    scan, rng = scanner(preset), random.Random(7)
    for _ in range(2000):
        text = random_text(rng, rng.randrange(1, 60))
        assert scan.chunk_ends(text) == regex_ends(preset, text), repr(text)


@pytest.mark.parametrize("preset", sorted(PRESET_NUMBERS))
def test_scanner_on_the_corpora(preset: str) -> None:
    scan = scanner(preset)
    for corpus in ("pydocs", "fortunes"):
        text = corpus_prefix(corpus, 300_000)
        assert scan.chunk_ends(text) == regex_ends(preset, text)


def real_tokenizers():
    data = require_shared()
    return {"cl100k_base": data / "tiktoken" / "cl100k_base.tiktoken.gz",
            "o200k_base": data / "tiktoken" / "o200k_base.tiktoken.gz", "gpt2": data / "gpt2" / "vocab.json"}


def both_engines(kind: str) -> tuple[Tokenizer, Tokenizer]:
    path = real_tokenizers()[kind]
    return _loaded(str(path), "compiled"), _loaded(str(path), "pure")


_LOADED: dict = {}


def _loaded(path: str, engine: str) -> Tokenizer:
    if (path, engine) not in _LOADED:
        _LOADED[path, engine] = Tokenizer.load(path, engine=engine)
    return _LOADED[path, engine]


def oracle(kind: str, text: str) -> list[int]:
    if kind in TIKTOKEN_SPECS:
        return tiktoken_oracle(kind).encode_ordinary(text)
    return hf_gpt2_oracle().encode(text, add_special_tokens=False).ids


# Every Unicode category, surrogates included (the compiled path declines them; the ids must not change).
SCRIPT_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=80)
WORDS = st.lists(st.sampled_from(["the", " The", "'s", "'LL", " \n", "\r\n", "  ", "123456", " Привет", "中文字符",
                                  "ﬁ", "é", "\u0301", "🙂", "/", "\t", "x" * 70]), max_size=12).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.one_of(SCRIPT_TEXT, WORDS, st.lists(st.one_of(SCRIPT_TEXT, WORDS), max_size=4).map("".join)))
def test_compiled_equals_pure_and_the_oracles(text: str) -> None:
    for kind in ("cl100k_base", "o200k_base", "gpt2"):
        compiled, pure = both_engines(kind)
        ids = compiled.encode_ordinary(text)
        assert ids == pure.encode_ordinary(text)
        # the oracles take UTF-8 text, and disagree with `regex` on characters assigned after Unicode 14 (see
        # test_conformance.drop_unassigned): compare on the text without surrogates and such characters
        clean = "".join(c for c in text if not 0xD800 <= ord(c) <= 0xDFFF and unicodedata.category(c) != "Cn")
        assert compiled.encode_ordinary(clean) == oracle(kind, clean), repr(clean)


def test_compiled_equals_pure_on_the_corpora() -> None:
    for kind in ("cl100k_base", "o200k_base", "gpt2"):
        compiled, pure = both_engines(kind)
        assert compiled.engine == "compiled" and pure.engine == "pure"
        for corpus in ("pydocs", "fortunes"):
            text = corpus_prefix(corpus, 400_000)
            assert compiled.encode_ordinary(text) == pure.encode_ordinary(text) == oracle(kind, text)


@pytest.mark.parametrize("seed", range(30))
def test_bpe_bytes_equals_the_reference_on_random_merges(seed: int) -> None:
    """Custom patterns keep ``regex`` and send each cache miss to the core's BPE (both routes: short and heap)."""
    model = random_byte_model(seed, alphabet=b"ab c", num_merges=25, pattern=r"\S+|\s+")
    reference = ReferenceEncoder(model)
    compiled = Tokenizer(model, engine="compiled")
    rng = random.Random(seed)
    for _ in range(40):
        text = "".join(rng.choice("ab c") for _ in range(rng.choice([3, 30, 200])))
        assert compiled.encode_ordinary(text) == reference.encode_ordinary(text)
        chunk = text.encode()
        assert compiled._native.bpe_bytes(chunk) == reference.bpe(list(chunk))


@pytest.mark.parametrize("preset", [None, "gpt2", "cl100k", "o200k"])
def test_whole_text_encoding_on_random_merges(preset) -> None:
    for seed in range(10):
        model = random_byte_model(seed, alphabet=b"ab 1'\n", num_merges=30, pattern=PRESETS.get(preset))
        reference, compiled = ReferenceEncoder(model), Tokenizer(model, engine="compiled")
        assert compiled._native_scans
        rng = random.Random(seed)
        for _ in range(30):
            text = "".join(rng.choice("ab 1'\nA") for _ in range(rng.choice([2, 20, 300])))
            assert compiled.encode_ordinary(text) == reference.encode_ordinary(text)


def test_long_runs_through_the_heap_and_bucket_routes() -> None:
    """Chunks of 65 to 65535 symbols take the heap, longer ones the buckets (src/core/bpe.h)."""
    compiled, pure = both_engines("cl100k_base")
    for text in ("x" * 100_000, "ab" * 30_000 + "a", " " * 50_000, "中" * 20_000, "ab" * 40_000, "x" * 65_536):
        assert compiled.encode_ordinary(text) == oracle("cl100k_base", text)
    for text in (" " * 70_000, "\n" * 70_001, " \t" * 40_000):  # one chunk each; tiktoken is quadratic there
        assert compiled.encode_ordinary(text) == pure.encode_ordinary(text)


@pytest.mark.parametrize("seed", range(6))
def test_bucket_route_equals_the_reference_on_random_merges(seed: int) -> None:
    model = random_byte_model(seed, alphabet=b"ab", num_merges=40, pattern=None)
    rng = random.Random(seed)
    text = "".join(rng.choice(["a", "b", "ab", "aab"]) for _ in range(40_000))  # one chunk of about 80K bytes
    assert Tokenizer(model, engine="compiled").encode_ordinary(text) == ReferenceEncoder(model).encode_ordinary(text)


def test_a_token_made_twice_takes_the_heap() -> None:
    """Merges that make one token twice can create lower-ranked pairs later: the buckets' premise fails."""
    vocab = {b: bytes([b]) for b in range(256)}
    vocab.update({256: b"aa", 257: b"aaa", 258: b"aaaa"})
    merges = [(97, 97), (256, 97), (256, 256), (97, 256)]  # b"aaa" is made by two merges
    from bpefst.tokenizer import BPEModel

    model = BPEModel.unchecked(level="byte", vocab=vocab, merges=merges, specials={}, pattern=None)
    text = "a" * 70_001
    assert Tokenizer(model, engine="compiled").encode_ordinary(text) == ReferenceEncoder(model).encode_ordinary(text)


def test_batch_on_threads_equals_one_by_one() -> None:
    compiled, _ = both_engines("o200k_base")
    text = corpus_prefix("fortunes", 200_000)
    texts = [text[i : i + 997] for i in range(0, len(text), 997)] + ["", "a\udc80b"]
    expected = [oracle("o200k_base", t) for t in texts[:-1]] + [compiled.encode_ordinary("a\udc80b")]
    assert compiled.encode_batch(texts, jobs=2) == expected
    assert compiled.encode(text, jobs=2) == oracle("o200k_base", text)


def test_surrogates_are_declined_to_the_pure_path() -> None:
    compiled, pure = both_engines("cl100k_base")
    assert compiled._native.encode("a\udc80b") is None
    assert compiled.encode_ordinary("a\udc80b") == pure.encode_ordinary("a\udc80b")


def test_engine_choice_and_pickling() -> None:
    model = random_byte_model(1, pattern=PRESETS["gpt2"])
    assert Tokenizer(model).engine == "compiled"
    assert Tokenizer(model, engine="pure").engine == "pure"
    restored = pickle.loads(pickle.dumps(Tokenizer(model, engine="pure")))
    assert restored.engine == "pure"
    assert pickle.loads(pickle.dumps(Tokenizer(model))).engine == "compiled"
    with pytest.raises(Exception, match="engine"):
        Tokenizer(model, engine="fast")


def test_environment_variable_forces_the_pure_path() -> None:
    code = "import bpefst.native as n; print(n.engine(), n.engine_description())"
    env = dict(os.environ, BPEFST_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.startswith("pure pure Python (BPEFST_PURE_PYTHON is set)")


def packed(*values: int) -> bytes:
    return array("I", values).tobytes()


@pytest.mark.parametrize("arguments, message", [
    ((b"", b"", 10, 1), "byte_ids"),
    ((packed(*[5] * 256), b"\x00" * 13, 10, 1), "triples"),
    ((packed(*[11] * 256), b"", 10, 1), "beyond max_id"),
    ((packed(*range(256)), packed(1, 2, 999), 300, 1), "beyond max_id"),
    ((packed(*range(256)), b"", 300, 9), "pattern"),
    ((packed(*range(256)), b"", 1 << 30, 1), "limit"),
])
def test_constructor_refuses_tables_that_lie(arguments, message) -> None:
    with pytest.raises(ValueError, match=message):
        core.Encoder(*arguments)


def test_calls_check_their_arguments() -> None:
    encoder = core.Encoder(packed(*range(256)), packed(97, 98, 256), 256, core.PATTERN_GPT2)
    assert encoder.encode("ab ab") == [256, 32, 256]
    with pytest.raises(TypeError):
        encoder.encode(b"bytes")
    with pytest.raises(TypeError):
        encoder.encode_batch(["a", 3])
    with pytest.raises(TypeError):
        encoder.bpe_bytes("text")
    with pytest.raises(RuntimeError, match="not initialised"):
        core.Encoder.__new__(core.Encoder).encode("a")


def test_random_tables_never_crash() -> None:
    rng = random.Random(3)
    for _ in range(300):
        byte_ids = bytes(rng.randrange(256) for _ in range(rng.choice([1024, 1024, 1023])))
        merges = bytes(rng.randrange(256) for _ in range(rng.choice([0, 12, 120, 121])))
        try:
            encoder = core.Encoder(byte_ids, merges, rng.randrange(1 << 25), rng.randrange(5))
        except ValueError:
            continue
        encoder.encode(random_text(rng, 50))
        encoder.bpe_bytes(bytes(rng.randrange(256) for _ in range(80)))


# -- the validator's loops (src/core/validate.h) ---------------------------------------------------

def pair_checker_of(model):
    from bpefst.bpe import MergeForest

    forest = MergeForest.from_model(model)
    return forest, native.pair_checker(forest)


@pytest.mark.parametrize("seed", range(12))
def test_pair_checker_equals_the_pair_walk_on_every_pair(seed: int) -> None:
    """Every pair of a random model's reachable tokens: the core's answer is compatible_before's, and
    both are brute force's (BPE of the two tokens' bytes gives back the pair)."""
    from bpefst.bpe.compatibility import compatible_before

    model = random_byte_model(seed, b"ab ", num_merges=25)
    forest, checker = pair_checker_of(model)
    encoder = ReferenceEncoder(model)
    tokens = [t for t in forest.reachable_ids if t < forest.size]
    for u, v in itertools.product(tokens, tokens):
        expected = compatible_before(forest, u, v)
        assert expected == (encoder.bpe(model.vocab[u] + model.vocab[v]) == [u, v])
        assert checker.canonical(u, v) == expected, (u, v)
        assert checker.canonical(u, v) == expected  # again, from the set of known pairs


def test_pair_checker_equals_the_pair_walk_on_a_real_vocabulary() -> None:
    from bpefst.bpe.compatibility import compatible_before
    from bpefst.tokenizer import load_tokenizer

    model = load_tokenizer(str(real_tokenizers()["cl100k_base"]))
    forest, checker = pair_checker_of(model)
    rng = random.Random(32)
    tokens = forest.reachable_ids
    ids = Tokenizer(model).encode_ordinary(corpus_prefix("fortunes", 100_000))
    pairs = list(zip(ids, ids[1:])) + [(rng.choice(tokens), rng.choice(tokens)) for _ in range(20_000)]
    for u, v in pairs:
        assert checker.canonical(u, v) == compatible_before(forest, u, v), (u, v)


def test_compiled_walk_and_pair_tests_equal_the_pure_ones() -> None:
    """The token-level walk and the batch of pair tests behind Validator, on canonical streams and on
    mutated ones, compiled against pure, step by step (rows are the same objects)."""
    from bpefst.bpe import build_canonical
    from bpefst.pipeline.validate import Validator
    from bpefst.tokenizer import load_tokenizer

    from test_validate import mutate

    model = load_tokenizer(str(real_tokenizers()["o200k_base"]))
    automaton = build_canonical(__import__("bpefst").bpe.MergeForest.from_model(model), "implicit")
    compiled, pure = Validator(model, automaton, engine="compiled"), Validator(model, automaton, engine="pure")
    chunks = compiled.chunks
    rng = random.Random(5)
    ids = Tokenizer(model).encode(corpus_prefix("pydocs", 60_000) + "<|endoftext|>" + corpus_prefix("fortunes", 60_000),
                                  allowed_special="all")
    streams = [ids] + [mutate(ids[k:k + 300], model, automaton.forest, rng) for k in range(0, len(ids) - 300, 700)]
    for stream in streams:
        seq = chunks.walk_compiled(list(stream), chunks.initial)
        assert seq == chunks.walk(stream, chunks.initial) and all(map(operator.is_, seq, chunks.walk(stream, chunks.initial)))
        stop = chunks.first_stop(seq)
        end = len(stream) if stop is None else stop - 1
        for last in (None, ids[0]):
            assert compiled.pairs.bad_gaps(list(stream), seq, chunks.flag_index, end, last) == pure._bad_pairs(stream, seq, end, last)
        assert compiled.check(stream) == pure.check(stream)


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(st.one_of(st.sampled_from([b" ", b"\n", b"\t\r", b"\x0b\x0c", b"0", b"007", b"-1", b"1.5", b"x", b"\xff"]),
                          st.integers(0, 10**22).map(lambda n: str(n).encode())), max_size=30).map(b"".join))
def test_parse_ids_equals_int_of_each_word(data: bytes) -> None:
    """The core's id parser reads what ``int`` reads of whitespace-separated digit words (up to 18
    digits) and declines everything else with None."""
    words = data.split()
    plain = all(w.isdigit() and len(w) <= 18 for w in words) and all(b in b"0123456789 \t\n\r\x0b\x0c" for b in data)
    assert core.parse_ids(data) == (list(map(int, words)) if plain else None)


def test_validate_loops_check_their_arguments() -> None:
    rank, left, right = array("i", [-1, -1, 0]).tobytes(), array("i", [-1, -1, 0]).tobytes(), array("i", [-1, -1, 1]).tobytes()
    checker = core.PairChecker(rank, left, right, packed(0, 1), packed(0))
    assert checker.canonical(0, 1) is False and checker.canonical(2, 2) is True and checker.canonical(1, 0) is True
    for u, v in ((3, 0), (-1, 0), (1 << 70, 0)):
        with pytest.raises(IndexError):
            checker.canonical(u, v)
    with pytest.raises(TypeError):
        checker.canonical("a", 0)
    with pytest.raises(ValueError, match="lower ranks"):  # a token built from itself: the walk would not end
        core.PairChecker(array("i", [-1, 0]).tobytes(), array("i", [-1, 1]).tobytes(), array("i", [-1, 0]).tobytes(), b"", b"")
    with pytest.raises(ValueError, match="lower ranks"):
        core.PairChecker(array("i", [-1, 0]).tobytes(), array("i", [-1, 7]).tobytes(), array("i", [-1, 0]).tobytes(), b"", b"")
    with pytest.raises(ValueError, match="one packed"):
        core.PairChecker(rank, left[:4], right, b"", b"")
    with pytest.raises(ValueError, match="pairs"):
        core.PairChecker(rank, left, right, packed(0), packed(0))
    with pytest.raises(RuntimeError, match="not initialised"):
        core.PairChecker.__new__(core.PairChecker).canonical(0, 0)
    with pytest.raises(ValueError, match="end"):
        checker.bad_gaps([0, 1], [[0], [0]], 0, 2, None)
    with pytest.raises(TypeError):
        checker.bad_gaps((0, 1), [[0], [0], [0]], 0, 2, None)
    assert checker.bad_gaps([0, 1, 2], [[0], [1], [1], [1]], 0, 3, None) == [1]  # (0, 1) is a merge: not canonical
    assert checker.bad_gaps([9, 1], [[0], [1], {0: 1}], 0, 2, 0) == [0, 1]  # an id outside the forest: reported
    row = [None, None]
    row[0] = row
    classes = array("i", [0, 1, 5]).tobytes()
    assert core.walk_rows(classes, [0, 0, 1, 0], 0, row) == [row, row]  # stops at the entry not built yet
    assert core.walk_rows(classes, [0, 0], 1, row) == [row]
    for ids, error in (([3], IndexError), ([-1], IndexError), ([2], ValueError), (["a"], TypeError)):
        with pytest.raises(error):
            core.walk_rows(classes, ids, 0, row)
    with pytest.raises(TypeError):
        core.walk_rows(classes, [0], 0, "not a row")
    with pytest.raises(ValueError):
        core.walk_rows(classes, [0], 5, row)
    with pytest.raises(TypeError):
        core.parse_ids("text")


# -- one token's banned set (src/core/banned.h) ------------------------------------------------------

def bits(mask: bytes) -> set[int]:
    value = int.from_bytes(mask, "little")
    return {v for v in range(value.bit_length()) if value >> v & 1}


@pytest.mark.parametrize("seed", range(12))
def test_banned_index_equals_the_pure_index_and_the_pair_walk(seed: int) -> None:
    """BANNED(u) of every token of a random model: the core's bitset is SingleBanned's set, and both
    are the reachable v whose pair (u, v) the pair walk finds not canonical."""
    from bpefst.bpe import MergeForest
    from bpefst.bpe.banned import SingleBanned
    from bpefst.bpe.compatibility import compatible_before

    forest = MergeForest.from_model(random_byte_model(seed, b"ab c", num_merges=30))
    index, single = native.banned_index(forest), SingleBanned(forest)
    banned_pairs = 0
    for u in forest.reachable_ids:
        expected = {v for v in forest.reachable_ids if not compatible_before(forest, u, v)}
        assert single.tokens(u) == expected
        assert bits(index.mask(u)) == expected, u
        assert len(index.mask(u)) == (forest.size + 7) // 8
        banned_pairs += len(expected)
    assert banned_pairs > 0


def test_banned_index_on_a_real_vocabulary_and_in_the_implicit_automaton() -> None:
    from bpefst.bpe import MergeForest
    from bpefst.bpe.canonical import ImplicitCanonical
    from bpefst.tokenizer import load_tokenizer

    forest = MergeForest.from_model(load_tokenizer(str(real_tokenizers()["cl100k_base"])))
    compiled, pure = ImplicitCanonical(forest, "compiled"), ImplicitCanonical(forest, "pure")
    tokens = random.Random(31).sample(forest.reachable_ids, 400) + list(range(256))
    assert all(compiled.banned_mask(u) == pure.banned_mask(u) for u in tokens)
    assert sum(compiled.banned_mask(u) != 0 for u in tokens) > 300


def test_banned_index_checks_its_arguments() -> None:
    rank, left, right = array("i", [-1, -1, 0]).tobytes(), array("i", [-1, -1, 0]).tobytes(), array("i", [-1, -1, 1]).tobytes()
    index = core.BannedIndex(rank, left, right, b"\x01\x01\x01", packed(0, 1), packed(0))
    assert bits(index.mask(0)) == {1} and bits(index.mask(1)) == set() and bits(index.mask(2)) == set()
    for u in (3, -1, 1 << 70):
        with pytest.raises(IndexError):
            index.mask(u)
    with pytest.raises(TypeError):
        index.mask("a")
    with pytest.raises(ValueError, match="lower ranks"):
        core.BannedIndex(array("i", [-1, 0]).tobytes(), array("i", [-1, 1]).tobytes(), array("i", [-1, 0]).tobytes(), b"\x01\x01",
                         b"", b"")
    with pytest.raises(ValueError, match="reachable one byte"):
        core.BannedIndex(rank, left, right, b"\x01", packed(0, 1), packed(0))
    with pytest.raises(ValueError, match="pairs"):
        core.BannedIndex(rank, left, right, b"\x01\x01\x01", packed(0), packed(0))
    with pytest.raises(ValueError, match="outside the forest"):
        core.BannedIndex(rank, left, right, b"\x01\x01\x01", packed(0, 9), packed(0))
    with pytest.raises(RuntimeError, match="not initialised"):
        core.BannedIndex.__new__(core.BannedIndex).mask(0)
    with pytest.raises(RuntimeError, match="already initialised"):
        index.__init__(rank, left, right, b"\x01\x01\x01", packed(0, 1), packed(0))


@settings(max_examples=300, deadline=None, database=None)
@given(st.integers(1, 40).flatmap(lambda n: st.lists(
    st.tuples(st.binary(min_size=n, max_size=n), st.one_of(st.none(), st.binary(max_size=2 * n))), min_size=1, max_size=4)))
def test_allowed_union_is_the_or_of_and_nots(pairs) -> None:
    """Bytes in, bytes out: the same bits as Python ints (a shorter banned set bans nothing past its end)."""
    expected = 0
    for good, banned in pairs:
        expected |= int.from_bytes(good, "little") & ~int.from_bytes(banned or b"", "little")
    length = len(pairs[0][0])
    assert core.allowed_union(list(pairs)) == expected.to_bytes(length, "little")


def test_allowed_union_checks_its_arguments() -> None:
    for bad, error in (([], TypeError), ((b"\x01", None), TypeError), ([b"\x01"], TypeError), ([(b"\x01",)], TypeError),
                       ([(b"\x01", None), (b"\x01\x02", None)], ValueError), ([(b"\x01", 5)], TypeError),
                       ([("text", None)], TypeError)):
        with pytest.raises(error):
            core.allowed_union(bad)
    assert core.allowed_union([(bytearray(b"\x0f"), memoryview(b"\x05"))]) == b"\x0a"



# -- loading a .bpefst tokenizer (src/core/vocab.h) ---------------------------------------------------

def body_tables(model) -> dict:
    from bpefst.tokenizer.formats import native as artifact_format

    return artifact_format.to_body(model)


def python_verdict(body: dict):
    """The pure twin: the model the body describes, checked by BPEModel (None where it is refused)."""
    from bpefst.errors import BpefstError
    from bpefst.tokenizer import BPEModel
    from bpefst.tokenizer.formats import native as artifact_format

    try:
        model = artifact_format.from_body(body, "t", trusted=True)
        return BPEModel(**{f: getattr(model, f) for f in ("level", "vocab", "merges", "specials", "pattern")})
    except BpefstError:
        return None


def mutations(body: dict, rng: random.Random):
    """Bodies that lie in the ways the loader's checks are for."""
    ids, offsets = array("I", body["ids"]), array("I", body["offsets"])
    merges = array("I", body["merges"])
    n, m = len(ids), len(merges) // 2
    swapped = array("I", merges)
    i, j = sorted(rng.sample(range(m), 2))
    swapped[2 * i : 2 * i + 2], swapped[2 * j : 2 * j + 2] = merges[2 * j : 2 * j + 2], merges[2 * i : 2 * i + 2]
    yield dict(body, merges=swapped.tobytes())  # rank order changed: often improper
    yield dict(body, merges=(merges + merges[:2]).tobytes())  # a merge listed twice
    yield dict(body, merges=(merges + array("I", [ids[0], ids[0]])).tobytes())  # a concatenation that is no token
    yield dict(body, merges=(merges + array("I", [max(ids) + 7, ids[0]])).tobytes())  # an unknown id
    twin = array("I", ids)
    twin[rng.randrange(n)] = ids[rng.randrange(n)]
    yield dict(body, ids=twin.tobytes())  # an id listed twice
    tokens = bytearray(body["tokens"])
    k = rng.randrange(len(tokens))
    tokens[k] = rng.randrange(256)
    yield dict(body, tokens=bytes(tokens))  # a byte changed: a token may now equal another, or no merge spells it
    sparse = array("I", ids)
    sparse[-1] = 1 << 30
    yield dict(body, ids=sparse.tobytes())
    empty = array("I", offsets)
    empty[1] = 0
    yield dict(body, offsets=empty.tobytes())


@pytest.mark.parametrize("seed", range(20))
def test_checked_merge_results_agree_with_the_model_checks(seed: int) -> None:
    """On proper random models the core finds the model's merge results; on tables that lie it declines
    (None) wherever BPEModel refuses, and where it accepts, BPEModel accepts with the same results."""
    rng = random.Random(seed)
    model = random_byte_model(seed, b"abc d", num_merges=40)
    body = body_tables(model)
    assert list(array("I", core.checked_merge_results(body["ids"], body["offsets"], body["tokens"], body["merges"]))) == model.merge_results
    for lying in mutations(body, rng):
        try:
            results = core.checked_merge_results(lying["ids"], lying["offsets"], lying["tokens"], lying["merges"])
        except ValueError:
            continue
        expected = python_verdict(lying)
        if results is not None:
            assert expected is not None and list(array("I", results)) == expected.merge_results


def test_loading_an_artifact_is_the_same_on_both_paths(tmp_path) -> None:
    """The real o200k vocabulary through the core's checks and through BPEModel's: the same model."""
    from bpefst.tokenizer import BPEModel, load_tokenizer
    from bpefst.tokenizer.formats import native as artifact_format

    model = load_tokenizer(str(real_tokenizers()["o200k_base"]))
    path = tmp_path / "o200k.bpefst"
    artifact_format.write(model, path)
    loaded = load_tokenizer(str(path))
    assert loaded.vocab == model.vocab and loaded.merges == model.merges and loaded.merge_results == model.merge_results
    assert loaded.fingerprint == model.fingerprint
    checked = BPEModel(**{f: getattr(loaded, f) for f in ("level", "vocab", "merges", "specials", "pattern")})
    assert checked.merge_results == loaded.merge_results


def test_split_tokens_checks_the_offsets() -> None:
    assert core.split_tokens(b"abcd", packed(0, 1, 1, 4)) == [b"a", b"", b"bcd"]
    for offsets in (packed(1, 4), packed(0, 3), packed(0, 3, 2, 4), b"\x00\x00", packed(0, 5)):
        with pytest.raises(ValueError):
            core.split_tokens(b"abcd", offsets)
    with pytest.raises(TypeError):
        core.split_tokens("abcd", packed(0, 4))
    assert core.checked_merge_results(b"", packed(0), b"", b"") == b""  # no tokens, no merges
    assert core.checked_merge_results(packed(0), packed(0, 1), b"a", b"\x00" * 7) is None  # ragged merges


@settings(max_examples=200, deadline=None, database=None)
@given(st.lists(st.integers(0, 2**63 - 1), max_size=40))
def test_format_ids_is_the_join_and_parse_ids_reads_it_back(ids: list[int]) -> None:
    text = core.format_ids(ids)
    assert text == " ".join(map(str, ids)).encode()
    assert core.parse_ids(text) == (ids if all(i < 10**18 for i in ids) else None)


def test_format_ids_checks_its_argument() -> None:
    for bad, error in (([-1], ValueError), (["7"], ValueError), ([2**64], OverflowError), ((1, 2), TypeError)):
        with pytest.raises(error):
            core.format_ids(bad)


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=20))
def test_has_surrogates_equals_the_regex_search(text: str) -> None:
    from bpefst.tokenizer import surrogates

    for candidate in (text, text + "\ud800", "\udfff" + text, text + "\U0001F600", "é" + text):
        assert core.has_surrogates(candidate) == surrogates._search_with_regex(candidate)
    with pytest.raises(TypeError):
        core.has_surrogates(b"bytes")


def rank_lines():
    import base64

    token = st.binary(min_size=0, max_size=6).map(lambda b: base64.b64encode(b))
    junk = st.sampled_from([b"QQ", b"QR==", b"Q===", b"=QQ=", b"QUI=x", b"!!!!", b"QUJD", b"QUI", b"AAE=", b"AAF="])
    rank = st.one_of(st.integers(0, 2**33).map(lambda n: str(n).encode()), st.sampled_from([b"-1", b"1.0", b"x", b"007", b""]))
    space = st.sampled_from([b" ", b"\t", b"  ", b" \r"])
    line = st.tuples(st.one_of(token, junk), space, rank, st.sampled_from([b"", b" ", b"\r"])).map(b"".join)
    return st.lists(st.one_of(line, st.just(b""), st.just(b"   ")), max_size=12).map(b"\n".join)


@settings(max_examples=400, deadline=None, database=None)
@given(rank_lines())
def test_parse_ranks_agrees_with_the_python_reading(data: bytes) -> None:
    """The core reads a rank file as the Python reading does, or declines (None) and lets it decide."""
    from bpefst.tokenizer.formats import tiktoken_ranks

    parsed = core.parse_ranks(data)
    native.core = None
    try:
        expected = tiktoken_ranks._parse_bulk(data)
    finally:
        native.core = core
    if parsed is not None:
        tokens, ranks = parsed[0], array("I", parsed[1]).tolist()
        assert expected is not None and list(expected) == tokens and list(expected.values()) == ranks or \
            expected is None and (len(set(tokens)) < len(tokens) or len(set(ranks)) < len(ranks))
    assert tiktoken_ranks._parse_bulk(data) == expected


def test_parse_ranks_reads_the_real_files() -> None:
    from bpefst.tokenizer.formats import tiktoken_ranks
    from bpefst.tokenizer.formats.common import read_raw

    for name in ("cl100k_base", "o200k_base"):
        data = read_raw(real_tokenizers()[name])
        tokens, ranks = core.parse_ranks(data)
        native.core = None
        try:
            expected = tiktoken_ranks._parse_bulk(data)
        finally:
            native.core = core
        assert list(expected.items()) == list(zip(tokens, array("I", ranks)))


def random_model_with_repeats(seed: int):
    """A character-level model whose merges may produce one token twice (rank inversions can occur) and
    may list one pair twice: what the forest's pure construction must handle and refuse alike."""
    from bpefst.tokenizer import BPEModel

    rng = random.Random(seed)
    vocab, merges = {0: "a", 1: "b"}, []
    ids = {"a": 0, "b": 1}
    for _ in range(rng.randrange(3, 14)):
        a, b = rng.choice(list(vocab)), rng.choice(list(vocab))
        token = vocab[a] + vocab[b]
        if token not in ids:
            ids[token] = len(vocab)
            vocab[len(vocab)] = token
        merges.append((a, b))
    try:
        return BPEModel(level="char", vocab=vocab, merges=merges)
    except Exception:
        return None


@pytest.mark.parametrize("seed", range(300))
def test_compiled_forest_equals_the_pure_one(seed: int) -> None:
    from bpefst.bpe import MergeForest
    from bpefst.errors import BpefstError

    model = random_model_with_repeats(seed) if seed % 2 else random_byte_model(seed, b"ab c", num_merges=30)
    if model is None:
        return
    outcomes = []
    for engine in ("compiled", "pure"):
        try:
            outcomes.append(MergeForest.from_model(model, engine=engine))
        except BpefstError as error:
            outcomes.append(str(error))
    assert outcomes[0] == outcomes[1]


def test_compiled_forest_of_real_vocabularies() -> None:
    from bpefst.bpe import MergeForest
    from bpefst.tokenizer import load_tokenizer

    for path in real_tokenizers().values():
        model = load_tokenizer(str(path))
        assert MergeForest.from_model(model, engine="compiled") == MergeForest.from_model(model, engine="pure")


def test_build_forest_checks_its_arguments() -> None:
    triple = packed(0, 1, 2)
    rank, left, right, reachable, inversion = core.build_forest(3, packed(0, 1), triple)
    assert array("i", rank).tolist() == [-1, -1, 0] and reachable == b"\x01\x01\x01" and inversion == -1
    for arguments in ((3, packed(0, 7), triple), (2, packed(0, 1), triple), (0, b"", b""), (3, b"\x00", triple),
                      (3, packed(0, 1), triple[:-1]), (1 << 40, b"", b"")):
        with pytest.raises((ValueError, OverflowError)):
            core.build_forest(*arguments)


def test_compiled_forest_refuses_a_rank_inversion_as_the_pure_one_does() -> None:
    """merge_forest's docstring example: (b,b) (b,bb) (bbb,b) (a,bbb) (bb,b)."""
    from bpefst.bpe import MergeForest
    from bpefst.errors import BpefstError
    from bpefst.tokenizer import BPEModel

    vocab = {"a": 0, "b": 1, "bb": 2, "bbb": 3, "bbbb": 4, "abbb": 5}
    merges = [("b", "b"), ("b", "bb"), ("bbb", "b"), ("a", "bbb"), ("bb", "b")]
    model = BPEModel(level="char", vocab={i: t for t, i in vocab.items()}, merges=[(vocab[a], vocab[b]) for a, b in merges])
    messages = []
    for engine in ("compiled", "pure"):
        with pytest.raises(BpefstError, match="rank inversion") as caught:
            MergeForest.from_model(model, engine=engine)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]


def test_python_threads_encode_at_once_and_agree() -> None:
    """Python threads calling the same tokenizer at once each get a chunk cache of their own (the core
    encodes them in parallel without the GIL): the ids are those of one thread."""
    from concurrent.futures import ThreadPoolExecutor

    compiled, _ = both_engines("cl100k_base")
    text = corpus_prefix("fortunes", 400_000)
    pieces = [text[k : k + 20_000] for k in range(0, len(text), 20_000)]
    expected = [compiled.encode_ordinary(piece) for piece in pieces]
    with ThreadPoolExecutor(max_workers=6) as pool:
        for _ in range(3):
            assert list(pool.map(compiled.encode_ordinary, pieces)) == expected
            batches = list(pool.map(lambda k: compiled.encode_batch(pieces[k : k + 4], num_threads=3), range(0, len(pieces), 4)))
            assert [ids for batch in batches for ids in batch] == expected


def test_fingerprints_are_the_msgpack_of_the_whole_model() -> None:
    """The fingerprint (artifacts record it, so it must never change) is SHA-256 of msgpack of the model's
    fields; computed from a .bpefst file's packed tables by the core it is the same."""
    import hashlib

    import msgpack

    from bpefst.tokenizer import load_tokenizer
    from bpefst.tokenizer.formats import native as artifact_format

    def direct(model) -> str:
        fields = [model.level, sorted(model.vocab.items()), model.merges, sorted(model.specials.items()), model.pattern,
                  model.end_of_word_suffix, model.continuing_subword_prefix, model.unk_token, model.fuse_unk,
                  model.ignore_merges] + ([model.missing_bytes] if model.missing_bytes != "drop" else [])
        return hashlib.sha256(msgpack.packb(fields, use_bin_type=True)).hexdigest()

    models = [random_byte_model(seed, b"ab c", num_merges=30) for seed in range(5)]
    models.append(load_tokenizer(str(real_tokenizers()["gpt2"])))
    for model in models:
        assert model.fingerprint == direct(model)
        body = msgpack.unpackb(artifact_format.model_to_bytes(model), raw=False, strict_map_key=False)
        loaded = artifact_format.from_body(body, "t")
        assert "fingerprint" in loaded.__dict__ and loaded.fingerprint == direct(model)  # written by the core
