"""The public Python API, used only through ``import bpefst``, against tiktoken and the CS336 reference.

Oracles: tiktoken built offline from the shared rank files (cl100k, o200k) and
from GPT-2's vocab.json turned into ranks here (GPT-2's ids are its ranks);
tiktoken's own ``decode_with_offsets``; the CS336 reference merges.
"""

from __future__ import annotations

import base64
import json
import multiprocessing
import pickle
import random
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

import bpefst
from conftest import TIKTOKEN_SPECS, corpus_prefix, require_shared, tiktoken_oracle

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
ENCODINGS = ("cl100k_base", "o200k_base", "gpt2")


def gpt2_byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in character for each byte (its encoder.py), inverted."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in chars.items()}


@lru_cache(maxsize=None)
def gpt2_ranks() -> dict[bytes, int]:
    decoder = gpt2_byte_decoder()
    vocab = json.loads((require_shared() / "gpt2" / "vocab.json").read_text(encoding="utf-8"))
    return {bytes(decoder[c] for c in token): i for token, i in vocab.items() if token != "<|endoftext|>"}


@lru_cache(maxsize=None)
def oracle(name: str):
    if name in TIKTOKEN_SPECS:
        return tiktoken_oracle(name)
    tiktoken = pytest.importorskip("tiktoken")
    return tiktoken.Encoding("gpt2", pat_str=GPT2_PATTERN, mergeable_ranks=gpt2_ranks(), special_tokens={"<|endoftext|>": 50256})


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    """A BPEFST_DATA directory: the shared rank files, and GPT-2 written as a rank file here."""
    shared = require_shared()
    directory = tmp_path_factory.mktemp("bpefst-data")
    for name in ("cl100k_base", "o200k_base"):
        (directory / f"{name}.tiktoken.gz").symlink_to(shared / "tiktoken" / f"{name}.tiktoken.gz")
    lines = [base64.b64encode(token) + b" " + str(rank).encode() for token, rank in sorted(gpt2_ranks().items(), key=lambda kv: kv[1])]
    (directory / "gpt2.tiktoken").write_bytes(b"\n".join(lines) + b"\n")
    return directory


@pytest.fixture(scope="module")
def encodings(data_dir) -> dict:
    mp = pytest.MonkeyPatch()
    mp.setenv("BPEFST_DATA", str(data_dir))
    try:
        yield {name: bpefst.get_encoding(name) for name in ENCODINGS}
    finally:
        mp.undo()


def sample_text(size: int = 120_000) -> str:
    return corpus_prefix("pydocs", size) + corpus_prefix("fortunes", size)


@pytest.mark.parametrize("name", ENCODINGS)
def test_every_method_agrees_with_tiktoken(encodings, name: str) -> None:
    enc, ref = encodings[name], oracle(name)
    text = sample_text()
    ids = ref.encode_ordinary(text)
    assert enc.encode(text) == ids
    assert enc.encode_ordinary(text) == ids
    assert enc.decode(ids) == ref.decode(ids)
    assert enc.decode_bytes(ids) == ref.decode_bytes(ids)
    assert list(enc.encode_to_numpy(text)) == list(ref.encode_to_numpy(text))
    lines = text.splitlines()[:400]
    assert enc.encode_batch(lines) == ref.encode_batch(lines)
    assert enc.encode_batch(lines, jobs=2) == ref.encode_batch(lines)
    assert enc.n_vocab == ref.n_vocab and enc.max_token_value == ref.max_token_value
    assert enc.eot_token == ref.eot_token
    assert enc.special_tokens_set == ref.special_tokens_set
    assert enc.name == name
    for token in random.Random(0).sample(range(ref.n_vocab - 2000), 300) + [ref.eot_token]:
        assert enc.token_bytes(token) == ref.decode_single_token_bytes(token)


@pytest.mark.parametrize("name", ENCODINGS)
def test_special_tokens_follow_tiktoken(encodings, name: str) -> None:
    enc, ref = encodings[name], oracle(name)
    text = "hello <|endoftext|> world<|endoftext|>!"
    assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
    assert enc.encode(text, allowed_special={"<|endoftext|>"}) == ref.encode(text, allowed_special={"<|endoftext|>"})
    assert enc.encode(text, disallowed_special=()) == ref.encode(text, disallowed_special=())
    with pytest.raises(ValueError, match="allowed_special="):
        enc.encode(text)
    with pytest.raises(bpefst.BpefstError, match=r"allowed_special= takes \"all\" or a collection"):
        enc.encode(text, allowed_special="<|endoftext|>")


@pytest.mark.parametrize("name", ENCODINGS)
def test_decode_with_offsets_agrees_with_tiktoken(encodings, name: str) -> None:
    enc, ref = encodings[name], oracle(name)
    for line in corpus_prefix("fortunes", 60_000).splitlines()[:300]:
        ids = ref.encode_ordinary(line)
        assert enc.decode_with_offsets(ids) == ref.decode_with_offsets(ids), line


@pytest.mark.parametrize("name", ENCODINGS)
def test_encode_iterable_equals_encoding_the_whole(encodings, name: str) -> None:
    """Random cuts anywhere: inside chunks, special tokens, multi-byte characters' neighbours, lines."""
    enc, ref = encodings[name], oracle(name)
    rng = random.Random(name)
    base = corpus_prefix("fortunes", 30_000)
    text = base[:10_000] + "<|endoftext|>" + base[10_000:20_000] + "\n<|endoftext|><|endoftext|>" + base[20_000:]
    expected = ref.encode(text, allowed_special="all")
    for _ in range(5):
        cuts = sorted(rng.sample(range(1, len(text)), 300)) + [text.index("<|endoftext|>") + 5]
        cuts = sorted(set(cuts))
        pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        assert list(enc.encode_iterable(iter(pieces), allowed_special="all")) == expected
    assert list(enc.encode_iterable(text.splitlines(keepends=True), disallowed_special=())) == ref.encode_ordinary(text)


def test_from_vocab_merges_reproduces_tiktoken_gpt2() -> None:
    """CS336 / minbpe shapes: vocab id -> bytes (the special among them), merges as byte pairs."""
    data = require_shared() / "gpt2"
    decoder = gpt2_byte_decoder()
    vocab = {i: (t.encode() if t == "<|endoftext|>" else bytes(decoder[c] for c in t))
             for t, i in json.loads((data / "vocab.json").read_text(encoding="utf-8")).items()}
    lines = (data / "merges.txt").read_text(encoding="utf-8").splitlines()
    merges = [tuple(bytes(decoder[c] for c in part) for part in line.split(" ")) for line in lines if line and not line.startswith("#version")]
    tok = bpefst.Tokenizer.from_vocab_merges(vocab, merges, special_tokens=["<|endoftext|>"])
    text = sample_text(60_000) + "<|endoftext|>"
    assert tok.encode(text, allowed_special="all") == oracle("gpt2").encode(text, allowed_special="all")
    assert tok.vocab[50000] == vocab[50000] and tok.merges == merges


def test_from_vocab_merges_refuses_what_it_cannot_use() -> None:
    vocab = {i: bytes([i]) for i in range(256)}
    with pytest.raises(bpefst.BpefstError, match="not in vocab="):
        bpefst.Tokenizer.from_vocab_merges(vocab, [(b"a", b"bc")])
    with pytest.raises(bpefst.BpefstError, match="pairs of bytes"):
        bpefst.Tokenizer.from_vocab_merges(vocab, [("a", "b")])


def test_train_returns_the_cs336_reference_merges_as_bytes() -> None:
    data = require_shared() / "cs336"
    decoder = gpt2_byte_decoder()
    lines = (data / "train-bpe-reference-merges.txt").read_text(encoding="utf-8").splitlines()
    expected = [tuple(bytes(decoder[c] for c in part) for part in line.split(" ")) for line in lines if line]
    corpus = str(data / "corpus.en")
    tok = bpefst.train(corpus, 500, special_tokens=["<|endoftext|>"])
    assert tok.merges == expected
    assert len(tok.vocab) + len(tok.special_tokens) == 500 and tok.special_tokens == {"<|endoftext|>": 0}
    assert bpefst.train(Path(corpus), 500, special_tokens=["<|endoftext|>"]).merges == expected
    assert bpefst.train([Path(corpus)], 500, special_tokens=["<|endoftext|>"]).merges == expected
    documents = Path(corpus).read_text(encoding="utf-8").split("<|endoftext|>")
    assert bpefst.train(iter(documents), 500, special_tokens=["<|endoftext|>"]).merges == expected
    with pytest.raises(bpefst.BpefstError, match="mixing file names and texts"):
        bpefst.train([corpus, "some text"], 500)


def test_get_encoding_says_where_it_looked(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BPEFST_DATA", str(tmp_path))
    with pytest.raises(bpefst.BpefstError) as error:
        bpefst.get_encoding("no_such_encoding")
    message = str(error.value)
    assert str(tmp_path) in message and "no_such_encoding.bpefst" in message and "BPEFST_DATA" in message


def test_save_and_load_every_format(encodings, tmp_path) -> None:
    enc, ref = encodings["gpt2"], oracle("gpt2")
    text = sample_text(30_000)
    for fmt, name in (("bpefst", "g.bpefst"), ("hf", "tokenizer.json"), ("tiktoken", "gpt2.tiktoken")):
        enc.save(tmp_path / name, format=fmt)
        assert bpefst.load(tmp_path / name).encode(text) == ref.encode_ordinary(text), fmt
    enc.save(tmp_path / "dir", format="gpt2")
    assert bpefst.load(tmp_path / "dir").encode(text) == ref.encode_ordinary(text)


def test_pickle_is_small_and_survives_worker_pools(encodings, tmp_path) -> None:
    enc = encodings["cl100k_base"]
    text = sample_text(20_000)
    expected = oracle("cl100k_base").encode_ordinary(text)
    enc.encode_batch([text, text], jobs=2)  # leaves a worker pool behind, which must not travel
    data = pickle.dumps(enc)
    enc.save(tmp_path / "cl100k.bpefst")
    assert len(data) <= 1.5 * (tmp_path / "cl100k.bpefst").stat().st_size
    assert pickle.loads(data).encode(text) == expected
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_encode_in_child, (enc, text)) == expected


def _encode_in_child(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text)


def test_compile_and_load_automaton(encodings, tmp_path) -> None:
    enc, ref = encodings["gpt2"], oracle("gpt2")
    dfa = bpefst.compile(enc, "dfa")
    ids = ref.encode_ordinary("hello world, the automaton knows")
    assert dfa.is_canonical(ids)
    spelled = [ref.encode_single_token(bytes([b])) for b in b"hello"]  # the bytes one by one: not BPE's answer
    assert not dfa.is_canonical(spelled)
    dfa.save(tmp_path / "gpt2.dfa")
    loaded = bpefst.load_automaton(tmp_path / "gpt2.dfa")
    assert loaded.is_canonical(ids) and not loaded.is_canonical(spelled)
    assert bpefst.load(tmp_path / "gpt2.dfa").encode("hello") == ref.encode_ordinary("hello")
    fst = bpefst.compile(enc, "transducer", budget=50)
    fst.save(tmp_path / "gpt2.fst")
    assert bpefst.load(tmp_path / "gpt2.fst").encode(sample_text(20_000)) == ref.encode_ordinary(sample_text(20_000))
    assert isinstance(bpefst.load_automaton(tmp_path / "gpt2.fst"), type(fst))


def test_promote_views_accept_exactly_the_encodings(encodings, tmp_path) -> None:
    enc, ref = encodings["gpt2"], oracle("gpt2")
    regex = r"[0-9]{1,3}(\.[0-9]{1,2})? (kg|lb)"
    language = bpefst.promote(enc, regex)
    rng = random.Random(1)
    samples = [f"{rng.randint(0, 999)}{rng.choice(['', '.' + str(rng.randint(0, 99))])} {rng.choice(['kg', 'lb'])}" for _ in range(60)]
    for text in samples:
        ids = ref.encode_ordinary(text)
        assert language.accepts(ids), text
        assert language.dfa().accepts(ids) and language.shared_rows().accepts(ids)
        byte_ids = [ref.encode_single_token(bytes([b])) for b in text.encode()]
        if byte_ids != ids:
            assert not language.accepts(byte_ids) and not language.dfa().accepts(byte_ids)
    assert not language.accepts(ref.encode_ordinary("12 kgs"))
    agnostic = bpefst.promote(enc, regex, mode="agnostic")
    assert all(agnostic.accepts([ref.encode_single_token(bytes([b])) for b in t.encode()]) for t in samples)
    language.save(tmp_path / "w.msgpack")
    loaded = bpefst.load_automaton(tmp_path / "w.msgpack")
    assert all(loaded.accepts(ref.encode_ordinary(t)) for t in samples) and loaded.mode == "canonical"
    with pytest.raises(bpefst.BpefstError, match="loaded from a file"):
        loaded.on_demand()


def test_promote_output_of_the_cli_loads(tmp_path) -> None:
    vocab = require_shared() / "gpt2" / "vocab.json"
    out = tmp_path / "date.msgpack"
    subprocess.run([sys.executable, "-m", "bpefst", "promote", str(vocab), "--regex", "[0-9]{4}", "-o", str(out)], check=True)
    language = bpefst.load_automaton(out)
    assert language.accepts(oracle("gpt2").encode_ordinary("2026")) and not language.accepts(oracle("gpt2").encode_ordinary("202"))


def test_promote_a_json_schema_and_decode_with_stop_ids(encodings) -> None:
    """bpefst.promote(json_schema=...): the tokenizer's own encodings of valid documents, EOS only at acceptance."""
    enc, ref = encodings["gpt2"], oracle("gpt2")
    schema = {"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 120},
                                               "ok": {"type": "boolean"}}, "required": ["age"]}
    language = bpefst.promote(enc, json_schema=schema)
    for document in ('{"age":42}', '{"age":0,"ok":true}', '{"age":120,"ok":false}'):
        ids = ref.encode_ordinary(document)
        assert language.accepts(ids), document
        guide = language.guide()
        state = guide.start
        for token in ids:
            assert enc.eot_token not in guide.allowed_token_ids(state)
            state = guide.step(state, token)
        assert enc.eot_token in guide.allowed_token_ids(state)
    for document in ('{"age":121}', '{"age":-1}', '{"ok":true}', '{"age": 42}'):
        assert not language.accepts(ref.encode_ordinary(document)), document
    with pytest.raises(bpefst.BpefstError, match="/properties/x"):
        bpefst.promote(enc, json_schema={"type": "object", "properties": {"x": {"type": "number", "multipleOf": 0.5}}})


def test_promote_a_json_schema_closes_objects_only_when_open_ones_are_too_large(encodings) -> None:
    """open_objects=None (the default): open objects as JSON Schema reads them where the language fits its
    limits, else closed with a SchemaWarning; open_objects=True refuses instead; False closes them."""
    import warnings

    from bpefst.automata.errors import ArcLimitExceeded
    from bpefst.regex.json_schema import SchemaWarning

    enc, ref = encodings["gpt2"], oracle("gpt2")
    schema = {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}
    listed, extra = ref.encode_ordinary('{"a":true}'), ref.encode_ordinary('{"a":true,"b":1}')
    closed = bpefst.promote(enc, json_schema=schema, max_depth=1, open_objects=False)
    assert closed.accepts(listed) and not closed.accepts(extra)
    closed_arcs = closed.on_demand().lattice_arcs
    with warnings.catch_warnings():
        warnings.simplefilter("error", SchemaWarning)
        opened = bpefst.promote(enc, json_schema=schema, max_depth=1)  # fits: open, no warning
    assert opened.accepts(listed) and opened.accepts(extra)
    with pytest.warns(SchemaWarning, match="objects closed"):
        fallback = bpefst.promote(enc, json_schema=schema, max_depth=1, max_lattice_arcs=closed_arcs)
    assert fallback.accepts(listed) and not fallback.accepts(extra)
    with pytest.raises(ArcLimitExceeded):
        bpefst.promote(enc, json_schema=schema, max_depth=1, max_lattice_arcs=closed_arcs, open_objects=True)


def test_promote_a_json_schema_cuts_extra_values_before_closing_objects(encodings) -> None:
    """open_objects=None: when open objects are too large, the first cut that fits (here extra members with
    scalar values), in one SchemaWarning; its documents are valid (jsonschema), the cut ones refused."""
    from bpefst.regex.json_schema import SchemaWarning

    jsonschema = pytest.importorskip("jsonschema")
    enc, ref = encodings["gpt2"], oracle("gpt2")
    schema = {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}
    scalars = bpefst.promote(enc, json_schema=schema, max_depth=1, open_objects="scalar-values")
    limit = scalars.on_demand().lattice_arcs
    with pytest.warns(SchemaWarning, match="scalars only") as caught:
        language = bpefst.promote(enc, json_schema=schema, max_depth=1, max_lattice_arcs=limit)
    assert len([w for w in caught if issubclass(w.category, SchemaWarning)]) == 1
    for document, accepted in (({"a": True, "b": 1}, True), ({"a": False, "b ": "x"}, True), ({"a": True}, True),
                               ({"a": True, "b": [1]}, False), ({"a": True, "b": {}}, False)):
        assert jsonschema.Draft202012Validator(schema).is_valid(document)
        assert language.accepts(ref.encode_ordinary(json.dumps(document, separators=(",", ":")))) == accepted, document
    for document in ({"a": 1}, {"b": 1}, {"a": True, "a ": 1, "c": []}):
        text = json.dumps(document, separators=(",", ":"))
        assert not jsonschema.Draft202012Validator(schema).is_valid(document) or not language.accepts(ref.encode_ordinary(text))
        if not jsonschema.Draft202012Validator(schema).is_valid(document):
            assert not language.accepts(ref.encode_ordinary(text)), text


def test_schema_fallback_tries_the_cuts_least_lost_first_and_skips_hopeless_ones() -> None:
    """The order of SCHEMA_CUTS; cuts no smaller than one that failed, and cuts estimated too large, skipped;
    the last cut always tried."""
    from bpefst.promotion.schema_fallback import schema_fallback
    from bpefst.automata.errors import ArcLimitExceeded
    from bpefst.regex import ByteAlphabet
    from bpefst.regex.json_schema import schema_to_dfa

    schema = {"type": "object", "properties": {"in": {"type": "object", "properties": {"b": {"type": "null"}}}}}

    def translate(openness, closed):
        return schema_to_dfa(schema, ByteAlphabet(), max_depth=2, open_objects=openness, closed=closed)

    def attempts(fits, vocabulary=1):
        tried = []

        def build(pattern, openness, lattice_per_arc):
            assert (lattice_per_arc == 1.0) == (openness is False)  # estimates refuse early, except on the last cut
            tried.append(openness)
            if openness not in fits:
                raise ArcLimitExceeded("the token lattice (every spelling of every match)", 10)
            return openness

        return schema_fallback(translate, build, None, max_depth=2, max_arcs=10**6, vocabulary=vocabulary), tried

    (result, message), tried = attempts({True})
    assert (result, message, tried) == (True, None, [True])
    (result, message), tried = attempts({"values-1", False})
    assert (result, tried) == ("values-1", [True, "values-1"]) and "nest at most 1 array/object" in message
    # "outermost" has more arcs than "scalar-values" here, which did not fit: not tried
    (result, message), tried = attempts({"outermost", "outermost-scalar-values", False})
    assert tried == [True, "values-1", "scalar-values", "outermost-scalar-values"] and result == "outermost-scalar-values"
    assert "except the outermost, whose extra members' unconstrained values are scalars: /properties/in;" in message
    assert "open_objects=True refuses" in message
    (result, message), tried = attempts({False}, vocabulary=10**9)  # every estimate hopeless: only the last is built
    assert tried == [False] and "estimated from its automaton" in message
    (result, message), tried = attempts({False})
    assert tried == [True, "values-1", "scalar-values", "outermost-scalar-values", False]
    assert message.startswith("objects closed (no members beyond the listed ones): (the document), /properties/in;")
