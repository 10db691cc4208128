"""A JSON Schema's declared part solved first (:mod:`bpefst.promotion.declared`), against the whole solve.

Oracle: the same product solved whole up front (:func:`bpefst.promotion.on_demand.solve_liveness` over
every state's walk, itself checked against brute-force encodings in ``tests/test_token_language.py``):
the declared part's good sets and filed tokens equal the whole solve's on every state it holds, also
after the first state read outside extends it (to the states reachable from there); a decoder following
the tokenizer's own encodings of documents gets the whole product's masks, stays in the declared part
while the document has only listed members, extends it when it writes an extra member, and has the whole
lattice solved when it leaves both.  The declared states (compiled ``PackedRows.reached_with`` and the
pure walk) hold every state the chunked pattern reaches along a closed document's text, at every cut.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import bpefst
from bpefst import native
from bpefst.automata import DFA, trim
from bpefst.automata.errors import ArcLimitExceeded
from bpefst.automata.language import sampler
from bpefst.promotion import on_demand
from bpefst.promotion.agnostic import walk_groups
from bpefst.promotion.declared import DeclaredLiveness, close_by_walks, reachable, reached_by_prefixes
from bpefst.promotion.language_build import Limits
from bpefst.promotion.on_demand import OnDemandCanonical, solve_liveness
from bpefst.promotion.parts import DEFAULT_PARTS
from bpefst.promotion.pretokenized import BOUNDARY, chunked_pattern, chunker_or_whole
from bpefst.promotion.regions import open_states, state_walker
from bpefst.regex import alphabet_for
from bpefst.regex.json_schema import schema_to_dfa
from conftest import require_shared

ROOT = Path(__file__).resolve().parents[1]
# listed members, and extra ones (no additionalProperties): values of any JSON type up to max_depth
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "age": {"type": "integer"}},
          "required": ["name", "age"]}
NESTED = {"type": "object", "properties": {"in": {"type": "object", "properties": {"x": {"type": "integer"}},
                                                  "required": ["x"]}, "age": {"type": "integer"}},
          "required": ["in", "age"]}
CLOSED_DOCUMENTS = ['{"name":"ab c","age":42}', '{"name":"","age":-7}', '{"name":"x\\"y","age":0}']
OPEN_DOCUMENTS = ['{"name":"ab","age":1,"k":[1,{"a":null}]}', '{"name":"z","age":3,"size":"big","t":true}']


@pytest.fixture(scope="module")
def small_tokenizer():
    return bpefst.train(ROOT / "fixtures" / "corpus.txt", 400)


def translations(model, schema, max_depth: int = 2):
    alphabet = alphabet_for(model)
    return (schema_to_dfa(schema, alphabet, max_depth=max_depth),
            trim(schema_to_dfa(schema, alphabet, max_depth=max_depth, open_objects=False)))


def chunked_of(model, pattern):
    return chunked_pattern(trim(pattern), model, chunker_or_whole(pattern, model, model.pattern))


def states_along(chunked, text_symbols) -> set[int]:
    """Every state the chunked pattern reaches along a prefix of the text, cutting wherever it may."""
    rows, states, met = chunked.transitions, {chunked.start}, {chunked.start}

    def with_cuts(found):
        found = set(found)
        found |= {rows[q][BOUNDARY] for q in found if BOUNDARY in rows[q]}
        return found

    states = with_cuts(states)
    met |= states
    for symbol in text_symbols:
        states = with_cuts(rows[q][symbol] for q in states if symbol in rows[q])
        met |= states
    return met


def check_declared_states(model, schema, samples: int, max_depth: int = 2) -> bytearray:
    """The declared states: the same from the compiled and the pure walk, holding every state along closed
    documents (sampled from the closed translation), and fewer than all the states."""
    open_pattern, closed = translations(model, schema, max_depth)
    chunked = chunked_of(model, open_pattern)
    declared = reached_by_prefixes(chunked, closed)
    as_dicts = DFA([dict(row) for row in chunked.transitions], chunked.start, chunked.finals, check=False)
    assert reached_by_prefixes(as_dicts, closed) == declared  # (the pure walk, for a compiled chunked pattern)
    for q in random.Random(2).sample(range(len(declared)), 20):  # reachable: the same from both walks, and closed
        reached = reachable(chunked, q)
        assert reached == reachable(as_dicts, q) and reached[q]
        assert all(reached[r] for p in range(len(reached)) if reached[p] for r in as_dicts.transitions[p].values())
    draw, rng = sampler(closed, 40), random.Random(0)
    for _ in range(samples):
        text = draw(rng)
        assert all(declared[q] for q in states_along(chunked, text))
    assert 0 < declared.count(1) < len(declared)
    return declared


def whole_solve(chunked, parts):
    cut = on_demand._cuts(chunked.transitions, BOUNDARY)
    groups = [(t, p) for t, p in walk_groups(chunked, parts.trie, keep=parts.automaton.reachable_flags) if p]
    good, filed = solve_liveness(groups, len(cut), chunked.finals, cut, parts.automaton)
    return cut, good, filed


def filed_tokens(row) -> set[tuple[int, int]]:
    """A state's filed (token, target) pairs, whatever groups they were filed in (the whole solve may file a
    token settled one by one twice)."""
    return {(token, r) for tokens, r in row for token in tokens}


def check_against_the_whole_solve(model, schema, max_depth: int = 2) -> int:
    """Every state the declared part holds has the whole solve's good set and filed tokens, before and after
    the first state outside it extends it (to the states reachable from there), and the states outside
    both are the whole solve's; returns how many states the declared part held first."""
    parts = DEFAULT_PARTS.get(model)
    open_pattern, closed = translations(model, schema, max_depth)
    chunked = chunked_of(model, open_pattern)
    cut, good, filed = whole_solve(chunked, parts)
    asked = []
    declared = DeclaredLiveness(chunked, parts.trie, parts.automaton, cut, reached_by_prefixes(chunked, closed),
                                then_whole=lambda: (lambda: asked.append(1) or good))
    length = (model.max_id + 8) // 8

    def check_held() -> list[int]:
        held = [q for q in range(len(cut)) if declared.holds(q)]
        for q in held:
            assert declared[q] == good[q], q
            assert filed_tokens(declared.filed_of(q)) == filed_tokens(filed[q]), q
            assert declared.bytes_of(q, length) == good[q].to_bytes(length, "little")
        return held

    first = check_held()
    assert 0 < len(first) < len(cut)
    outside = [q for q in range(len(cut)) if not declared.holds(q)]
    exit_state = min(outside[::max(1, len(outside) // 50)], key=lambda q: reachable(chunked, q).count(1))
    assert declared[exit_state] == good[exit_state] and not asked and declared.extended
    extended = check_held()
    assert len(first) < len(extended) < len(cut)
    assert all(declared[q] == good[q] for q in range(len(cut))) and asked == [1]  # the rest: the whole solve, once
    return len(first)


def test_declared_states_hold_every_state_a_closed_document_reaches(small_tokenizer):
    check_declared_states(small_tokenizer.model, SCHEMA, 200)


def test_declared_part_has_the_whole_solves_sets(small_tokenizer):
    assert check_against_the_whole_solve(small_tokenizer.model, NESTED) > 20


def decode_both(tokenizer, deferred: OnDemandCanonical, whole: OnDemandCanonical, text: str) -> None:
    """Step both products along the tokenizer's encoding of ``text``: the same masks, the same finality, and
    the text accepted (state numbers may differ: a row numbers its targets in the order its groups were filed)."""
    a, b = deferred.start, whole.start
    for token in tokenizer.encode(text):
        assert deferred.allowed_mask(a) == whole.allowed_mask(b), text
        length = (tokenizer.model.max_id + 8) // 8
        assert deferred.packed_mask(a, length) == whole.packed_mask(b, length), text
        a, b = deferred.step(a, token), whole.step(b, token)
        assert a is not None and b is not None, text
        assert deferred.is_final(a) == whole.is_final(b), text
    assert deferred.is_final(a), text


def test_a_decoder_stays_in_the_declared_part_until_it_writes_an_extra_member(small_tokenizer, monkeypatch):
    monkeypatch.setattr(on_demand, "REGIONS_FIRST_STATES", 10)  # (this small lattice would be solved by regions)
    language = bpefst.promote(small_tokenizer, json_schema=SCHEMA)
    product = language.on_demand()
    assert isinstance(product.good, DeclaredLiveness) and product.groups is None
    whole = bpefst.TokenLanguage(language.pattern, small_tokenizer.model).on_demand()
    assert not isinstance(whole.good, DeclaredLiveness)
    for text in CLOSED_DOCUMENTS:
        decode_both(small_tokenizer, product, whole, text)
        assert isinstance(product.good, DeclaredLiveness), text  # nothing outside the declared part read
    a, b = product.start, whole.start
    for token in small_tokenizer.encode(CLOSED_DOCUMENTS[0]):  # rows from the declared part's filed groups
        row_a, row_b = product.row(a), whole.row(b)
        assert row_a.keys() == row_b.keys()
        assert all(product.allowed_mask(row_a[t]) == whole.allowed_mask(row_b[t]) for t in row_a)
        a, b = row_a[token], row_b[token]
    assert isinstance(product.good, DeclaredLiveness)
    for text in OPEN_DOCUMENTS:  # an extra member of the one object: every extra member reachable, solved whole
        decode_both(small_tokenizer, product, whole, text)
    assert not isinstance(product.good, DeclaredLiveness) and product.groups is not None
    assert list(product.liveness()["good"]) == list(whole.good)


def test_a_decoder_leaving_the_declared_part_twice_apart_has_the_whole_lattice_solved(small_tokenizer, monkeypatch):
    """An extra member of the outer object (the part is extended to what follows it), then one of the inner
    object, which no state after the first reaches: the whole lattice is solved then, and the masks stay the
    whole product's throughout."""
    monkeypatch.setattr(on_demand, "REGIONS_FIRST_STATES", 10)
    language = bpefst.promote(small_tokenizer, json_schema=NESTED)
    product = language.on_demand()
    assert isinstance(product.good, DeclaredLiveness)
    whole = bpefst.TokenLanguage(language.pattern, small_tokenizer.model).on_demand()
    decode_both(small_tokenizer, product, whole, '{"in":{"x":1},"age":2}')
    assert isinstance(product.good, DeclaredLiveness) and not product.good.extended
    decode_both(small_tokenizer, product, whole, '{"in":{"x":1},"age":2,"e":[3]}')
    assert isinstance(product.good, DeclaredLiveness) and product.good.extended and product.groups is None
    decode_both(small_tokenizer, product, whole, '{"in":{"x":1,"f":"g h"},"age":2}')
    assert not isinstance(product.good, DeclaredLiveness) and product.groups is not None  # solved whole, once
    decode_both(small_tokenizer, product, whole, '{"in":{"x":5},"age":2,"e":null}')


def test_writing_a_deferred_language_out_solves_it_whole(small_tokenizer, monkeypatch, tmp_path):
    monkeypatch.setattr(on_demand, "REGIONS_FIRST_STATES", 10)
    language = bpefst.promote(small_tokenizer, json_schema=SCHEMA)
    language.save(tmp_path / "schema.guide", form="guide")
    loaded = bpefst.TokenLanguage.load(tmp_path / "schema.guide", tokenizer=small_tokenizer)
    whole = bpefst.TokenLanguage(language.pattern, small_tokenizer.model).on_demand()
    for text in CLOSED_DOCUMENTS + OPEN_DOCUMENTS:
        decode_both(small_tokenizer, loaded.on_demand(), whole, text)


def test_a_lattice_past_the_limit_is_refused_with_a_declared_part_too(small_tokenizer, monkeypatch):
    """The declared part is solved first only where the lattice's bound is within max_lattice_arcs: a lattice
    past the limit is refused at once, as without a declared part, and one within it is deferred."""
    monkeypatch.setattr(on_demand, "REGIONS_FIRST_STATES", 10)
    model = small_tokenizer.model
    open_pattern, closed = translations(model, SCHEMA)
    arcs = bpefst.TokenLanguage(open_pattern, model).on_demand().lattice_arcs
    bound = on_demand._lattice_bound(chunked_of(model, open_pattern), DEFAULT_PARTS.get(model).trie)
    assert arcs < bound
    for declared in (None, closed):
        with pytest.raises(ArcLimitExceeded):
            bpefst.TokenLanguage(open_pattern, model, limits=Limits(max_lattice_arcs=arcs - 1),
                                 declared=declared).on_demand()
        product = bpefst.TokenLanguage(open_pattern, model, limits=Limits(max_lattice_arcs=bound),
                                       declared=declared).on_demand()
        assert isinstance(product.good, DeclaredLiveness) == (declared is not None)
    within_the_arcs = bpefst.TokenLanguage(open_pattern, model, limits=Limits(max_lattice_arcs=arcs), declared=closed)
    assert not isinstance(within_the_arcs.on_demand().good, DeclaredLiveness)  # (not bounded: walked whole, and fits)


def test_a_closed_schema_is_solved_whole(small_tokenizer, monkeypatch):
    """Nothing to leave out: every state is declared, so the product is solved whole up front."""
    monkeypatch.setattr(on_demand, "REGIONS_FIRST_STATES", 10)
    product = bpefst.promote(small_tokenizer, json_schema={**SCHEMA, "additionalProperties": False}).on_demand()
    assert product.groups is not None and not isinstance(product.good, DeclaredLiveness)


GPT2_SCHEMA = {"type": "object", "properties": {"place": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]},
                                                "unit": {"enum": ["c", "f"]}}, "required": ["place"]}


def test_declared_part_over_gpt2():
    """A real vocabulary and pre-tokenizer: the declared states, their sets against the whole solve, and a
    decoder through bpefst.promote, extra values one level deep."""
    data = require_shared()
    tokenizer = bpefst.load(data / "gpt2" / "vocab.json")
    model = tokenizer.model
    check_declared_states(model, GPT2_SCHEMA, 100, max_depth=1)
    assert check_against_the_whole_solve(model, GPT2_SCHEMA, max_depth=1) > 50
    if native.core is not None:  # (walks from the closure's own targets too: a key's letters)
        check_closure(model, GPT2_SCHEMA, max_depth=1)
    language = bpefst.promote(tokenizer, json_schema=GPT2_SCHEMA, max_depth=1)
    product = language.on_demand()
    assert isinstance(product.good, DeclaredLiveness)
    whole = bpefst.TokenLanguage(language.pattern, model).on_demand()
    for text in ['{"place":{"city":"Zürich"},"unit":"c"}', '{"place":{"city":"New York"}}']:
        decode_both(tokenizer, product, whole, text)
    assert isinstance(product.good, DeclaredLiveness)
    decode_both(tokenizer, product, whole, '{"place":{"city":"Oslo"},"unit":"f","pop":[1,"two"]}')
    assert isinstance(product.good, DeclaredLiveness) and product.good.extended


def test_a_schema_whose_closed_reading_is_empty_is_solved_whole(small_tokenizer, monkeypatch):
    """A required member only an extra one can give: closed, nothing is valid (the translation refuses it), so
    there is no declared part; the open language is promoted and solved whole, as without one."""
    monkeypatch.setattr(on_demand, "REGIONS_FIRST_STATES", 10)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "b"]}
    language = bpefst.promote(small_tokenizer, json_schema=schema)
    product = language.on_demand()
    assert product.groups is not None and not isinstance(product.good, DeclaredLiveness)
    whole = bpefst.TokenLanguage(language.pattern, small_tokenizer.model).on_demand()
    decode_both(small_tokenizer, product, whole, '{"a":1,"b":[2]}')


def check_closure(model, schema, max_depth: int = 2) -> None:
    """StateWalk.close: from the declared states' groups (dicts or Pairs), the same states walked and the same
    groups appended in the same order as the loop, each group's pairs one {q: r}."""
    parts = DEFAULT_PARTS.get(model)
    open_pattern, closed = translations(model, schema, max_depth)
    chunked = chunked_of(model, open_pattern)
    declared = reached_by_prefixes(chunked, closed)
    keep = parts.automaton.reachable_flags
    is_open = open_states(chunked.finals, on_demand._cuts(chunked.transitions, BOUNDARY))
    walker = state_walker(chunked, parts.trie, keep)
    given = [(t, p) for t, p in walk_groups(chunked, parts.trie, keep=keep, sources=bytes(declared)) if p]
    for groups in (given, [(tokens, dict(pairs.items())) for tokens, pairs in given]):
        compiled, walked = list(groups), bytearray(declared)
        walker.close(compiled, walked, is_open)
        looped, walked_by_loop = list(groups), bytearray(declared)
        close_by_walks(walker.walk, looped, walked_by_loop, is_open)
        assert walked == walked_by_loop and walked.count(1) > declared.count(1)
        assert len(compiled) == len(looped) > len(groups)
        assert [(list(t), dict(p.items())) for t, p in compiled] == [(list(t), dict(p.items())) for t, p in looped]


@pytest.mark.skipif(native.core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")
@pytest.mark.parametrize("schema", [SCHEMA, NESTED])
def test_the_compiled_closure_walks_and_files_as_the_loop_does(small_tokenizer, schema):
    check_closure(small_tokenizer.model, schema)


@pytest.mark.skipif(native.core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")
@pytest.mark.parametrize("groups, walked, is_open, error", [
    ([([1], {0: 10 ** 9})], None, None, ValueError),  # a target that is not a state
    ([([1], {0: -1})], None, None, ValueError),
    ([([1], [0])], None, None, TypeError),  # pairs neither a Pairs nor a dict
    ([[1, {0: 0}]], None, None, TypeError),  # a group that is not a tuple
    ([], bytearray(1), None, ValueError),  # walked: not one byte per state
    ([], "bytes", None, BufferError),  # walked: read-only
    ([], None, b"", ValueError),  # is_open: not one byte per state
])
def test_the_compiled_closure_refuses_what_is_not_groups_or_a_flag_per_state(small_tokenizer, groups, walked, is_open,
                                                                          error):
    model = small_tokenizer.model
    parts = DEFAULT_PARTS.get(model)
    chunked = chunked_of(model, translations(model, SCHEMA)[0])
    n = len(chunked.transitions)
    walker = state_walker(chunked, parts.trie, parts.automaton.reachable_flags)
    walked = bytearray(n) if walked is None else bytes(n) if walked == "bytes" else walked
    with pytest.raises(error):
        walker.close(groups, walked, bytes(n) if is_open is None else is_open)


@pytest.mark.skipif(native.core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")
@pytest.mark.parametrize("call, error", [
    (lambda rows: rows.reached_with([{1.5: 0}], 0, 0), TypeError),
    (lambda rows: rows.reached_with([{0: 99}], 0, 0), ValueError),
    (lambda rows: rows.reached_with([{-1: 0}], 0, 0), ValueError),
    (lambda rows: rows.reached_with([5], 0, 0), TypeError),
    (lambda rows: rows.reached_with([{}], 0, 5), IndexError),
    (lambda rows: rows.reached_with([{}], -1, 0), IndexError),
    (lambda rows: rows.reachable(b""), ValueError),
])
def test_the_compiled_walks_refuse_what_is_not_a_part_or_a_flag_per_state(small_tokenizer, call, error):
    model = small_tokenizer.model
    rows = chunked_of(model, translations(model, SCHEMA)[0]).transitions
    with pytest.raises(error):
        call(rows)
