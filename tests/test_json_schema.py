"""JSON Schema -> pattern (bpefst.regex.json_schema), checked against jsonschema and json.loads.

Two directions per keyword, on small bounded schemas:

* sound: every string the compiled DFA accepts (all of them up to a length, over
  a small byte sub-alphabet, or uniform samples for large languages) is JSON
  that ``json.loads`` reads and ``jsonschema`` (with its format checker) accepts;
* complete for the generated form: every valid document from a brute-force
  universe of candidate values, serialized compactly with properties in schema
  order, is accepted.

Enumeration and sampling run on closed objects (``open_objects=False``: listed
members only), whose languages are small enough to list; completeness is
checked on both forms (the default, open objects, takes a superset).  Extra
members are tested in tests/test_json_schema_open.py and
tests/test_json_schema_automaton.py.
"""

from __future__ import annotations

import itertools
import json
import random
from datetime import date

import pytest
import regex

from bpefst.automata import DFA, trim
from bpefst.automata.language import enumerate_strings, sampler
from bpefst.regex import ByteAlphabet, compile_regex
from bpefst.regex.json_schema import SchemaError, schema_to_regex

jsonschema = pytest.importorskip("jsonschema")
Validator = jsonschema.Draft202012Validator


def validator(schema):
    return Validator(schema, format_checker=Validator.FORMAT_CHECKER)


def dfa_of(schema, whitespace=0, open_objects=False, member_order="schema") -> DFA:
    return compile_regex(schema_to_regex(schema, whitespace, open_objects=open_objects, member_order=member_order),
                         ByteAlphabet())


def restricted(dfa: DFA, alphabet: bytes) -> DFA:
    """The DFA's arcs on the given bytes only: its language intersected with alphabet*."""
    keep = set(alphabet)
    return trim(DFA([{s: t for s, t in row.items() if s in keep} for row in dfa.transitions], dfa.start, dfa.finals, check=False))


def accepted(schema, alphabet: bytes, max_len: int, whitespace=0, member_order="schema") -> list[str]:
    dfa = restricted(dfa_of(schema, whitespace, member_order=member_order), alphabet)
    return [bytes(s).decode("utf-8") for s in enumerate_strings(dfa, max_len)]


def samples(schema, count: int, max_len: int = 60, seed: int = 0, member_order="schema") -> list[str]:
    draw = sampler(dfa_of(schema, member_order=member_order), max_len)
    rng = random.Random(seed)
    found = [draw(rng) for _ in range(count)]
    assert all(s is not None for s in found)
    return [bytes(s).decode("utf-8") for s in found]


def assert_sound(schema, texts, at_least=1):
    check = validator(schema)
    assert len(texts) >= at_least, texts
    for text in texts:
        document = json.loads(text)
        errors = list(check.iter_errors(document))
        assert not errors, (text, errors[0].message)


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def assert_complete(schema, universe, at_least=1):
    """Every valid candidate, serialized compactly, is accepted; returns how many were valid."""
    check = validator(schema)
    valid = [v for v in universe if check.is_valid(v)]
    assert len(valid) >= at_least
    for open_objects in (False, True):
        pattern = regex.compile(schema_to_regex(schema, open_objects=open_objects))
        dfa = dfa_of(schema, open_objects=open_objects)
        for v in valid:
            text = compact(v)
            assert pattern.fullmatch(text), text
            assert dfa.accepts(list(text.encode("utf-8"))), text
    return len(valid)


STRINGS = ["".join(p) for n in range(5) for p in itertools.product("ab\"\\é", repeat=n)]
INTEGERS = list(range(-300, 301))
NUMBERS = [x / 4 for x in range(-48, 49)] + [-0.0, 1e2, 2.5e-1]
SCALARS = [None, True, False, 0, 1, -1, 2.5, "", "a", "ab"]


# -- strings -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("schema", [
    {"type": "string"},
    {"type": "string", "minLength": 2},
    {"type": "string", "maxLength": 2},
    {"type": "string", "minLength": 1, "maxLength": 3},
])
def test_string_lengths(schema):
    texts = accepted(schema, b'"ab\\nu0e9', 8)
    assert_sound(schema, texts, at_least=10)
    assert_complete(schema, STRINGS, at_least=5)
    assert_sound(schema, samples(schema, 200))


def test_string_escapes_count_as_one_character():
    schema = {"type": "string", "minLength": 2, "maxLength": 2}
    texts = accepted(schema, b'"a\\u00e9', 14)
    assert '"\\u00e9a"' in texts and '"\\\\a"' in texts and '"a"' not in texts
    assert_sound(schema, texts, at_least=5)
    # a surrogate pair is one character: never produced, so minLength cannot be fooled
    assert not regex.fullmatch(schema_to_regex(schema), '"\\ud83d\\ude00"')


@pytest.mark.parametrize("schema", [
    {"enum": ["red", "green", 3, None, True, [1, 2], {"a": 1}]},
    {"const": "x\"y"},
    {"type": "string", "enum": ["a", 1, "bb"], "maxLength": 1},
    {"type": ["integer", "null"], "enum": [1, 2.5, None, "x"]},
])
def test_enum_and_const(schema):
    dfa = dfa_of(schema)
    texts = [bytes(s).decode() for s in enumerate_strings(dfa, 30)]
    assert_sound(schema, texts)
    universe = SCALARS + ["red", "green", 3, [1, 2], {"a": 1}, "x\"y", "bb", 2.5, "x", 2]
    assert_complete(schema, universe)


@pytest.mark.parametrize("pattern", ["^[a-c]{2,3}$", "^ab", "b$", "ab", "^(a|bb)$"])
def test_string_pattern(pattern):
    schema = {"type": "string", "pattern": pattern}
    texts = accepted(schema, b'"abc', 7)
    assert_sound(schema, texts, at_least=2)
    assert_complete(schema, [s for s in ("".join(p) for n in range(6) for p in itertools.product("abc", repeat=n))])


def test_date_is_exact_over_whole_years():
    pattern = regex.compile(schema_to_regex({"type": "string", "format": "date"}))
    for year in (1, 4, 100, 1900, 2000, 2023, 2024, 9999):
        for month in range(0, 14):
            for day in range(0, 33):
                text = f"{year:04d}-{month:02d}-{day:02d}"
                try:
                    date.fromisoformat(text)
                    valid = True
                except ValueError:
                    valid = False
                assert bool(pattern.fullmatch(f'"{text}"')) == valid, text
    assert not pattern.fullmatch('"0000-01-01"')


@pytest.mark.parametrize("fmt", ["date", "date-time", "time", "email", "uuid", "ipv6"])
def test_formats_sound(fmt):
    pytest.importorskip("rfc3339_validator")  # jsonschema checks date-time and time only with it
    schema = {"type": "string", "format": fmt}
    assert_sound(schema, samples(schema, 300, max_len=50), at_least=300)


def test_formats_accept_common_spellings():
    cases = {
        "date": ["2024-02-29", "1999-12-31"],
        "date-time": ["2024-02-29T23:59:59Z", "2000-01-01T00:00:00.123+05:30"],
        "time": ["12:00:00Z", "23:59:59.5-01:00"],
        "email": ["jo.doe@mail.example.org", "a+b@x.io"],
        "uuid": ["123e4567-e89b-12d3-a456-426614174000"],
    }
    for fmt, values in cases.items():
        assert_complete({"type": "string", "format": fmt}, values, at_least=len(values))


def _ipv6_spellings(rng: random.Random, count: int) -> list[str]:
    """Valid IPv6 addresses as people write them: compressed, exploded, leading zeros dropped, any one run of
    zero groups written "::", an IPv4 tail, upper case now and then."""
    import ipaddress

    found = []
    for _ in range(count):
        zeros = sum(0xFFFF << (16 * k) for k in range(8) if rng.random() < 0.4)
        address = ipaddress.IPv6Address(rng.getrandbits(128) & ~zeros)
        groups = address.exploded.split(":")
        short = [g.lstrip("0") or "0" for g in groups]
        forms = {address.compressed, address.exploded, ":".join(short),
                 ":".join(short[:6]) + ":" + str(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))}
        for i in range(8):
            for j in range(i + 1, 9):
                if all(int(g, 16) == 0 for g in groups[i:j]):
                    forms.add(":".join(short[:i]) + "::" + ":".join(short[j:]))
        found += sorted(f.upper() if rng.random() < 0.3 else f for f in forms)
    return found


def test_ipv6_takes_every_spelling_python_reads():
    """Complete against ipaddress (jsonschema's ipv6 check); sound is test_formats_sound, and the strings of a
    few characters around the separators are compared one by one here."""
    import ipaddress

    values = _ipv6_spellings(random.Random(3), 150)
    assert assert_complete({"type": "string", "format": "ipv6"}, values, at_least=len(values)) == len(values)
    schema = {"type": "string", "format": "ipv6"}
    pattern = regex.compile(schema_to_regex(schema))

    def valid(text: str) -> bool:
        try:
            return not ipaddress.IPv6Address(text).scope_id
        except ValueError:
            return False

    for n in range(2, 8):
        for chars in itertools.product("0a:.", repeat=n):
            text = "".join(chars)
            assert bool(pattern.fullmatch(json.dumps(text))) == valid(text), text


def _rfc3339_duration(text: str) -> bool:
    """RFC 3339 Appendix A's duration grammar read by recursive descent (the oracle: jsonschema checks
    "duration" only with the isoduration package)."""
    def number_then(i: int, unit: str) -> int | None:
        j = i
        while j < len(text) and text[j] in "0123456789":
            j += 1
        return j + 1 if j > i and j < len(text) and text[j] == unit else None

    def chain(i: int, units: str) -> list[int]:  # "1Y" ["1M" ["1D"]]: where each prefix of the chain ends
        j = number_then(i, units[0])
        return [] if j is None else [j] + (chain(j, units[1:]) if units[1:] else [])

    def time(i: int) -> list[int]:
        if i < len(text) and text[i] == "T":
            return chain(i + 1, "HMS") + chain(i + 1, "MS") + chain(i + 1, "S")
        return []

    dates = chain(1, "D") + chain(1, "MD") + chain(1, "YMD")
    ends = dates + [k for j in dates for k in time(j)] + time(1) + chain(1, "W")
    return text[:1] == "P" and len(text) in ends


def test_duration_is_rfc_3339s_grammar():
    schema = {"type": "string", "format": "duration"}
    pattern = regex.compile(schema_to_regex(schema))
    valid = 0
    for n in range(1, 8):
        for chars in itertools.product("PTYMWDHS1", repeat=n):
            text = "".join(chars)
            expected = _rfc3339_duration(text)
            assert bool(pattern.fullmatch(json.dumps(text))) == expected, text
            valid += expected
    assert valid > 50  # (78 of them)
    for text in ["P3Y6M4DT12H30M5S", "PT0S", "P4W", "P23DT23H", "PT36H", "P1M", "PT1M", "P0D"]:
        assert _rfc3339_duration(text) and pattern.fullmatch(json.dumps(text)), text
    for text in ["P", "PT", "P1Y1D", "P1W1D", "PT1H1S", "P1.5Y", "1Y", "P1YT"]:
        assert not _rfc3339_duration(text) and not pattern.fullmatch(json.dumps(text)), text


# -- numbers -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("schema", [
    {"type": "integer"},
    {"type": "integer", "minimum": -17, "maximum": 250},
    {"type": "integer", "minimum": 7},
    {"type": "integer", "maximum": -3},
    {"type": "integer", "exclusiveMinimum": -1, "exclusiveMaximum": 100},
    {"type": "integer", "minimum": 0, "maximum": 0},
    {"type": "integer", "minimum": 95, "maximum": 1005},
])
def test_integer_ranges(schema):
    texts = accepted(schema, b"-0123456789", 4)
    assert_sound(schema, texts, at_least=1)
    valid = [v for v in range(-999, 1010) if validator(schema).is_valid(v)]
    assert_complete(schema, valid)
    # and exactly those: the accepted numerals up to 3 digits are the valid integers' numerals
    assert {t for t in texts if len(t.lstrip("-")) <= 3} == {str(v) for v in valid if len(str(abs(v))) <= 3}


@pytest.mark.parametrize("schema", [
    {"type": "number"},
    {"type": "number", "minimum": -2, "maximum": 3},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 2},
    {"type": "number", "minimum": 1},
    {"type": "number", "exclusiveMaximum": -1},
    {"type": "number", "minimum": -3, "exclusiveMaximum": 0},
    {"type": "number", "minimum": 0.5, "exclusiveMaximum": 2.25},
    {"type": "number", "exclusiveMinimum": -1.5, "maximum": 0.75},
])
def test_number_ranges(schema):
    texts = accepted(schema, b"-0123.5e+", 5)
    assert_sound(schema, texts, at_least=5)
    assert_complete(schema, NUMBERS + INTEGERS[250:350])


def test_bounds_with_too_many_decimals_are_refused():
    with pytest.raises(SchemaError, match="/maximum"):
        schema_to_regex({"type": "number", "maximum": 1e-13})


def test_boolean_and_null():
    for schema in ({"type": "boolean"}, {"type": "null"}, {"type": ["boolean", "null"]}):
        texts = [bytes(s).decode() for s in enumerate_strings(dfa_of(schema), 10)]
        assert_sound(schema, texts)
        assert len(texts) == assert_complete(schema, SCALARS)


# -- arrays and objects -----------------------------------------------------------------------------------
def array_universe():
    items = [None, True, 1, "a", 2]
    return [list(p) for n in range(5) for p in itertools.product(items, repeat=n)]


@pytest.mark.parametrize("schema", [
    {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 2}},
    {"type": "array", "items": {"type": "boolean"}, "minItems": 2},
    {"type": "array", "items": {"type": ["null", "integer"], "maximum": 1}, "minItems": 1, "maxItems": 3},
    {"type": "array", "items": {"type": "string", "maxLength": 1}, "maxItems": 0},
    {"type": "array", "prefixItems": [{"type": "integer", "minimum": 1, "maximum": 2}, {"type": "boolean"}], "items": False},
    {"type": "array", "prefixItems": [{"type": "null"}], "items": {"type": "integer", "minimum": 1, "maximum": 1},
     "minItems": 1, "maxItems": 3, "uniqueItems": False},
    {"type": "array", "prefixItems": [{"type": "string", "maxLength": 1}, {"type": "null"}], "minItems": 2, "maxItems": 2},
])
def test_arrays(schema):
    texts = accepted(schema, b'[],"a12truefalsn', 16)
    assert_sound(schema, texts, at_least=1)
    assert_complete(schema, array_universe())


OBJECT = {
    "type": "object",
    "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 2}, "b": {"type": "boolean"}, "c": {"type": "null"}},
    "required": ["b"],
}


def object_universe(names, values):
    out = []
    for keep in itertools.product([False, True], repeat=len(names)):
        chosen = [n for n, k in zip(names, keep) if k]
        for vals in itertools.product(values, repeat=len(chosen)):
            out.append(dict(zip(chosen, vals)))
    return out


@pytest.mark.parametrize("schema", [
    OBJECT,
    {**OBJECT, "required": []},
    {**OBJECT, "required": ["a", "c"], "additionalProperties": False},
    {"type": "object", "properties": {}},
])
def test_objects(schema):
    texts = accepted(schema, b'{}:,"abc012truefalsn', 30)
    assert_sound(schema, texts, at_least=1)
    names = list(schema["properties"])
    n = assert_complete(schema, object_universe(names, [0, 1, 2, 3, True, False, None]))
    # brute force over the universe is the whole generated language here: same count
    assert n == len(texts)


@pytest.mark.parametrize("schema", [OBJECT, {**OBJECT, "required": []}, {**OBJECT, "required": ["a", "c"]},
                                    {**OBJECT, "additionalProperties": {"type": "integer"}}])
def test_objects_in_any_order(schema):
    """member_order="any": an object with at most one required member takes its members in any
    order, with more the schema's; every accepted text valid, every valid one in such an order accepted."""
    assert_sound(schema, samples(schema, 300, member_order="any"), at_least=300)
    names = list(schema["properties"]) + (["d"] if "additionalProperties" in schema else [])
    check, dfa = validator(schema), dfa_of(schema, member_order="any")
    pattern = regex.compile(schema_to_regex(schema, member_order="any"))
    free = len(schema["required"]) <= 1
    seen = 0
    for doc in object_universe(names, [0, 3, True, False, None]):
        for order in itertools.permutations(doc):
            text = json.dumps({k: doc[k] for k in order}, separators=(",", ":"))
            expected = check.is_valid(doc) and (free or list(order) == [n for n in names if n in doc])
            assert dfa.accepts(text.encode()) == bool(pattern.fullmatch(text)) == expected, text
            seen += expected
    assert seen >= 3
    if free:  # an optional member may come twice, each value valid (json.loads keeps the last)
        assert dfa.accepts(b'{"a":1,"b":true,"a":2}') and not dfa.accepts(b'{"a":3,"b":true,"a":1}')
    if schema["required"]:
        assert not dfa.accepts(b'{"a":1,"b":true,"b":false}'[:-1] + b',"a":0,"c":null}')  # a required member once


def test_nested_objects_refs_and_any_of():
    schema = {
        "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 1},
                                                              "y": {"$ref": "#/$defs/small"}}, "required": ["x"]},
                  "small": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}},
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/point"}, "q": {"type": "array", "items": {"$ref": "#/$defs/point"}, "maxItems": 2}},
        "required": ["p"],
    }
    assert_sound(schema, samples(schema, 300, max_len=80), at_least=300)
    points = [{"x": x} for x in (0, 1, 2)] + [{"x": 0, "y": y} for y in (None, True, 1)] + [{"y": None}]
    universe = [{"p": p} for p in points] + [{"p": p, "q": [p, p2]} for p in points[:4] for p2 in points[2:5]]
    assert_complete(schema, universe, at_least=5)


def test_one_of_with_distinct_types():
    schema = {"oneOf": [{"type": "string", "maxLength": 1}, {"type": "integer", "minimum": 0, "maximum": 3}, {"enum": [None]}]}
    texts = accepted(schema, b'"a0123-nul', 6)
    assert_sound(schema, texts, at_least=5)
    assert_complete(schema, SCALARS + INTEGERS)


def test_flexible_whitespace_is_bounded():
    schema = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 1}, "maxItems": 2}
    texts = accepted(schema, b"[], 1\n", 12, whitespace=1)
    assert_sound(schema, texts, at_least=10)
    assert "[ 1 , 1 ]" in texts and "[\n1,1]" in texts
    assert not regex.fullmatch(schema_to_regex(schema, 1), "[  1]")
    assert "[ 1]" not in accepted(schema, b"[], 1", 12)  # compact by default


# -- refusals ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("schema, pointer", [
    ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "/uniqueItems"),
    ({"type": "array", "prefixItems": [{"type": "null"}], "items": False, "minItems": 2}, "/minItems"),
    ({"type": "object", "properties": {"a": {"type": "number", "multipleOf": 2}}}, "/properties/a/multipleOf"),
    ({"type": "object", "properties": {"a/b": {"type": "string", "format": "idn-hostname"}}}, "/properties/a~1b/format"),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, "/oneOf/1"),
    ({"type": "string", "pattern": "a.c"}, "/pattern"),
    ({"type": "strin"}, "/type"),
    ({"type": ["null", {"type": "string"}]}, "/type/1"),
    ({"type": "object", "properties": {"a": 5}}, "/properties/a"),
    ({"type": "integer", "minimum": "3"}, "/minimum"),
    ({"type": "string", "maxLength": -1}, "/maxLength"),
    ({"$ref": "#/$defs/missing"}, "/$ref"),
    ({"$ref": "http://example.com/s.json"}, "/$ref"),
    ({"type": "object", "properties": {"a": {"type": "null"}}, "required": ["z"], "additionalProperties": False}, "/required"),
])
def test_unsupported_is_refused_with_pointer(schema, pointer):
    with pytest.raises(SchemaError) as info:
        schema_to_regex(schema)
    assert info.value.pointer == pointer.rstrip("/") or (pointer == "/" and info.value.pointer == "")
    assert str(info.value).startswith(f"JSON Schema {pointer}:")


# -- CLI -----------------------------------------------------------------------------------------------
@pytest.fixture()
def byte_tok(tmp_path):
    from bpefst.tokenizer import PRESETS, save_tokenizer
    from small_models import random_byte_model

    path = tmp_path / "byte.bpefst"
    save_tokenizer(random_byte_model(21, alphabet=b'{}[]":,abc01tru', num_merges=20, pattern=PRESETS["gpt2"]), path)
    return path


def test_cli_json_schema_samples_valid_documents(tmp_path, byte_tok):
    from cli_runner import run

    from bpefst.tokenizer import ReferenceEncoder, load_tokenizer

    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 12},
                                               "b": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}},
              "required": ["a"]}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    result = run("promote", str(byte_tok), "--json-schema", str(path), "--sample", "20")
    assert result.returncode == 0, result.stderr.decode()
    lines = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert len(lines) == 20
    encoder = ReferenceEncoder(load_tokenizer(byte_tok))
    for line in lines:
        assert_sound(schema, [line["text"]])
        assert encoder.encode(line["text"]) == line["ids"]  # canonical: the tokenizer's own encoding
    spaced = run("promote", str(byte_tok), "--json-schema", str(path), "--whitespace", "2", "--sample", "30")
    assert spaced.returncode == 0
    texts = [json.loads(line)["text"] for line in spaced.stdout.decode().splitlines()]
    assert_sound(schema, texts, at_least=30)
    assert any(any(c in t for c in " \t\n\r") for t in texts)


@pytest.mark.parametrize("schema, fragment", [
    ({"type": "string", "format": "idn-hostname"}, "JSON Schema /format: unsupported format 'idn-hostname'"),
    ({"type": "object", "properties": {"t": {"type": "array", "items": {"type": "null"}, "contains": {"type": "null"}}}},
     "JSON Schema /properties/t/contains: contains is not supported"),
])
def test_cli_refuses_unsupported_keywords_with_their_pointer(tmp_path, byte_tok, schema, fragment):
    from cli_runner import assert_user_error, run

    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    assert_user_error(run("promote", str(byte_tok), "--json-schema", str(path)), fragment)


def test_cli_bad_schema_files(tmp_path, byte_tok):
    from cli_runner import assert_user_error, run

    path = tmp_path / "schema.json"
    path.write_text("{not json")
    assert_user_error(run("promote", str(byte_tok), "--json-schema", str(path)), "not JSON")
    assert_user_error(run("promote", str(byte_tok), "--regex", "a", "--whitespace", "1"), "--whitespace applies to --json-schema")
    assert_user_error(run("promote", str(byte_tok), "--regex", "a", "--json-schema", str(path)), "exactly one of")


# -- ranges against brute force ------------------------------------------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402

BOUND = st.one_of(st.none(), st.integers(-1200, 1200))


@settings(max_examples=60, deadline=None)
@given(low=BOUND, high=BOUND, low_open=st.booleans(), high_open=st.booleans())
def test_integer_bounds_brute_force(low, high, low_open, high_open):
    schema = {"type": "integer"}
    if low is not None:
        schema["exclusiveMinimum" if low_open else "minimum"] = low
    if high is not None:
        schema["exclusiveMaximum" if high_open else "maximum"] = high
    check = validator(schema)
    try:
        pattern = regex.compile(schema_to_regex(schema))
    except SchemaError:
        assert not any(check.is_valid(v) for v in range(-1500, 1500))
        return
    for v in range(-1500, 1500):
        assert bool(pattern.fullmatch(str(v))) == check.is_valid(v), (schema, v)
    assert not pattern.fullmatch("-0") and not pattern.fullmatch("01")


DECIMAL_BOUND = st.one_of(st.none(), st.integers(-30, 30), st.integers(-120, 120).map(lambda n: n / 4),
                          st.integers(-1000, 1000).map(lambda n: n / 100))
NUMERALS = [f"{sign}{i}{frac}" for sign in ("", "-") for i in range(0, 32)
            for frac in ("", ".0", ".00", ".25", ".5", ".75", ".05", ".1", ".125", ".2501", ".49", ".999", ".01")]


@settings(max_examples=60, deadline=None)
@given(low=DECIMAL_BOUND, high=DECIMAL_BOUND, low_open=st.booleans(), high_open=st.booleans())
def test_number_bounds_brute_force(low, high, low_open, high_open):
    schema = {"type": "number"}
    if low is not None:
        schema["exclusiveMinimum" if low_open else "minimum"] = low
    if high is not None:
        schema["exclusiveMaximum" if high_open else "maximum"] = high
    check = validator(schema)
    try:
        pattern = regex.compile(schema_to_regex(schema))
    except SchemaError:
        assert not any(check.is_valid(json.loads(t)) for t in NUMERALS)
        return
    for text in NUMERALS:
        assert bool(pattern.fullmatch(text)) == check.is_valid(json.loads(text)), (schema, text)


def test_hostile_schemas_are_refused_cleanly():
    deep = {"type": "null"}
    for _ in range(5000):
        deep = {"type": "array", "items": deep}
    with pytest.raises(SchemaError, match="nest more than 64"):
        schema_to_regex(deep)
    from bpefst.errors import BpefstError

    with pytest.raises(BpefstError):  # the regex compiler's own size limit
        compile_regex(schema_to_regex({"type": "array", "items": {"type": "null"}, "maxItems": 10**9}), ByteAlphabet())
