"""The ``token-guide`` artifact (``TokenLanguage.save(form="guide")``, ``bpefst promote --form guide``): a
canonical language's on-demand set-up written out and read back with its tokenizer.  Oracles: the reference
encoder (the language is exactly the encodings of the pattern's matches, enumerated), the language promoted
afresh, ``jsonschema`` for sampled documents and HF ``tokenizers`` for GPT-2's ids."""

from __future__ import annotations

import json
import random

import pytest

import bpefst
from bpefst.artifact import read_header_and_body, repack
from bpefst.automata import DFA, enumerate_strings, random_within_reach
from bpefst.errors import ArtifactError, BpefstError
from bpefst.promotion import TokenLanguage
from bpefst.regex import alphabet_for, compile_regex
from bpefst.tokenizer import PRESETS, ReferenceEncoder, save_tokenizer
from small_models import random_byte_model

REGEX = r"(ab|b1){1,3}( a{1,2})?"


def small_model(seed: int):
    return random_byte_model(seed, alphabet=b"ab1 ", num_merges=15, pattern=PRESETS["gpt2"])


def matches(model, regex: str) -> list[str]:
    """Every match of a finite pattern, as text (the pattern's own DFA enumerated)."""
    pattern = compile_regex(regex, alphabet_for(model))
    encoder = ReferenceEncoder(model)
    return [encoder.decode_bytes(symbols).decode() for symbols in enumerate_strings(pattern, 16)]


def token_sequences(dfa: DFA) -> set[tuple[int, ...]]:
    return set(enumerate_strings(dfa, 16))


@pytest.mark.parametrize("seed", range(3))
def test_a_saved_guide_holds_exactly_the_encodings_of_the_matches(tmp_path, seed):
    model = small_model(seed)
    language = bpefst.promote(model, REGEX)
    path = tmp_path / "x.guide"
    language.save(path, form="guide")
    loaded = TokenLanguage.load(path, tokenizer=model)
    encoder = ReferenceEncoder(model)
    want = {tuple(encoder.encode(text)) for text in matches(model, REGEX)}
    assert token_sequences(loaded.on_demand().to_dfa()) == want
    assert token_sequences(loaded.dfa()) == want  # every view of the loaded language, not only the guide
    assert loaded.built["product"] == 0 and loaded.built["chunked pattern"] == 0
    guide, fresh = loaded.guide(), language.guide()
    rng = random.Random(seed)
    for _ in range(10):
        a, b = fresh.start, guide.start
        for _ in range(8):
            assert guide.allowed_token_ids(b) == fresh.allowed_token_ids(a)
            assert guide.is_accepting(b) == fresh.is_accepting(a)
            allowed = [t for t in fresh.allowed(a)]
            if not allowed:
                break
            token = rng.choice(allowed)
            a, b = fresh.step(a, token), guide.step(b, token)
    loaded.save(tmp_path / "again.guide", form="guide")  # a loaded guide saves the same language
    again = TokenLanguage.load(tmp_path / "again.guide", tokenizer=model)
    assert token_sequences(again.on_demand().to_dfa()) == want


def test_a_guide_is_read_only_with_its_tokenizer(tmp_path):
    model = small_model(0)
    path = tmp_path / "x.guide"
    bpefst.promote(model, REGEX).save(path, form="guide")
    with pytest.raises(BpefstError, match="load it with the tokenizer it was built for"):
        TokenLanguage.load(path)
    with pytest.raises(BpefstError, match="load it with the tokenizer"):
        bpefst.load_automaton(path)
    with pytest.raises(ArtifactError, match="built from tokenizer"):
        TokenLanguage.load(path, tokenizer=small_model(1))
    with pytest.raises(BpefstError, match="expected_fingerprint"):
        TokenLanguage.load(path, "0" * 64, tokenizer=model)
    assert bpefst.load_automaton(path, tokenizer=model).accepts(ReferenceEncoder(model).encode("abab a"))
    with pytest.raises(BpefstError, match="tokenizer= takes a bpefst.Tokenizer"):
        TokenLanguage.load(path, tokenizer="gpt2")
    written_out = tmp_path / "x.msgpack"  # a token-automaton read with a tokenizer is checked against it too
    bpefst.promote(model, REGEX).save(written_out)
    assert TokenLanguage.load(written_out, tokenizer=model).accepts(ReferenceEncoder(model).encode("abab a"))
    with pytest.raises(ArtifactError, match="built from tokenizer"):
        TokenLanguage.load(written_out, tokenizer=small_model(1))


def _tampered(path, tmp_path, edit) -> str:
    """A copy of the artifact at ``path`` with its body edited and its checksum made to match again."""
    document = read_header_and_body(path)
    edit(document["body"])
    out = tmp_path / "tampered.guide"
    out.write_bytes(repack(document))
    return str(out)


def _set(field, value):
    def edit(body):
        body[field] = value
    return edit


def _first_row_names(group=None, target=None):
    from bpefst.artifact import pack_ints, unpack_ints

    def edit(body):
        row = next(k for k, packed in enumerate(body["filed"]) if packed)
        pairs = unpack_ints(body["filed"][row])
        pairs[0] = pairs[0] if group is None else group(body)
        pairs[1] = pairs[1] if target is None else target(body)
        body["filed"][row] = pack_ints(pairs)
    return edit


@pytest.mark.parametrize("edit, fragment", [
    (_set("start", 10**6), "the start is not a state"),
    (_set("mode", "agnostic"), "its mode"),
    (_first_row_names(group=lambda body: len(body["groups"])), "names no group or no state"),
    (_first_row_names(target=lambda body: len(body["filed"])), "names no group or no state"),
    (lambda body: body["groups"].__setitem__(0, (1 << 20).to_bytes(4, "little")), "a group names a token past the vocabulary"),
    (lambda body: body["goods"].__setitem__(0, b"\xff" * 100), "a good set names a token past the vocabulary"),
    (_set("goods", []), "names no entry"),
    (_set("groups", []), "names no group or no state"),
    (lambda body: body.pop("filed"), "a field is missing or malformed"),
    (lambda body: body.__setitem__("filed", ["not packed"] * len(body["filed"])), "a field is missing or malformed"),
])
def test_a_tampered_guide_is_refused_when_read(tmp_path, edit, fragment):
    """Every number is checked against what it numbers (a checksum alone is recomputed by whoever edits)."""
    model = small_model(0)
    path = tmp_path / "x.guide"
    bpefst.promote(model, REGEX).save(path, form="guide")
    bad = _tampered(path, tmp_path, edit)
    with pytest.raises(ArtifactError, match=fragment):
        TokenLanguage.load(bad, tokenizer=model)
    data = bytearray(path.read_bytes())
    data[-3] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum"):
        TokenLanguage.load(path, tokenizer=model)


def test_only_a_canonical_language_saves_a_guide(tmp_path):
    model = small_model(0)
    with pytest.raises(BpefstError, match="on-demand form exists for mode='canonical'"):
        bpefst.promote(model, REGEX, mode="agnostic").save(tmp_path / "x.guide", form="guide")
    with pytest.raises(BpefstError, match="form= must be"):
        bpefst.promote(model, REGEX).save(tmp_path / "x.guide", form="guides")
    assert not (tmp_path / "x.guide").exists()


# -- sampling without counts ----------------------------------------------------------------------------
def test_random_within_reach_draws_accepted_strings_within_the_length():
    dfa = DFA([{1: 1}, {2: 2, 3: 3}, {2: 3, 3: 2}, {}], 0, frozenset({1, 3}))  # (1, 3 | 2 (3 2)* 2)?
    rng = random.Random(0)
    seen = set()
    for _ in range(400):
        string = random_within_reach(dfa, rng, 3)
        assert dfa.accepts(string) and len(string) <= 3
        seen.add(string)
    assert seen == set(enumerate_strings(dfa, 3)) == {(1,), (1, 3), (1, 2, 2)}  # every accepted string within 3
    assert {random_within_reach(dfa, rng, 5) for _ in range(400)} == set(enumerate_strings(dfa, 5))
    assert {random_within_reach(dfa, rng, 2) for _ in range(200)} == {(1,), (1, 3)}
    assert random_within_reach(dfa, rng, 0) is None
    assert random_within_reach(DFA([{1: 0}], 0, frozenset()), rng, 5) is None


# -- the command line ---------------------------------------------------------------------------------------
def test_cli_writes_a_guide_whose_samples_are_valid_canonical_documents(tmp_path):
    from cli_runner import assert_user_error, run
    from test_json_schema import assert_sound

    model = random_byte_model(21, alphabet=b'{}[]":,abc01tru', num_merges=20, pattern=PRESETS["gpt2"])
    tokenizer_path = tmp_path / "byte.bpefst"
    save_tokenizer(model, tokenizer_path)
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 12},
                                               "b": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2},
                                               "c": {"type": "string", "maxLength": 3}},
              "required": ["a"]}
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(json.dumps(schema))
    out = tmp_path / "s.guide"
    result = run("promote", str(tokenizer_path), "--json-schema", str(schema_path), "--form", "guide", "--sample", "12",
                 "--stats", "-o", str(out))
    assert result.returncode == 0, result.stderr.decode()
    assert "lattice states" in result.stderr.decode()
    lines = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert len(lines) == 12
    encoder = ReferenceEncoder(model)
    texts = [line["text"] for line in lines]
    assert_sound(schema, texts, at_least=12)
    assert all(encoder.encode(line["text"]) == line["ids"] for line in lines)
    language = TokenLanguage.load(out, tokenizer=model)
    assert all(language.accepts(line["ids"]) for line in lines)
    assert not language.accepts(encoder.encode('{"a":13}'))
    info = run("info", str(out))
    assert info.returncode == 0 and "token-guide" in info.stdout.decode() and "lattice states" in info.stdout.decode()
    assert '"maxLength": 3' in info.stdout.decode()  # its source: the schema it was promoted from
    damaged = tmp_path / "damaged.guide"
    damaged.write_bytes(out.read_bytes()[:-10])
    assert_user_error(run("info", str(damaged)), "damaged.guide")
    assert_user_error(run("promote", str(tokenizer_path), "--json-schema", str(schema_path), "--form", "guide",
                          "--format", "json", "-o", str(tmp_path / "x.json")), "--form guide writes a msgpack artifact")
    assert_user_error(run("promote", str(tokenizer_path), "--json-schema", str(schema_path), "--form", "guide",
                          "--mode", "agnostic"), "--form guide keeps a canonical language")


def test_cli_keeps_a_gpt2_schema_too_large_to_write_out_as_a_guide(shared_data, tmp_path):
    """The user's path for a real schema over GPT-2: the written-out form is refused with a pointer to --form
    guide, which writes the guide; its samples are HF tokenizers' ids of documents the schema accepts."""
    from cli_runner import assert_user_error, run
    from conftest import hf_gpt2_oracle
    from test_json_schema import assert_sound

    vocab = str(shared_data / "gpt2" / "vocab.json")
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}, "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    schema_path = tmp_path / "person.json"
    schema_path.write_text(json.dumps(schema))
    assert_user_error(run("promote", vocab, "--json-schema", str(schema_path)), "--form guide")
    out = tmp_path / "person.guide"
    result = run("promote", vocab, "--json-schema", str(schema_path), "--form", "guide", "--sample", "5", "-o", str(out))
    assert result.returncode == 0, result.stderr.decode()
    lines = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert_sound(schema, [line["text"] for line in lines], at_least=5)
    oracle = hf_gpt2_oracle()
    assert all(oracle.encode(line["text"]).ids == line["ids"] for line in lines)
    tokenizer = bpefst.load(vocab)
    language = TokenLanguage.load(out, tokenizer=tokenizer)
    fresh = bpefst.promote(tokenizer, json_schema=schema)
    for document in ('{"name":"Ann","age":41}', '{"name":"Ängström","age":-7}', '{"name":"too long a name","age":1}'):
        ids = oracle.encode(document).ids
        assert language.accepts(ids) == fresh.accepts(ids) == (len(json.loads(document)["name"]) <= 8)
