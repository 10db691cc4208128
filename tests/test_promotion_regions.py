"""Liveness on demand (:mod:`bpefst.promotion.regions`) against the whole solve, on both engines.

Oracle: :func:`bpefst.promotion.on_demand.solve_liveness` over the lattice of
every state of the chunked pattern (the eager route, itself checked against
brute-force encodings in ``tests/test_token_language.py`` and the pretokenized
tests): every state's ``good`` set solved region by region, in any order of
asking, equals the whole solve's; the claim the regions stand on (a state
after a chunk cut is final or has a good token) holds on every pattern here;
the compiled one-state walk (``TrieWalker.over``) gives the pure walk's arcs
in the same order; and a guide over a product solved by regions walks only
the regions its decoder reaches.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import bpefst
from bpefst import native
from bpefst.promotion import agnostic
from bpefst.promotion.agnostic import SpellingTrie
from bpefst.promotion.on_demand import OnDemandCanonical, solve_liveness
from bpefst.promotion.parts import DEFAULT_PARTS
from bpefst.promotion.pretokenized import BOUNDARY, chunked_pattern, chunker_or_whole
from bpefst.promotion.regions import RegionLiveness, _PureStateWalk
from bpefst.regex import alphabet_for, compile_regex
from bpefst.regex.json_schema import schema_to_dfa
from bpefst.tokenizer import PRESETS, load_tokenizer
from conftest import require_shared

ROOT = Path(__file__).resolve().parents[1]
ENGINES = ["pure"] + (["compiled"] if native.core is not None else [])
PATTERNS = {
    "e-mail": r"[a-z0-9._%+-]{1,12}@[a-z0-9-]{1,10}\.[a-z]{2,4}",
    "words": r"(the|a|an) (cat|dog)s?( (sat|ran))?",
    "text": r"[^\"\\]{0,12}",  # free text: every character, mid-character states
    "number": r"-?(0|[1-9][0-9]{0,5})(\.[0-9]{1,3})?",
}
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "age": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"enum": ["a b", "c"]}, "maxItems": 2}},
          "required": ["name", "age"], "additionalProperties": False}


@pytest.fixture(scope="module")
def small_tokenizer():
    return bpefst.train(ROOT / "fixtures" / "corpus.txt", 400)


def patterns(model):
    alphabet = alphabet_for(model)
    found = {name: compile_regex(text, alphabet) for name, text in PATTERNS.items()}
    found["json schema"] = schema_to_dfa(SCHEMA, alphabet)
    return found


def chunked_of(model, pattern):
    chunker = chunker_or_whole(pattern, model, model.pattern)
    return chunked_pattern(pattern, model, chunker)


def whole_good(chunked, parts):
    cut = [row.get(BOUNDARY) for row in chunked.transitions]
    groups = agnostic.walk_groups(chunked, parts.trie, keep=parts.automaton.reachable_flags)
    good, _ = solve_liveness(groups, len(cut), chunked.finals, cut, parts.automaton, "pure")
    return cut, list(good)


def check_against_the_whole_solve(model, seed: int) -> int:
    """Every pattern's states: regions (both engines, in a shuffled order) give the whole solve's good sets;
    returns the states checked."""
    parts = DEFAULT_PARTS.get(model)
    checked = 0
    for name, pattern in patterns(model).items():
        chunked = chunked_of(model, pattern)
        cut, good = whole_good(chunked, parts)
        for r, after in enumerate(cut):  # the claim: a state after a cut is final or has a good token
            assert after is None or after in chunked.finals or good[after], (name, r)
        order = list(range(len(cut)))
        random.Random(seed).shuffle(order)
        for engine in ENGINES:
            regions = RegionLiveness(chunked, parts.trie, parts.automaton, cut, engine)
            assert {q: regions[q] for q in order} == dict(enumerate(good)), (name, engine)
            assert regions.regions <= len(cut)
        checked += len(cut)
    return checked


@pytest.mark.parametrize("seed", [0, 1])
def test_regions_give_the_whole_solves_good_sets_over_a_trained_tokenizer(small_tokenizer, seed):
    assert check_against_the_whole_solve(small_tokenizer.model, seed) > 1000


def test_regions_give_the_whole_solves_good_sets_over_a_character_level_tokenizer():
    model = bpefst.train(ROOT / "fixtures" / "corpus.txt", 300, alphabet="chars", pattern=PRESETS["gpt2"]).model
    check_against_the_whole_solve(model, 2)


@pytest.mark.skipif(native.core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")
def test_the_compiled_state_walk_gives_the_pure_walks_arcs_in_order(small_tokenizer):
    model = small_tokenizer.model
    parts = DEFAULT_PARTS.get(model)
    keep = parts.automaton.reachable_flags
    for name, pattern in patterns(model).items():
        chunked = chunked_of(model, pattern)
        compiled = parts.trie.native_walker().over(chunked.transitions, bytes(keep))
        pure = _PureStateWalk(chunked.transitions, parts.trie, keep)
        assert compiled.states() == len(chunked.transitions)
        for q in range(len(chunked.transitions)):
            assert [(r, list(t)) for r, t in compiled.walk(q)] == [(r, list(t)) for r, t in pure.walk(q)], (name, q)


@pytest.mark.skipif(native.core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")
@pytest.mark.parametrize("bad", [-1, 1 << 40, "0", None, 2.0])
def test_the_compiled_state_walk_refuses_what_is_not_a_state(small_tokenizer, bad):
    model = small_tokenizer.model
    parts = DEFAULT_PARTS.get(model)
    chunked = chunked_of(model, patterns(model)["words"])
    walk = parts.trie.native_walker().over(chunked.transitions)
    with pytest.raises((ValueError, TypeError)):
        walk.walk(bad)
    with pytest.raises(ValueError):
        walk.walk(len(chunked.transitions))
    with pytest.raises(ValueError):
        parts.trie.native_walker().over(chunked.transitions, b"\1")  # keep: one byte per token


@pytest.mark.skipif(native.core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")
def test_the_whole_walks_read_a_state_walks_rows_of_their_own_trie_only(small_tokenizer):
    """TrieWalker.walk and walk_transforms take a StateWalk of the same walker in place of the transitions and
    read its packed rows (the groups of the transitions themselves); one of another trie's walker numbers the
    symbols otherwise, and is refused, as is a StateWalk given to over()."""
    model = small_tokenizer.model
    parts = DEFAULT_PARTS.get(model)
    keep = bytes(parts.automaton.reachable_flags)
    chunked = chunked_of(model, patterns(model)["words"])
    walker = parts.trie.native_walker()
    packed = walker.over(chunked.transitions, keep)
    for rows in (packed, chunked.transitions):
        assert walker.walk(rows, -1, True, keep) == walker.walk(chunked.transitions, -1, True, keep)
        assert walker.walk_transforms(rows, -1, keep) == walker.walk_transforms(chunked.transitions, -1, keep)
    other = SpellingTrie.from_model(model).native_walker()
    assert other is not walker
    with pytest.raises(ValueError, match="another trie"):
        other.walk(packed, -1, True)
    with pytest.raises(ValueError, match="another trie"):
        other.walk_transforms(packed, -1)
    with pytest.raises(TypeError):
        walker.over(packed)


def test_a_guide_solves_the_starts_region_then_the_whole_lattice(small_tokenizer, monkeypatch):
    """promote + the first mask walk the start's region, not the lattice; the decoder's second region is
    the whole solve; the masks along a document equal those of the same product solved whole up front."""
    from bpefst.promotion import on_demand

    monkeypatch.setattr(on_demand, "REGIONS_FIRST_STATES", 1 << 30)  # (this schema's free string: 8,212 states)
    tokenizer = small_tokenizer
    language = bpefst.promote(tokenizer, json_schema=SCHEMA)
    guide = language.guide()
    product = language.on_demand()
    assert isinstance(product, OnDemandCanonical) and isinstance(product.good, RegionLiveness)
    assert guide.allowed(guide.start) and product.groups is None  # no lattice walked
    assert product.good.regions == 1
    whole = bpefst.TokenLanguage(language.pattern, tokenizer.model).on_demand()
    assert whole.filed is not None and not isinstance(whole.good, RegionLiveness)  # the whole solve, as rows read it
    lazy_state, whole_state = product.start, whole.start
    for token in tokenizer.encode('{"name":"ab c","age":42,"tags":["a b"]}'):
        assert product.allowed_mask(lazy_state) == whole.allowed_mask(whole_state)
        lazy_state, whole_state = product.step(lazy_state, token), whole.step(whole_state, token)
        assert lazy_state == whole_state and lazy_state is not None
    assert product.is_final(lazy_state)
    assert product.groups is not None and not isinstance(product.good, RegionLiveness)


def test_rows_asked_first_leave_the_decoder_the_same_whole_solve(small_tokenizer, monkeypatch):
    """The whole solve a row (or the disk cache) asks for is the one the regions switch to: solved once."""
    from bpefst.promotion import on_demand

    monkeypatch.setattr(on_demand, "REGIONS_FIRST_STATES", 1 << 30)
    product = bpefst.promote(small_tokenizer, json_schema=SCHEMA).on_demand()
    regions = product.good
    assert isinstance(regions, RegionLiveness) and product.filed is not None
    groups = product.groups
    assert [regions[q] for q in range(len(product.cut))] == list(product.good)
    assert product.groups is groups


@pytest.mark.parametrize("bound", ["REGIONS_FIRST_ARCS", "REGIONS_FIRST_STATES"])
def test_a_lattice_past_the_regions_bounds_is_solved_whole_up_front(small_tokenizer, monkeypatch, bound):
    from bpefst.promotion import on_demand

    monkeypatch.setattr(on_demand, bound, 10)
    product = bpefst.promote(small_tokenizer, json_schema=SCHEMA).on_demand()
    assert product.groups is not None and not isinstance(product.good, RegionLiveness)


def test_regions_over_gpt2_give_the_whole_solves_good_sets():
    """A real vocabulary and pre-tokenizer: a JSON Schema with free text, sampled states against the whole solve."""
    data = require_shared()
    model = load_tokenizer(data / "gpt2" / "vocab.json")
    parts = DEFAULT_PARTS.get(model)
    schema = {"type": "object", "properties": {"shape": {"type": "string"}, "size": {"type": "number"},
                                               "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}}},
              "required": ["shape", "size"], "additionalProperties": False}
    chunked = chunked_of(model, schema_to_dfa(schema, alphabet_for(model)))
    cut, good = whole_good(chunked, parts)
    states = [chunked.start] + random.Random(3).sample(range(len(cut)), 300)
    for engine in ENGINES:
        regions = RegionLiveness(chunked, parts.trie, parts.automaton, cut, engine)
        assert [regions[q] for q in states] == [good[q] for q in states], engine
