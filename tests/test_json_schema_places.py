"""A schema refused for its size is refused where its automaton is largest (bpefst.regex.json_schema_places).

Each schema below is built so that one place holds most of the automaton (a
long bounded string, a free string among scalars, extra members of an open
object); the refusal must name that place's JSON pointer, through
``properties``, ``items``, ``$ref`` and ``anyOf``, from ``bpefst.promote``
(the limit's own exception type, its message and ``.pointer``) and from
``bpefst promote`` (exit 2, one line).
"""

from __future__ import annotations

import json
import warnings

import pytest

import bpefst
from bpefst.automata.errors import ArcLimitExceeded, StateLimitExceeded
from bpefst.regex import ByteAlphabet, CharAlphabet
from bpefst.regex.json_schema import schema_to_dfa
from bpefst.regex.json_schema_places import ITEMS, heaviest_place, schema_pointer

NOTE = {"type": "string", "maxLength": 40}
CASES = [  # (schema, the pointer of its largest part)
    ({"type": "object", "properties": {"id": {"type": "integer"}, "note": NOTE, "ok": {"type": "boolean"}}},
     "/properties/note"),
    ({"type": "array", "items": {"$ref": "#/$defs/row"}, "$defs": {"row": {"type": "object", "properties": {
        "n": {"type": "null"}, "text": NOTE}}}}, "/$defs/row/properties/text"),
    ({"type": "object", "properties": {"a": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {
        "deep": {"type": "array", "items": NOTE}}}]}}}, "/properties/a/anyOf/1/properties/deep/items"),
    ({"type": "object", "properties": {"\u00e9t\u00e9": NOTE, "k": {"enum": ["x", "y"]}}}, "/properties/\u00e9t\u00e9"),
    ({"type": "object", "properties": {"k~/": {"type": "string", "maxLength": 30}}}, "/properties/k~0~1"),
]


def quiet_dfa(schema, alphabet=None, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return schema_to_dfa(schema, alphabet or ByteAlphabet(), open_objects=False, **options)


@pytest.mark.parametrize("schema, pointer", CASES, ids=range(len(CASES)))
def test_the_largest_part_of_a_schemas_automaton_is_named_by_its_pointer(schema, pointer):
    found, share, what = heaviest_place(quiet_dfa(schema), schema)
    assert found == pointer and share > 0.5
    assert "string here" in what


def test_places_read_over_a_character_alphabet():
    schema = CASES[3][0]
    alphabet = CharAlphabet({c: i for i, c in enumerate(sorted(set('{}[]",:-0123456789abcdefiklnrstuxy\u00e9')))})
    dfa = quiet_dfa(schema, alphabet)
    assert heaviest_place(dfa, schema, {i: c for c, i in alphabet.plain.items()})[0] == "/properties/\u00e9t\u00e9"


def test_extra_members_of_an_open_object_are_the_objects():
    schema = {"type": "object", "properties": {"in": {"type": "object", "properties": {"a": {"type": "null"}}}}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dfa = schema_to_dfa(schema, ByteAlphabet(), max_depth=2, open_objects="outermost")
    pointer, share, what = heaviest_place(dfa, schema)
    assert pointer == "" and "extra members" in what and share > 0.5


def test_schema_pointers_of_document_places():
    schema = {"$defs": {"list": {"type": "array", "items": {"$ref": "#/$defs/item"}}, "item": {"oneOf": [
        {"type": "null"}, {"type": "object", "properties": {"v": {}}, "additionalProperties": {"type": "integer"}}]}},
        "type": "object", "properties": {"xs": {"$ref": "#/$defs/list"}}}
    assert schema_pointer(schema, ()) == ("", "the object here: fewer members, or additionalProperties: false, bounds it")
    assert schema_pointer(schema, ("xs",))[0] == "/$defs/list"
    assert schema_pointer(schema, ("xs", ITEMS))[0] == "/$defs/item"
    assert schema_pointer(schema, ("xs", ITEMS, "v")) == ("/$defs/item/oneOf/1/properties/v",
                                                           "any JSON value here: a type, or a lower max_depth, bounds it")
    assert schema_pointer(schema, ("xs", ITEMS, "other"))[0] == "/$defs/item/oneOf/1/additionalProperties"
    pointer, what = schema_pointer(schema, ("ys", ITEMS))  # not listed: an extra member of the document
    assert pointer == "" and "extra members" in what
    patterned = {"type": "object", "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": {"type": "null"}}
    assert schema_pointer(patterned, ("x-a",))[0] == "/patternProperties/^x-"
    assert schema_pointer(patterned, ("y",))[0] == "/additionalProperties"


@pytest.fixture(scope="module")
def small():
    from small_models import random_byte_model

    from bpefst.tokenizer import PRESETS

    return random_byte_model(27, alphabet=b'{}[]":,abc01tru', num_merges=20, pattern=PRESETS["gpt2"])


@pytest.mark.parametrize("open_objects", [None, True, False])
def test_promote_refuses_a_lattice_past_max_lattice_arcs_where_the_schema_is_largest(small, open_objects):
    schema = CASES[0][0]
    with pytest.raises(ArcLimitExceeded) as info, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bpefst.promote(small, json_schema=schema, max_lattice_arcs=5_000, open_objects=open_objects)
    message = str(info.value)
    assert message.startswith("JSON Schema /properties/note: ") and "arc limit exceeded" in message, message
    assert "of the schema's automaton is the string here" in message and "\n" not in message
    assert info.value.pointer == "/properties/note"
    bpefst.promote(small, json_schema=schema, open_objects=False).guide()  # within the default limits it is promoted


def test_promote_refuses_a_chunked_pattern_past_max_states_where_the_schema_is_largest(small):
    schema = CASES[1][0]
    states = quiet_dfa(schema).num_states
    with pytest.raises(StateLimitExceeded, match=r"^JSON Schema /\$defs/row/properties/text: the chunked pattern"):
        bpefst.promote(small, json_schema=schema, max_states=4 * states, open_objects=False)  # (the translation builds more than it keeps)


def test_cli_refusal_names_the_pointer(tmp_path, small):
    from cli_runner import assert_user_error, run

    from bpefst.tokenizer import save_tokenizer

    save_tokenizer(small, tmp_path / "small.bpefst")
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(CASES[0][0]))
    result = run("promote", str(tmp_path / "small.bpefst"), "--json-schema", str(path), "--max-arcs", "5000")
    assert_user_error(result, "JSON Schema /properties/note: the token lattice")
    assert "string here" in result.stderr.decode() and "--max-arcs" in result.stderr.decode()
