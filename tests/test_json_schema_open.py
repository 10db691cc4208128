"""JSON Schema as people write it (issue 27): annotations, allOf, open objects, any value, strict=False.

Every check runs both ways against ``jsonschema`` (the oracle): documents the
translation generates validate (uniform samples of the compiled DFA), and of a
universe of candidate documents, those the schema rejects are not accepted
while the valid ones, written in the generated form (compact, listed
properties first in schema order, extra members after them), are.
"""

from __future__ import annotations

import itertools
import json
import random
import warnings

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.automata.language import sampler
from bpefst.errors import BpefstError
from bpefst.regex import ByteAlphabet, compile_regex
from bpefst.regex.json_schema import SchemaError, SchemaWarning, schema_to_regex
from bpefst.regex.json_schema_names import other_names

jsonschema = pytest.importorskip("jsonschema")
Validator = jsonschema.Draft202012Validator


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def translate(schema, **options) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemaWarning)
        return schema_to_regex(schema, **options)


def both_ways(schema, universe, at_least_valid=1, at_least_invalid=1, samples=200, not_generated=(), **options):
    """The oracle checks of the module docstring; returns (valid, invalid) counts of the universe.

    ``not_generated``: valid documents outside the generated form (another
    property order, a type the keywords do not imply, ...): only checked to be
    consistent between the pattern and its DFA.
    """
    check = Validator(schema, format_checker=Validator.FORMAT_CHECKER)
    pattern = translate(schema, **options)
    dfa = compile_regex(pattern, ByteAlphabet())
    draw, rng = sampler(dfa, 80), random.Random(0)
    for _ in range(samples):
        found = draw(rng)
        if found is None:
            continue
        text = bytes(found).decode("utf-8")
        document = json.loads(text)
        assert check.is_valid(document), (text, next(check.iter_errors(document)).message)
    compiled = regex.compile(pattern)
    valid = invalid = 0
    for value in not_generated:
        text = compact(value)
        assert check.is_valid(value), text
        assert (compiled.fullmatch(text) is not None) == dfa.accepts(list(text.encode())), text
    for value in universe:
        text = compact(value)
        ok = check.is_valid(value)
        accepted = compiled.fullmatch(text) is not None
        assert accepted == dfa.accepts(list(text.encode())), text
        if ok:
            valid += 1
            assert accepted, f"valid document refused: {text}"
        else:
            invalid += 1
            assert not accepted, f"invalid document accepted: {text}"
    assert valid >= at_least_valid and invalid >= at_least_invalid, (valid, invalid)
    return valid, invalid


# -- unknown keywords ------------------------------------------------------------------------------------------
def test_unknown_keywords_are_ignored_with_a_warning_naming_them():
    plain = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0}}, "required": ["a"]}
    noisy = {"type": "object", "id": "#x", "javaType": "X", "x-kubernetes-group": [1],
             "properties": {"a": {"type": "integer", "minimum": 0, "x-order": 1, "_format": "int"}}, "required": ["a"]}
    with pytest.warns(SchemaWarning) as caught:
        assert schema_to_regex(noisy) == schema_to_regex(plain)
    message = str(caught[0].message)
    assert "/javaType" in message and "/x-kubernetes-group" in message and "/properties/a/x-order" in message
    assert "/properties/a/_format" in message and "/id" not in message  # draft-04's id is a known annotation
    assert len(caught) == 1 and "\n" not in message


def test_known_annotations_give_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schema_to_regex({"$schema": "x", "$id": "y", "title": "t", "description": "d", "examples": [1], "type": "null"})


# -- allOf ----------------------------------------------------------------------------------------------------------
BASE = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 3}, "b": {"type": "boolean"}},
        "required": ["a"]}


def objects(names_values: dict) -> list[dict]:
    """Every object taking, per name in order, either no member or one of its candidate values."""
    names = list(names_values)
    out = []
    for choice in itertools.product(*[[None] + list(names_values[n]) for n in names]):
        out.append({n: v for n, v in zip(names, choice) if v is not None})
    return out


def test_allof_merges_a_ref_with_more_properties_and_required():
    schema = {"$defs": {"base": BASE},
              "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"b": {"const": True}, "c": {"type": "string", "maxLength": 1}},
                                                   "required": ["c"]}]}
    universe = objects({"a": [-1, 0, 3, 4, "x"], "b": [True, False], "c": ["", "z", "zz", 1]})
    both_ways(schema, universe)


def test_keywords_beside_ref_and_anyof_are_merged():
    schema = {"$defs": {"base": BASE}, "$ref": "#/$defs/base", "properties": {"a": {"maximum": 1}},
              "anyOf": [{"required": ["b"]}, {"properties": {"a": {"const": 0}}}]}
    both_ways(schema, objects({"a": [-1, 0, 1, 2, 3], "b": [True, False, 0]}))


def test_allof_additional_properties_false_drops_what_another_branch_adds():
    schema = {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False},
                        {"properties": {"b": {"type": "integer"}}}]}
    both_ways(schema, objects({"a": [1, "x"], "b": [2]}))
    with pytest.raises(SchemaError) as info:
        schema_to_regex({"allOf": [schema["allOf"][0], {"required": ["b"]}]})
    assert info.value.pointer == "/allOf/1/required"


@pytest.mark.parametrize("schema, pointer", [
    ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "/allOf/1/type"),
    ({"allOf": [{"type": "string", "pattern": "^a$"}, {"pattern": "^b$"}]}, "/allOf/1/pattern"),
    ({"allOf": [{"enum": [1, 2]}, {"const": 3}]}, "/allOf/1"),
])
def test_allof_conflicts_are_refused_with_the_pointer(schema, pointer):
    with pytest.raises(SchemaError) as info:
        schema_to_regex(schema)
    assert info.value.pointer == pointer
    assert str(info.value).startswith(f"JSON Schema {pointer}:") and "\n" not in str(info.value)


@settings(max_examples=60, deadline=None)
@given(bounds=st.lists(st.tuples(st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
                                 st.integers(-30, 30)), min_size=1, max_size=4),
       values=st.lists(st.integers(-40, 40), min_size=1, max_size=20))
def test_allof_bounds_intersect(bounds, values):
    schema = {"allOf": [{"type": "integer", key: value} for key, value in bounds]}
    check = Validator(schema)
    try:
        pattern = regex.compile(translate(schema))
    except SchemaError:
        assert not any(check.is_valid(v) for v in range(-40, 41))  # refused only when nothing is valid
        return
    for v in values:
        assert (pattern.fullmatch(str(v)) is not None) == check.is_valid(v), (schema, v)


# -- open objects ---------------------------------------------------------------------------------------------------
def test_additional_properties_true_allows_extra_members_after_the_listed_ones():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": True}
    universe = objects({"a": [1, "s"], "b": [None, 2, [], {"c": [1]}], "a2": ["x"]})
    valid, _ = both_ways(schema, universe, max_depth=2, not_generated=[{"b": 1, "a": 1}])
    assert valid > 10
    pattern = regex.compile(translate(schema, member_order="schema"))
    assert not pattern.fullmatch('{"a":1,"a":2}')  # an extra member never repeats a listed one
    assert not pattern.fullmatch('{"a":1,"\\u0061":2}')  # ... however it is spelled
    assert not pattern.fullmatch('{"b":1,"a":1}')  # listed properties come first (the generated order)
    anywhere = regex.compile(translate(schema, member_order="any"))  # no required member: any order
    assert anywhere.fullmatch('{"b":1,"a":1}') and anywhere.fullmatch('{"a":1,"a":2}')
    assert not anywhere.fullmatch('{"a":1,"\\u0061":2}') and not anywhere.fullmatch('{"b":1,"a":"s"}')


def test_additional_properties_schema_constrains_extra_values():
    schema = {"type": "object", "properties": {"a": {"type": "boolean"}}, "additionalProperties": {"type": "integer", "maximum": 5}}
    both_ways(schema, objects({"a": [True, 1], "b": [5, 6, "x"], "": [0], "ab": [1]}))


def test_pattern_properties_name_and_value():
    schema = {"type": "object", "properties": {"id": {"type": "integer"}},
              "patternProperties": {"^x-[a-z]+$": {"type": "string", "maxLength": 2}, "^[0-9]+$": {"type": "boolean"}},
              "additionalProperties": False}
    both_ways(schema, objects({"id": [1, "1"], "x-ab": ["", "abc", 1], "12": [True, "t"], "y": [1], "x-": ["a"]}))


def test_pattern_properties_that_may_share_names_take_both_schemas():
    schema = {"type": "object", "patternProperties": {"^a": {"type": "integer"}, "b$": {"minimum": 3}},
              "additionalProperties": False}
    # names matching one pattern take both schemas too (a sound subset: a pattern cannot be subtracted from another)
    both_ways(schema, objects({"ab": [1, 3, "x"], "a": [3, "x"], "b": [1, 5]}), not_generated=[{"a": 2}])


def test_property_names_constrain_extra_names():
    schema = {"type": "object", "properties": {"OK": {"type": "null"}}, "propertyNames": {"pattern": "^[a-z]{1,3}$"},
              "additionalProperties": {"type": "integer"}}
    both_ways(schema, objects({"OK": [None], "z": [1, "s"], "Z": [1], "abcd": [2], "ab": [3]}))
    # a listed name the names' pattern admits: extra names would have to exclude it, which a pattern cannot
    # express, so no extra member is generated (sound, incomplete)
    listed = {**schema, "properties": {"ok": {"type": "null"}}}
    both_ways(listed, objects({"ok": [None, 1], "Z": [1]}), not_generated=[{"ok": None, "z": 1}])
    assert not regex.fullmatch(translate(listed), '{"ok":null,"ok":1}')


def test_other_names_is_the_complement_of_the_listed_names():
    names = ["a", "ab", "b\"c", "\u00e9", "x\n"]
    pattern = regex.compile(other_names(names))
    for candidate in ["", "a", "ab", "abc", "b", "b\"c", "b\"", "\u00e9", "\u00e9\u00e9", "x\n", "x", "x\t", "c"]:
        spelled = json.dumps(candidate, ensure_ascii=False)
        assert (pattern.fullmatch(spelled) is not None) == (candidate not in names), candidate
    assert not pattern.fullmatch('"\\u0061"')  # a second spelling of some name is never generated


# -- any value and recursion --------------------------------------------------------------------------------------------
def depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


json_values = st.recursive(st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=4)
                           | st.floats(allow_nan=False, allow_infinity=False),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                           max_leaves=8)


@pytest.mark.parametrize("max_depth", [0, 1, 2])
def test_any_value_nests_up_to_max_depth(max_depth):
    pattern = regex.compile(translate({}, max_depth=max_depth))

    @settings(max_examples=150, deadline=None)
    @given(json_values)
    def check(value):
        assert (pattern.fullmatch(compact(value)) is not None) == (depth(value) <= max_depth), compact(value)

    check()


def test_untyped_schemas_take_the_types_their_keywords_imply():
    schema = {"properties": {"a": {"minimum": 2}, "b": {}}, "required": ["a"]}
    both_ways(schema, objects({"a": [1, 2, 2.5], "b": [None, "s", [1], {"c": {}}]}), not_generated=[[], "s"])


TREE = {"$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer", "minimum": 0, "maximum": 2},
                                                            "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                           "required": ["v"], "additionalProperties": False}},
        "$ref": "#/$defs/node"}


def trees(levels: int) -> list:
    if levels == 0:
        return [{"v": 1}, {"v": 3}]
    below = trees(levels - 1)
    return below + [{"v": 0, "kids": [t]} for t in below] + [{"v": 2, "kids": []}]


@pytest.mark.parametrize("max_depth", [1, 2, 3])
def test_recursive_ref_is_unrolled_to_max_depth(max_depth):
    check = Validator(TREE)
    pattern = regex.compile(translate(TREE, max_depth=max_depth))
    for tree in trees(4):
        accepted = pattern.fullmatch(compact(tree)) is not None
        assert not accepted or check.is_valid(tree)
        nodes = (depth(tree) + 1) // 2  # {"v":..,"kids":[ ... ]}: two levels per node
        assert accepted == (check.is_valid(tree) and nodes <= max_depth), (compact(tree), max_depth)


def test_draft04_tuple_items_and_boolean_exclusive_bounds():
    schema = {"type": "array", "items": [{"type": "integer", "minimum": 0, "exclusiveMinimum": True}, {"type": "string"}],
              "additionalItems": {"type": "null"}, "maxItems": 3}
    draft4 = jsonschema.Draft4Validator(schema)
    pattern = regex.compile(translate(schema))
    for value in [[], [0], [1], [1, "a"], [1, "a", None], [1, "a", 2], [1, "a", None, None], ["a"]]:
        assert (pattern.fullmatch(compact(value)) is not None) == draft4.is_valid(value), value


# -- strict=False ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("schema, pointer", [
    ({"type": "array", "items": {"type": "integer"}, "uniqueItems": True}, "/uniqueItems"),
    ({"type": "array", "items": {"type": "integer"}, "contains": {"minimum": 2}}, "/contains"),
    ({"type": "object", "properties": {"a": {"type": "number", "multipleOf": 0.5}}}, "/properties/a/multipleOf"),
    ({"type": "string", "format": "idn-hostname"}, "/format"),
    ({"not": {"properties": {"a": {"type": "null"}}}, "type": "object"}, "/not"),
])
def test_keywords_an_automaton_cannot_honour_are_refused_unless_strict_is_false(schema, pointer):
    with pytest.raises(SchemaError) as info:
        schema_to_regex(schema)
    assert info.value.pointer == pointer and "strict=False" in str(info.value)
    with pytest.warns(SchemaWarning, match=f"NOT enforced \\(strict=False\\) {regex.escape(pointer)}"):
        relaxed = schema_to_regex(schema, strict=False)
    rest = {k: v for k, v in schema.items() if k != pointer.split("/")[1]} if pointer.count("/") == 1 else None
    if rest is not None:  # relaxed: exactly the schema without the keyword
        assert relaxed == translate(rest)


def test_unique_items_with_at_most_one_item_is_exact():
    schema = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "maxItems": 1}
    both_ways(schema, [[], [1], [1, 1], [1, 2], ["a"]])


# -- CLI -----------------------------------------------------------------------------------------------------------
@pytest.fixture()
def byte_tok(tmp_path):
    from bpefst.tokenizer import PRESETS, save_tokenizer
    from small_models import random_byte_model

    path = tmp_path / "byte.bpefst"
    save_tokenizer(random_byte_model(21, alphabet=b'{}[]":,abc01tru', num_merges=20, pattern=PRESETS["gpt2"]), path)
    return path


def test_cli_warns_in_one_line_and_no_strict_relaxes(tmp_path, byte_tok):
    from cli_runner import assert_user_error, run

    schema = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 3}, "maxItems": 3, "x-note": 1,
              "uniqueItems": True}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    assert_user_error(run("promote", str(byte_tok), "--json-schema", str(path)), "JSON Schema /uniqueItems: uniqueItems")
    result = run("promote", str(byte_tok), "--json-schema", str(path), "--no-strict", "--max-depth", "1", "--sample", "5")
    assert result.returncode == 0, result.stderr.decode()
    warning = [line for line in result.stderr.decode().splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "/x-note" in warning[0] and "/uniqueItems" in warning[0]
    relaxed = {k: v for k, v in schema.items() if k not in ("uniqueItems", "x-note")}
    for line in result.stdout.decode().splitlines():
        assert Validator(relaxed).is_valid(json.loads(json.loads(line)["text"]))
    assert_user_error(run("promote", str(byte_tok), "--regex", "a", "--max-depth", "2"), "--max-depth applies to --json-schema")


def test_one_of_with_a_discriminator_is_exact_and_overlap_is_refused_or_relaxed():
    schema = {"oneOf": [{"type": "object", "properties": {"kind": {"const": "a"}, "x": {"type": "integer"}}, "required": ["kind"]},
                        {"type": "object", "properties": {"kind": {"enum": ["b", "c"]}, "x": {"type": "boolean"}},
                         "required": ["kind", "x"]}]}
    both_ways(schema, objects({"kind": ["a", "b", "c", "d"], "x": [1, True, None]}))
    overlapping = {"oneOf": [{"type": "integer", "maximum": 5}, {"type": "integer", "minimum": 3}]}
    with pytest.raises(SchemaError) as info:
        schema_to_regex(overlapping)
    assert info.value.pointer == "/oneOf/1"
    with pytest.warns(SchemaWarning, match=r"NOT enforced \(strict=False\) /oneOf/1"):
        assert schema_to_regex(overlapping, strict=False) == translate({"anyOf": overlapping["oneOf"]})


def test_formats_json_schema_does_not_define_are_annotations_and_defined_ones_are_exact_or_refused():
    with pytest.warns(SchemaWarning, match="/format"):
        assert schema_to_regex({"type": "string", "format": "html-selector"}) == translate({"type": "string"})
    with pytest.raises(SchemaError, match="unsupported format 'idn-hostname'"):
        schema_to_regex({"type": "string", "format": "idn-hostname"})
    for fmt in ("hostname", "uri-reference", "ipv4", "uri"):
        schema = {"type": "string", "format": fmt}
        check = Validator(schema, format_checker=Validator.FORMAT_CHECKER)
        draw, rng = sampler(compile_regex(translate(schema), ByteAlphabet()), 60), random.Random(1)
        for _ in range(100):
            text = bytes(draw(rng)).decode()
            assert check.is_valid(json.loads(text)), (fmt, text)
    assert regex.fullmatch(translate({"type": "string", "format": "hostname"}), '"api.example.com"')
    assert not regex.fullmatch(translate({"type": "string", "format": "hostname"}), '"-bad.example"')


# -- promote()'s cuts of open objects ----------------------------------------------------------------------------
NESTED = {"type": "object", "properties": {"a": {"type": "integer"},
                                           "in": {"type": "object", "properties": {"b": {"type": "boolean"}}}},
          "required": ["a"]}
CUT_EXPECTED = {  # openness -> (the deepest extra value at the document's level, at "in"'s level; None: no extra member)
    True: (2, 2), "values-1": (1, 1), "scalar-values": (0, 0), "outermost": (2, None),
    "outermost-scalar-values": (0, None), False: (None, None),
}


def nested_value(depth: int):
    """A JSON value nesting exactly ``depth`` arrays."""
    value = 1
    for _ in range(depth):
        value = [value]
    return value


def cut_dfa(openness, closed=None):
    from bpefst.regex.json_schema import schema_to_dfa

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemaWarning)
        return schema_to_dfa(NESTED, ByteAlphabet(), max_depth=2, open_objects=openness, closed=closed)


@pytest.mark.parametrize("openness", list(CUT_EXPECTED))
def test_each_cut_of_open_objects_generates_only_valid_documents(openness):
    """Generated documents validate; documents the schema rejects are not accepted (the oracle, both ways)."""
    check, dfa = Validator(NESTED), cut_dfa(openness)
    draw, rng = sampler(dfa, 60), random.Random(1)
    for _ in range(200):
        found = draw(rng)
        if found is not None:
            document = json.loads(bytes(found).decode("utf-8"))
            assert check.is_valid(document), document
    for document in ({}, {"a": "x"}, {"a": 1, "in": 2}, {"a": 1, "in": {"b": 1}}, {"in": {}}):
        assert not check.is_valid(document)
        assert not dfa.accepts(list(compact(document).encode())), document


@settings(max_examples=40, deadline=None)
@given(openness=st.sampled_from(list(CUT_EXPECTED)), outer=st.integers(0, 3), inner=st.integers(0, 3),
       name=st.sampled_from(["x", "b ", "a ", "in2"]))
def test_each_cut_keeps_exactly_the_extra_members_it_says(openness, outer, inner, name):
    """An extra member's value nests up to the cut's depth, in the objects the cut leaves open, and no deeper."""
    dfa = cut_dfa(openness)
    top, nested = CUT_EXPECTED[openness]
    for document, depth, limit in (({"a": 1, name: nested_value(outer)}, outer, top),
                                   ({"a": 1, "in": {"b": True, name: nested_value(inner)}}, inner, nested)):
        assert Validator(NESTED).is_valid(document)
        expected = limit is not None and depth <= limit
        assert dfa.accepts(list(compact(document).encode())) == expected, (openness, document)


def test_cuts_name_the_objects_they_close():
    closed: list = []
    cut_dfa("outermost", closed)
    assert closed == ["/properties/in"]
    closed = []
    cut_dfa(False, closed)
    assert sorted(closed) == ["", "/properties/in"]
    closed = []
    cut_dfa("values-1", closed)
    assert closed == []
    with pytest.raises(BpefstError, match="open_objects must be"):
        cut_dfa("half-open")


def test_cuts_leave_objects_that_list_nothing_and_explicit_additional_properties_alone():
    """Only objects listing properties without additionalProperties are cut: a map (no properties) and an
    explicit schema for extra values keep what the schema says."""
    schema = {"type": "object", "properties": {"m": {"type": "object"},
                                               "s": {"type": "object", "properties": {"k": {"type": "integer"}},
                                                     "additionalProperties": {"type": "array"}}}}
    from bpefst.regex.json_schema import schema_to_dfa

    for openness in ("scalar-values", "outermost-scalar-values"):
        dfa = schema_to_dfa(schema, ByteAlphabet(), max_depth=2, open_objects=openness)
        for document in ({"m": {"x": [[1]]}}, {"s": {"k": 1, "y": [[1]]}}):
            assert Validator(schema).is_valid(document)
            assert dfa.accepts(list(compact(document).encode())), (openness, document)
        assert not dfa.accepts(list(compact({"s": {"k": 1, "y": 1}}).encode()))  # the schema's own: arrays only


def test_cli_falls_back_with_one_warning_line(tmp_path, byte_tok):
    """bpefst promote --json-schema: the cut bpefst.promote would make, said in one stderr line."""
    import bpefst
    from cli_runner import run

    schema = {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    tok = bpefst.load(byte_tok)
    closed = bpefst.promote(tok, json_schema=schema, max_depth=1, open_objects=False)
    limit = max(closed.dfa().num_arcs, closed.on_demand().lattice_arcs)
    opened = run("promote", str(byte_tok), "--json-schema", str(path), "--max-depth", "1")
    assert opened.returncode == 0 and "warning" not in opened.stderr.decode()
    result = run("promote", str(byte_tok), "--json-schema", str(path), "--max-depth", "1", "--max-arcs", str(limit),
                 "--sample", "20")
    assert result.returncode == 0, result.stderr.decode()
    warning = [line for line in result.stderr.decode().splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "objects closed" in warning[0] and "(the document)" in warning[0], warning
    for line in result.stdout.decode().splitlines():
        document = json.loads(json.loads(line)["text"])
        assert Validator(schema).is_valid(document) and set(document) == {"a"}
