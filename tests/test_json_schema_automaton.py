"""JSON Schema -> automaton built directly (issue 27): the same language as the pattern, and objects open by default.

Oracles: the pattern compiled by bpefst's regex compiler (language
equivalence, Hopcroft-Karp), ``regex.fullmatch`` on the pattern, and
``jsonschema`` for validity both ways.
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

from bpefst import native
from bpefst.automata import DFA, minimize
from bpefst.automata.equivalence import counterexample
from bpefst.automata.language import sampler
from bpefst.regex import ByteAlphabet, CharAlphabet, compile_regex
from bpefst.regex.json_schema import SchemaWarning, schema_to_dfa, schema_to_regex
from bpefst.regex.json_schema_automaton import LEAF_CACHE, _leaves, leaf_dfa, minimal

jsonschema = pytest.importorskip("jsonschema")
Validator = jsonschema.Draft202012Validator


def compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def quiet(function, *args, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SchemaWarning)
        return function(*args, **options)


SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": -3, "maximum": 12}, "b": {"type": "string", "maxLength": 2}},
     "required": ["b"]},
    {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "null"}, "c": {"enum": [1, "x", None]}},
     "additionalProperties": False},
    {"type": "array", "items": {"type": "number", "exclusiveMinimum": 0.5, "maximum": 2}, "minItems": 1, "maxItems": 3},
    {"type": "array", "prefixItems": [{"const": "k"}, {"type": "integer"}], "items": False},
    {"anyOf": [{"type": "string", "format": "date"}, {"type": "integer", "minimum": 0}]},
    {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}},
                        "additionalProperties": False}}, "$ref": "#/$defs/node"},
    {"type": "object", "properties": {"p": {"type": "string", "pattern": "^[a-c]+$"}}, "additionalProperties": {"type": "integer"}},
    {"type": "object", "patternProperties": {"^x-[a-z]$": {"type": "boolean"}}, "additionalProperties": False},
    {},
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string"}}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
@pytest.mark.parametrize("whitespace", [0, 1])
def test_direct_automaton_has_the_language_of_the_pattern(schema, whitespace):
    direct = quiet(schema_to_dfa, schema, whitespace=whitespace, max_depth=1)
    parsed = compile_regex(quiet(schema_to_regex, schema, whitespace, max_depth=1), ByteAlphabet())
    assert counterexample(direct, parsed) is None


def test_direct_automaton_over_a_character_alphabet():
    schema = SCHEMAS[0]
    alphabet = CharAlphabet({c: i for i, c in enumerate('{}[]",:-0123456789abcxyz')})
    direct = quiet(schema_to_dfa, schema, alphabet, max_depth=1)
    parsed = compile_regex(quiet(schema_to_regex, schema, max_depth=1), alphabet)
    assert counterexample(direct, parsed) is None


def test_members_are_a_chain_not_an_alternation_per_first_member():
    """Twenty optional members: the rendered pattern grows with the square, the automaton linearly (it is built)."""
    schema = {"type": "object", "properties": {f"p{i}": {"type": "boolean"} for i in range(20)}, "additionalProperties": False}
    dfa = schema_to_dfa(schema, member_order="schema")
    doc = {"p3": True, "p17": False}
    assert dfa.accepts(compact(doc).encode()) and not dfa.accepts(compact({"p17": False, "p3": True}).encode())
    assert dfa.accepts(b"{}") and not dfa.accepts(b'{,"p3":true}')


# -- open_objects: objects without additionalProperties take extra members, as JSON Schema says --------------------------------------------------------------
OPEN = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 2}, "b": {"type": "string", "maxLength": 1}},
        "required": ["a"]}


def universe():
    """Objects: listed members in schema order (with good and bad values), then extra members of several kinds."""
    extras = [{}, {"c": 1}, {"c": [1, {"d": None}]}, {"a ": "x"}, {"c": "x", "dd": {"e": [True]}}]
    out = []
    for a, b, extra in itertools.product([None, 0, 2, 3, "0"], [None, "", "z", "zz", 5], extras):
        doc = {k: v for k, v in (("a", a), ("b", b)) if v is not None}
        doc.update(extra)
        out.append(doc)
    return out


def test_open_objects_accept_extra_members_both_ways():
    check = Validator(OPEN)
    dfa = schema_to_dfa(OPEN, max_depth=2, open_objects=True)
    pattern = regex.compile(schema_to_regex(OPEN, max_depth=2, open_objects=True))
    valid = invalid = 0
    for doc in universe():
        text = compact(doc)
        accepted = dfa.accepts(text.encode())
        assert accepted == (pattern.fullmatch(text) is not None), text
        if check.is_valid(doc):
            valid += 1
            assert accepted, f"valid document refused: {text}"
        else:
            invalid += 1
            assert not accepted, f"invalid document accepted: {text}"
    assert valid > 20 and invalid > 20
    assert not dfa.accepts(b'{"a":1,"a":1}')  # an extra member never repeats a listed name


def sampled_documents(dfa, longest: int, seed: int, tries: int = 300):
    """Documents drawn from ``dfa``'s language (texts up to ``longest`` symbols), parsed."""
    draw, rng = sampler(dfa, longest), random.Random(seed)
    for _ in range(tries):
        found = draw(rng)
        if found is not None:
            yield json.loads(bytes(found).decode("utf-8"))


def test_generated_documents_of_open_objects_validate():
    check = Validator(OPEN)
    extras = 0
    for document in sampled_documents(schema_to_dfa(OPEN, max_depth=2, open_objects=True), 60, 3):
        assert check.is_valid(document), document
        extras += len(set(document) - {"a", "b"}) > 0
    assert extras > 0


@settings(max_examples=40, deadline=None)
@given(low=st.integers(-50, 50), span=st.integers(0, 80), value=st.integers(-200, 200), extra=st.integers(-5, 5))
def test_bounds_inside_open_objects_against_jsonschema(low, span, value, extra):
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": low, "maximum": low + span}}, "required": ["n"]}
    dfa = schema_to_dfa(schema, max_depth=1, open_objects=True)
    for doc in ({"n": value}, {"n": value, "m": extra}):
        assert dfa.accepts(compact(doc).encode()) == Validator(schema).is_valid(doc), doc


def test_additional_properties_false_still_closes_the_object():
    closed = {**OPEN, "additionalProperties": False}
    dfa = schema_to_dfa(closed, open_objects=True)
    assert dfa.accepts(b'{"a":1}') and not dfa.accepts(b'{"a":1,"c":1}')


def test_objects_are_open_by_default_and_closed_on_request():
    assert schema_to_dfa(OPEN).accepts(b'{"a":1,"c":1}')
    dfa = schema_to_dfa(OPEN, open_objects=False)
    assert dfa.accepts(b'{"a":1}') and not dfa.accepts(b'{"a":1,"c":1}')


# -- the leaf cache is bounded -------------------------------------------------------------------------------------------
def test_leaf_cache_stays_bounded():
    for n in range(LEAF_CACHE + 20):
        leaf_dfa(f"x{{{n}}}", ByteAlphabet())
    assert len(_leaves) <= LEAF_CACHE


# -- the minimization of the direct construction -------------------------------------------------------------------------
def _random_trim_table(rng: random.Random, size: int, symbols: int):
    """A random table whose arcs all lead to states that reach a final state (as the construction's do)."""
    rows = [{a: rng.randrange(size) for a in rng.sample(range(symbols), rng.randint(0, symbols))} for _ in range(size)]
    finals = bytearray(rng.random() < 0.3 for _ in range(size))
    live = {q for q in range(size) if finals[q]}
    grew = True
    while grew:
        grew = False
        for q, row in enumerate(rows):
            if q not in live and not live.isdisjoint(row.values()):
                live.add(q)
                grew = True
    rows = [{a: t for a, t in row.items() if t in live} for row in rows]
    return rows, finals, sorted(live)


def _inflated(rng: random.Random, rows, finals, live, copies: int):
    """Each state as ``copies`` equivalent states, each arc into a random copy of its target."""
    big = [{a: t * copies + rng.randrange(copies) for a, t in row.items()} for row in rows for _ in range(copies)]
    big_finals = bytearray(f for f in finals for _ in range(copies))
    return big, big_finals, [q * copies + c for q in live for c in range(copies)]


ENGINES = ["pure", pytest.param("compiled", marks=pytest.mark.skipif(native.core is None, reason="the compiled core is not built"))]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(60))
def test_minimal_gives_the_minimal_automaton(seed, engine):
    # few symbols and many states, copied: many equivalent states, and long chains told apart late
    rng = random.Random(seed)
    table = _random_trim_table(rng, rng.randint(2, 40), rng.randint(1, 4))
    rows, finals, live = _inflated(rng, *table, rng.randint(1, 4))
    if not live:
        return
    start = rng.choice(live)
    got = minimal(rows, start, finals, engine=engine)
    want = minimize(DFA(rows, start, frozenset(q for q in range(len(rows)) if finals[q])))
    assert got.start == 0
    assert got.num_states == want.num_states
    assert counterexample(got, want) is None


@pytest.mark.parametrize("schema", SCHEMAS, ids=range(len(SCHEMAS)))
@pytest.mark.parametrize("whitespace", [0, 1])
def test_direct_automaton_is_minimal(schema, whitespace):
    direct = quiet(schema_to_dfa, schema, whitespace=whitespace, max_depth=1)
    assert direct.num_states == minimize(direct).num_states


@pytest.mark.parametrize("engine", ENGINES)
def test_minimal_tells_apart_states_whose_symbols_swap_targets(engine):
    # 1 and 2 read a and b into the same two states, each the other way round: not equivalent
    rows = [{0: 1, 1: 2}, {0: 3, 1: 4}, {0: 4, 1: 3}, {}, {2: 3}]
    finals = bytearray([0, 0, 0, 1, 0])
    got = minimal(rows, 0, finals, engine=engine)
    assert got.num_states == 5
    assert got.accepts([0, 0]) and got.accepts([1, 1]) and not got.accepts([1, 0]) and got.accepts([1, 0, 2])


@pytest.mark.skipif(native.core is None, reason="the compiled core is not built")
@pytest.mark.parametrize("schema", SCHEMAS + [OPEN], ids=range(len(SCHEMAS) + 1))
@pytest.mark.parametrize("whitespace", [0, 1])
def test_both_engines_minimize_the_translation_alike(schema, whitespace, monkeypatch):
    """The translation's table (copied automata read through their ids on the core) minimized on each engine:
    the same language and number of states."""
    compiled = quiet(schema_to_dfa, schema, whitespace=whitespace, max_depth=2)
    monkeypatch.setattr(native, "core", None)
    pure = quiet(schema_to_dfa, schema, whitespace=whitespace, max_depth=2)
    assert compiled.num_states == pure.num_states
    assert counterexample(compiled, pure) is None
