"""The tokenizer parts (spelling trie with its walk indexes, A_BPE) kept on disk: bpefst.promotion.parts.

Parts read back from a cache directory must promote exactly as parts built
fresh: the same rows, masks and languages, and the languages those of the
reference encoder (every match of the pattern encoded, the sequences
collected).  A file that cannot be used is ignored with a warning and written
again; it never fails a promotion or changes its answer.  The module runs on
both engines (``ids``), and one test reads a file in a fresh process on the
other engine.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import msgpack
import pytest
import regex

import bpefst
from bpefst import native
from bpefst.promotion import parts as parts_module
from bpefst.promotion.parts import PartsCache, PartsCacheWarning, TokenizerParts, cache_path
from bpefst.tokenizer import PRESETS, ReferenceEncoder
from bpefst.tokenizer.formats import save_tokenizer
from small_models import random_byte_model
from test_token_language import guided_sequences

pytestmark = pytest.mark.ids  # run on the pure path too (Makefile: BPEFST_PURE_PYTHON=1 pytest -m ids)

ROOT = Path(__file__).resolve().parents[1]
ALPHABET = "ab1 "
PATTERNS = [r"(ab|b1){1,2}( a{1,3})?", r"(ab|ba){1,3}", r"[ab]{1,4}1?"]


def small_model(seed: int):
    return random_byte_model(seed, alphabet=ALPHABET.encode(), num_merges=15, pattern=PRESETS["gpt2"])


def corpus_model():
    """A tokenizer trained on the fixture corpus: enough tokens for the subtree index to hold nodes."""
    return bpefst.train(ROOT / "fixtures" / "corpus.txt", 600).model


def reference_language(model, pattern: str, longest: int = 8) -> set[tuple[int, ...]]:
    """The oracle: the reference encoder's encoding of every text over ALPHABET that ``pattern`` matches."""
    compiled, encoder = regex.compile(pattern), ReferenceEncoder(model)
    return {tuple(encoder.encode(text)) for n in range(longest + 1) for text in map("".join, itertools.product(ALPHABET, repeat=n))
            if compiled.fullmatch(text)}


def masks_along_walks(guide, walks: int = 8, length: int = 12, seed: int = 5) -> list[list[int]]:
    """The allowed tokens at every state of a few random walks (what a decoder's masks hold)."""
    rng, seen = random.Random(seed), []
    for _ in range(walks):
        state = guide.start
        for _ in range(length):
            if state is None:  # stepped on a stop token
                break
            row = guide.allowed_token_ids(state)
            seen.append(row)
            if not row:
                break
            state = guide.step(state, rng.choice(row))
    return seen


def written_and_read(model, directory) -> tuple[TokenizerParts, TokenizerParts]:
    """Parts built (and written to ``directory``) by one cache, and read back by another (a new process's)."""
    built = PartsCache().get(model, directory)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # reading an intact file warns of nothing
        fresh_cache = PartsCache()
        original = TokenizerParts.build
        TokenizerParts.build = None  # reading must not build
        try:
            read = fresh_cache.get(model, directory)
        finally:
            TokenizerParts.build = original
    return built, read


def assert_same_parts(built: TokenizerParts, read: TokenizerParts) -> None:
    """Every structure a walk or a mask reads, equal."""
    a, b = built.trie, read.trie
    assert (a.children, a.tokens, a.spellings) == (b.children, b.tokens, b.spellings)
    assert a.steps() == b.steps() and a.chains() == b.chains() and a.chain_lists() == b.chain_lists()
    sa, sb = a.subtrees(), b.subtrees()
    assert (sa.alphabet_id, sa.height, sa._prefix, sa.alphabets, sa._by_length) == (sb.alphabet_id, sb.height, sb._prefix, sb.alphabets, sb._by_length)
    assert (a.native_walker() is None) == (b.native_walker() is None) == (native.core is None)
    x, y = built.automaton, read.automaton
    assert type(x) is type(y) and x.forest == y.forest
    for u in range(-1, x.forest.size):
        assert x.banned_mask(u) == y.banned_mask(u)


# -- read back, the same promotions ------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_parts_read_back_promote_as_built(tmp_path, seed):
    model = small_model(seed)
    built, read = written_and_read(model, tmp_path)
    assert read is not built
    assert_same_parts(built, read)
    for pattern in PATTERNS:
        a = bpefst.promote(model, pattern, parts=PartsCache()).guide()
        cache = PartsCache()
        cache.get(model, tmp_path)
        language = bpefst.promote(model, pattern, parts=cache)
        assert language.parts is cache.get(model)
        b = language.guide()
        assert guided_sequences(a) == guided_sequences(b) == reference_language(model, pattern)
        assert masks_along_walks(a) == masks_along_walks(b)
        # the agnostic lattice is the trie walk itself, rows and all
        rows_a = bpefst.promote(model, pattern, mode="agnostic", parts=PartsCache()).dfa()
        rows_b = bpefst.promote(model, pattern, mode="agnostic", parts=cache).dfa()
        assert (rows_a.transitions, rows_a.start, rows_a.finals) == (rows_b.transitions, rows_b.start, rows_b.finals)


def test_parts_of_a_trained_tokenizer_read_back(tmp_path):
    """A trained 600-token vocabulary: its subtree index and compiled walker tables go through the file."""
    model = corpus_model()
    built, read = written_and_read(model, tmp_path)
    assert_same_parts(built, read)
    assert any(node >= 0 for node in read.trie.subtrees().alphabet_id)
    text = r"(the|[a-z]{2,5}) [a-z]{1,7}(ing|ed)?"
    for mode in ("canonical", "agnostic"):
        a = bpefst.promote(model, text, mode=mode, parts=PartsCache())
        cache = PartsCache()
        cache.get(model, tmp_path)
        b = bpefst.promote(model, text, mode=mode, parts=cache)
        assert masks_along_walks(a.guide()) == masks_along_walks(b.guide())
    # a pattern of more than 256 states is walked state by state (the compiled walker, on that engine)
    long = "a{300}"
    a = bpefst.promote(model, long, mode="agnostic", parts=PartsCache()).dfa()
    cache = PartsCache()
    cache.get(model, tmp_path)
    b = bpefst.promote(model, long, mode="agnostic", parts=cache).dfa()
    assert (a.transitions, a.finals) == (b.transitions, b.finals)


def test_implicit_automaton_read_back(tmp_path, monkeypatch):
    """Vocabularies past 65,536 tokens get the implicit A_BPE, whose index is built again, not stored."""
    from bpefst.bpe import canonical

    monkeypatch.setattr(canonical, "AUTO_EXPLICIT_LIMIT", 0)
    monkeypatch.setattr(parts_module, "AUTO_EXPLICIT_LIMIT", 0)
    model = small_model(4)
    built, read = written_and_read(model, tmp_path)
    assert read.automaton.encoding == "implicit"
    assert_same_parts(built, read)
    cache = PartsCache()
    cache.get(model, tmp_path)
    for pattern in PATTERNS:
        assert guided_sequences(bpefst.promote(model, pattern, parts=cache).guide()) == reference_language(model, pattern)
    monkeypatch.setattr(parts_module, "AUTO_EXPLICIT_LIMIT", 1 << 20)  # a file of the other encoding: rebuilt
    with pytest.warns(PartsCacheWarning, match="implicit A_BPE"):
        PartsCache().get(model, tmp_path)


# -- through bpefst.promote(cache_dir=) -------------------------------------------------------------------
def test_promote_cache_dir_writes_the_parts_and_a_new_cache_reads_them(tmp_path):
    model = small_model(5)
    first = bpefst.promote(model, PATTERNS[0], cache_dir=tmp_path, parts=PartsCache())
    path = cache_path(tmp_path, model.fingerprint)
    assert path.exists() and sorted(p.suffix for p in tmp_path.iterdir()) == [".guide", ".parts"]
    stamp = path.stat().st_mtime_ns
    cache = PartsCache()
    second = bpefst.promote(model, PATTERNS[1], cache_dir=tmp_path, parts=cache)  # another pattern: its own .guide
    assert path.stat().st_mtime_ns == stamp, "an intact parts file was written again"
    assert_same_parts(first.parts, second.parts)
    assert guided_sequences(second.guide()) == reference_language(model, PATTERNS[1])


def test_parts_in_memory_are_written_to_a_new_cache_dir(tmp_path):
    model = small_model(6)
    cache = PartsCache()
    parts = cache.get(model)
    assert cache.get(model, tmp_path / "new" / "dir") is parts  # in memory already: kept, and written there
    assert cache_path(tmp_path / "new" / "dir", model.fingerprint).exists()


def test_guide_cache_dir_writes_the_parts_too(tmp_path):
    """A cache_dir given to guide() only holds both files afterwards, and a new process's promote reads both."""
    model = small_model(7)
    language = bpefst.promote(model, PATTERNS[2], parts=PartsCache())
    language.guide(cache_dir=tmp_path)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".guide", ".parts"]
    again = bpefst.promote(model, PATTERNS[2], cache_dir=tmp_path, parts=PartsCache())
    assert again.built["product from cache"] == 1
    assert_same_parts(language.parts, again.parts)
    assert guided_sequences(again.guide()) == reference_language(model, PATTERNS[2])


def test_a_file_read_in_a_fresh_process_on_the_other_engine(tmp_path):
    """The file holds no engine's private state: written here, read by a new process on the other engine
    (or on this one, where only one is built), the masks agree."""
    model = small_model(7)
    model_path = tmp_path / "model.bpefst"
    save_tokenizer(model, model_path)
    here = bpefst.promote(model, PATTERNS[0], cache_dir=tmp_path / "cache", parts=PartsCache())
    expected = masks_along_walks(here.guide())
    script = (
        "import json, sys, warnings\n"
        "warnings.simplefilter('error')\n"
        "import bpefst\n"
        "from bpefst.promotion.parts import PartsCache, TokenizerParts\n"
        "from bpefst.tokenizer import load_tokenizer\n"
        "sys.path.insert(0, sys.argv[3])\n"
        "from test_parts_cache import masks_along_walks\n"
        "model = load_tokenizer(sys.argv[1])\n"
        "TokenizerParts.build = None\n"
        "language = bpefst.promote(model, sys.argv[4], cache_dir=sys.argv[2], parts=PartsCache())\n"
        "print(json.dumps(masks_along_walks(language.guide())))\n"
    )
    env = dict(os.environ)
    other_is_pure = native.core is not None
    env.pop("BPEFST_PURE_PYTHON", None)
    if other_is_pure:
        env["BPEFST_PURE_PYTHON"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, "-c", script, str(model_path), str(tmp_path / "cache"), str(ROOT / "tests"), PATTERNS[0]],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected


# -- files that cannot be used: a warning, the parts built again, the file written again ----------------------
def damaged_files(path: Path, model, other_model):
    """``(label, bytes)`` for files that must not be read as these parts."""
    good = path.read_bytes()
    document = msgpack.unpackb(good, raw=False)

    def rewritten(**changes) -> bytes:
        return msgpack.packb({**document, **changes}, use_bin_type=True)

    body = bytearray(document["body"])
    body[len(body) // 2] ^= 0x10
    tables = msgpack.unpackb(document["body"], raw=False, strict_map_key=False)
    tables["trie"]["tokens"] = tables["trie"]["tokens"][:-1]  # consistent checksum, inconsistent tables
    forged = msgpack.packb(tables, use_bin_type=True)
    tables = msgpack.unpackb(document["body"], raw=False, strict_map_key=False)
    tables["automaton"]["explicit"]["index"] = b"\xff" * len(tables["automaton"]["explicit"]["index"])  # no such piece
    bad_pieces = msgpack.packb(tables, use_bin_type=True)
    return [
        ("empty", b""),
        ("truncated", good[: len(good) // 2]),
        ("garbage", bytes(range(256)) * 4),
        ("not a map", msgpack.packb([1, 2, 3])),
        ("flipped bit in the body", rewritten(body=bytes(body))),
        ("another schema", rewritten(schema=parts_module.SCHEMA + 1)),
        ("another kind", rewritten(kind="guide-cache")),
        ("another tokenizer", rewritten(fingerprint=other_model.fingerprint)),
        ("forged tables", rewritten(body=forged, sha256=hashlib.sha256(forged).hexdigest())),
        ("forged pieces", rewritten(body=bad_pieces, sha256=hashlib.sha256(bad_pieces).hexdigest())),
    ]


def test_unusable_files_are_rebuilt_with_a_warning(tmp_path):
    model, other = small_model(8), small_model(9)
    assert model.fingerprint != other.fingerprint
    PartsCache().get(model, tmp_path)
    path = cache_path(tmp_path, model.fingerprint)
    good = path.read_bytes()
    fresh = TokenizerParts.build(model)
    for label, data in damaged_files(path, model, other):
        path.write_bytes(data)
        cache = PartsCache()
        with pytest.warns(PartsCacheWarning) as caught:
            parts = cache.get(model, tmp_path)
        assert len(caught) == 1, label
        message = str(caught[0].message)
        assert "\n" not in message and str(path) in message and "built again" in message, (label, message)
        assert_same_parts(fresh, parts)
        assert guided_sequences(bpefst.promote(model, PATTERNS[0], parts=cache).guide()) == reference_language(model, PATTERNS[0])
        # written again: the next reader is silent and gets the same parts
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert_same_parts(fresh, PartsCache().get(model, tmp_path))
        assert msgpack.unpackb(path.read_bytes(), raw=False)["sha256"] == msgpack.unpackb(good, raw=False)["sha256"], label


def test_no_file_is_silent_and_an_unwritable_directory_is_a_plain_error(tmp_path):
    model = small_model(10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TokenizerParts.load(tmp_path / "missing.parts", model) is None
        assert TokenizerParts.load(tmp_path / "not-a-dir" / "x.parts", model) is None
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    with pytest.raises(bpefst.BpefstError, match="cannot write"):
        PartsCache().get(model, blocker / "cache")


# -- the real vocabularies ------------------------------------------------------------------------------------
GPT2_PATTERNS = [r"(yes|no)", r"[A-Z][a-z]{1,8}( [a-z]{1,8}){0,3}\.", r"\{\"id\": [0-9]{1,4}, \"ok\": (true|false)\}"]


@pytest.mark.parametrize("name", ["gpt2", "cl100k"])
def test_real_vocabulary_read_back(shared_data, tmp_path, name):
    from bpefst.tokenizer import load_tokenizer

    model = load_tokenizer(shared_data / ("gpt2/vocab.json" if name == "gpt2" else "tiktoken/cl100k_base.tiktoken.gz"))
    built, read = written_and_read(model, tmp_path)
    a, b = built.trie, read.trie
    assert (a.children, a.tokens) == (b.children, b.tokens) and a.chain_lists() == b.chain_lists() and a.steps() == b.steps()
    assert read.automaton.encoding == ("explicit" if name == "gpt2" else "implicit")
    rng = random.Random(1)
    for u in [-1, *rng.sample(range(built.automaton.forest.size), 200)]:
        assert built.automaton.banned_mask(u) == read.automaton.banned_mask(u)
    for pattern in GPT2_PATTERNS:
        one, other = PartsCache(), PartsCache()
        one._entries[model.fingerprint], other._entries[model.fingerprint] = built, read
        ga = bpefst.promote(model, pattern, parts=one).guide()
        gb = bpefst.promote(model, pattern, parts=other).guide()
        seen = masks_along_walks(ga, walks=6, length=10)
        assert seen == masks_along_walks(gb, walks=6, length=10) and sum(map(len, seen)) > len(seen)


def test_a_cache_dir_with_a_tilde_is_the_home_directory(tmp_path, monkeypatch) -> None:
    """``cache_dir="~/..."`` (as the docs write it) means the user's home, not a folder named ``~``."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    model = random_byte_model(3, alphabet=b"ab1 ", num_merges=6, pattern=PRESETS["gpt2"])
    bpefst.promote(model, "(ab|b1)+", cache_dir="~/bpefst-cache").guide()
    written = sorted(p.suffix for p in (tmp_path / "bpefst-cache").iterdir())
    assert ".guide" in written and ".parts" in written
    assert not (tmp_path / "~").exists()
