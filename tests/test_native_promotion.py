"""Promotion's compiled loops (``src/core/promote.h``) against their pure twins, which are the specification.

* ``TrieWalker.walk`` (the spelling trie walked against a pattern DFA from
  every state) against :func:`bpefst.promotion.agnostic._rows_by_walks` and
  the grouping of :func:`~bpefst.promotion.agnostic.walk_groups`: the same
  rows and groups, in the same order, the same arc limit;
* ``TrieWalker.walk_transforms`` (one walk of the trie carrying transforms)
  against :func:`bpefst.promotion.agnostic._groups_by_transforms`: the same
  groups in the same order, the same arc limit, the same lattice;
* ``chunk_product`` (pattern x chunker x UTF-8 decoder, trimmed) against
  :func:`bpefst.promotion.pretokenized._chunked_pattern`: the same DFA, state
  numbers, row order and state limit;
* ``solve_liveness`` (``src/core/liveness.h``) against
  :class:`bpefst.promotion.on_demand._Liveness`: the same ``good`` bitsets and
  the same ``filed`` groups in the same order, so the same state numbering;

on random DFAs over random tries (hypothesis), on real patterns (an e-mail
regex, a JSON schema) over a tokenizer trained on ``fixtures/corpus.txt``
and, where ``../shared`` is present, GPT-2; the whole promotion compared
with a process on the pure path; and hostile arguments: an exception, never
a crash.  Each test skips with the reason when the extension is not built.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import json
import os
import random
import subprocess
import sys
import threading
from array import array
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bpefst
from bpefst import native
from bpefst.artifact import unpack_ints
from bpefst.automata import DFA, minimize, trim
from bpefst.bpe import MergeForest, build_canonical
from bpefst.automata.errors import ArcLimitExceeded, StateLimitExceeded
from bpefst.promotion import agnostic, guide_cache, on_demand, pretokenized
from bpefst.promotion.agnostic import SpellingTrie
from bpefst.promotion.canonical import token_mask
from bpefst.promotion.chunking import chunker_for
from bpefst.promotion.parts import DEFAULT_PARTS
from bpefst.promotion.pretokenized import BOUNDARY
from bpefst.regex import alphabet_for, compile_regex
from bpefst.regex.json_schema import schema_to_dfa
from bpefst.tokenizer import PRESETS, load_tokenizer
from conftest import require_shared
from small_models import random_byte_model, random_char_model

core = native.core
pytestmark = pytest.mark.skipif(core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")

ROOT = Path(__file__).resolve().parent.parent
EMAIL = r"[a-z0-9._%+-]{1,12}@[a-z0-9-]{1,10}\.[a-z]{2,4}"
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "age": {"type": "integer"},
                                           "tags": {"type": "array", "items": {"enum": ["a b", "c"]}, "maxItems": 2}},
          "required": ["name", "age"], "additionalProperties": False}


# ---------------------------------------------------------------- the walk
def trie_of(spellings: dict[int, tuple[int, ...]]) -> SpellingTrie:
    """A spelling trie as :meth:`SpellingTrie.from_model` builds it (tokens with equal spellings share a node)."""
    children: list[dict[int, int]] = [{}]
    ends: list[list[int]] = [[]]
    for token in sorted(spellings):
        node = 0
        for symbol in spellings[token]:
            nxt = children[node].get(symbol)
            if nxt is None:
                nxt = children[node][symbol] = len(children)
                children.append({})
                ends.append([])
            node = nxt
        ends[node].append(token)
    return SpellingTrie(children, ends, dict(spellings))


def pure_rows(transitions, trie, max_arcs=None):
    return agnostic._rows_by_walks(transitions, trie, max_arcs)


def native_rows(transitions, trie, max_arcs=None, groups=False, keep=None):
    walker = trie.native_walker()
    assert walker is not None
    return agnostic._walk_natively(walker, transitions, max_arcs, groups, keep)


def outcome(function, *args):
    """What a call gives: its value, or the type and message of the limit it hits."""
    try:
        return ("value", function(*args))
    except (ArcLimitExceeded, StateLimitExceeded) as error:
        return (type(error).__name__, str(error))


def ordered(rows):
    """Rows with their order made visible (dict equality ignores it)."""
    return [list(row.items()) for row in rows]


def _groups_of_rows(rows):
    """Each row's tokens grouped by target, one group per (state, target): the lattice without shared groups."""
    groups = []
    for q, row in enumerate(rows):
        by_target = {}
        for t, r in row.items():
            by_target.setdefault(r, []).append(t)
        groups.extend((tokens, {q: r}) for r, tokens in by_target.items())
    return groups


def as_lists(groups):
    """Groups with their token arrays (``array('I')``, as every walk hands them over) as lists, to compare with
    literals; each array checked to be one."""
    assert all(tokens.typecode == "I" for tokens, _ in groups)
    return [(list(tokens), pairs) for tokens, pairs in groups]


def regroup(groups):
    """The arcs (q, token, r) of a list of groups, as a set."""
    return {(q, t, r) for tokens, pairs in groups for q, r in pairs.items() for t in tokens}


def assert_same_walk(transitions, trie, max_arcs=None, keep=None):
    """Rows, groups and groups without the tokens ``keep`` leaves out (on_demand's use), as the pure walk makes them."""
    expected = outcome(pure_rows, transitions, trie, max_arcs)
    found = outcome(native_rows, transitions, trie, max_arcs)
    assert found[0] == expected[0]
    if expected[0] != "value":
        assert found == expected
        walked = (expected[0], expected[1].replace(" written out", ""))  # groups are walked, not written out
        assert outcome(native_rows, transitions, trie, max_arcs, True) == walked
        assert outcome(agnostic._groups_by_walks, transitions, trie, max_arcs) == walked
        return
    assert ordered(found[1]) == ordered(expected[1])
    groups = agnostic._groups_by_walks(transitions, trie, max_arcs)
    assert native_rows(transitions, trie, max_arcs, True) == groups
    assert regroup(groups) == regroup(_groups_of_rows(expected[1]))  # the same lattice as one group per row target
    assert len({tuple(tokens) for tokens, _ in groups}) == len(groups)  # each token list held once
    if keep is not None:
        kept = agnostic._groups_by_walks(transitions, trie, max_arcs, keep)
        assert native_rows(transitions, trie, max_arcs, True, keep) == kept
        assert regroup(kept) == {(q, t, r) for q, t, r in regroup(groups) if keep[t]}
        assert len({tuple(tokens) for tokens, _ in kept}) == len(kept) and all(tokens for tokens, _ in kept)
    if len(transitions) <= agnostic._TRANSFORM_WALK_STATES:  # the patterns walk_groups walks carrying transforms
        assert_same_transform_walk(transitions, trie, max_arcs, keep, groups)


def assert_same_transform_walk(transitions, trie, max_arcs=None, keep=None, everything=None):
    """``TrieWalker.walk_transforms`` against ``_walk_transforms`` (as walk_groups orders it): the same groups in the
    same order, the same arc limit, and the same lattice as the walk from every state (``everything``: its
    groups, when the caller has them)."""
    walker = trie.native_walker()
    native = outcome(agnostic._walk_natively, walker, transitions, max_arcs, True, keep, True)
    pure = outcome(agnostic._groups_by_transforms, transitions, trie, max_arcs, keep)
    assert native == pure
    if native[0] == "value":
        assert all(tokens.typecode == "I" and list(tokens) == sorted(tokens) and tokens for tokens, _ in native[1])
        assert [tokens[0] for tokens, _ in native[1]] == sorted(tokens[0] for tokens, _ in native[1])
        if everything is None:
            everything = agnostic._groups_by_walks(transitions, trie)
        assert regroup(native[1]) == regroup(agnostic._kept(everything, keep) if keep is not None else everything)


SYMBOLS = [0, 1, 2, 7, 255, 300]
spellings_strategy = st.dictionaries(st.integers(0, 2_000), st.lists(st.sampled_from(SYMBOLS), min_size=1, max_size=5).map(tuple),
                                     min_size=1, max_size=40)


@st.composite
def dfas(draw, symbols=SYMBOLS + [9, 1 << 40]):
    """Rows over some symbols of the trie, some it lacks and BOUNDARY's huge key, in a random insertion order."""
    n = draw(st.integers(1, 12))
    rows = []
    for _ in range(n):
        keys = draw(st.lists(st.sampled_from(symbols), unique=True, max_size=len(symbols)))
        rows.append({k: draw(st.integers(0, n - 1)) for k in keys})
    return rows


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spellings_strategy, dfas(), st.one_of(st.none(), st.integers(-1, 60)), st.integers(0, 6))
def test_walk_matches_the_pure_walk(spellings, transitions, max_arcs, dropped) -> None:
    keep = [(t * 7 + dropped) % 10 >= dropped for t in range(2_001)]  # none, or some of every token's neighbours
    assert_same_walk(transitions, trie_of(spellings), max_arcs, keep)


LETTERS, MARKS = [0, 1, 2], [3, 7]  # two classes of symbols, as letters and punctuation


@st.composite
def class_tries(draw):
    """70-400 spellings: words (a space, 3, then letters only) and others not starting with a space, so
    that the trie has subtrees of 32 tokens and more (the compiled index's threshold) spelled in one class."""
    words = st.lists(st.sampled_from(LETTERS), min_size=1, max_size=6).map(lambda letters: (3, *letters))
    others = st.tuples(st.sampled_from(LETTERS + [7]), st.lists(st.sampled_from(LETTERS + MARKS), max_size=3))
    spellings = draw(st.lists(st.one_of(words, words, others.map(lambda o: (o[0], *o[1]))),
                              min_size=70, max_size=400, unique=True))
    return trie_of(dict(enumerate(spellings))), len(spellings)


@st.composite
def class_dfas(draw):
    """Rows that send each class of symbols (or each symbol, now and then) to one target or to none: loops over
    a class move a subtree spelled in it alike at every depth, other rows do not."""
    n = draw(st.integers(1, 8))
    rows = []
    for _ in range(n):
        targets = [draw(st.one_of(st.none(), st.integers(0, n - 1))) for _ in range(2)]
        row = {s: targets[s in MARKS] for s in LETTERS + MARKS if targets[s in MARKS] is not None}
        if draw(st.integers(0, 3)) == 0 and row:  # one symbol apart
            symbol = draw(st.sampled_from(sorted(row)))
            row[symbol] = draw(st.integers(0, n - 1))
        rows.append(row)
    return rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(class_tries(), class_dfas(), st.one_of(st.none(), st.integers(0, 3_000)), st.integers(0, 6))
def test_transform_walks_filing_large_subtrees_in_bulk_match_the_walks_from_every_state(trie_and_size, transitions,
                                                                                         max_arcs, dropped) -> None:
    """Tries with subtrees of 32 tokens and more, which the compiled walk carrying transforms files in bulk
    where the subtree's symbols move its transform alike at every depth: the same groups as the pure walk
    and the lattice of the walks from every state, arc limit included."""
    trie, size = trie_and_size
    keep = [(t * 7 + dropped) % 10 >= dropped for t in range(size)]
    assert_same_transform_walk(transitions, trie, max_arcs, keep)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spellings_strategy, dfas(), st.lists(st.tuples(st.integers(0, 11), st.booleans()), max_size=8),
       st.one_of(st.none(), st.integers(0, 80)))
def test_states_with_repeated_rows_share_groups(spellings, transitions, copies, max_arcs) -> None:
    """Rows repeated (in the same order, or reordered: then not the same row for the walk): the shared
    groups of both walks are equal, and they are the lattice of one group per row and target."""
    transitions = [dict(row) for row in transitions]
    for source, reorder in copies:
        row = transitions[source % len(transitions)]
        transitions.append(dict(reversed(row.items())) if reorder else dict(row))
    assert_same_walk(transitions, trie_of(spellings), max_arcs)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spellings_strategy, dfas(), st.data(), st.one_of(st.none(), st.integers(0, 60)))
def test_walks_from_some_states_match_the_pure_walks(spellings, transitions, data, max_arcs) -> None:
    """``sources`` (one byte per state): the states left out get no arcs, on both walks and both engines."""
    sources = bytes(data.draw(st.lists(st.integers(0, 1), min_size=len(transitions), max_size=len(transitions))))
    trie = trie_of(spellings)
    walker = trie.native_walker()
    native = outcome(agnostic._walk_natively, walker, transitions, max_arcs, True, None, False, sources)
    assert native == outcome(agnostic._groups_by_walks, transitions, trie, max_arcs, None, sources)
    rows = outcome(agnostic._walk_natively, walker, transitions, max_arcs, False, None, False, sources)
    every_row = outcome(pure_rows, transitions, trie)[1]
    if rows[0] == "value":
        assert ordered(rows[1]) == [list(row.items()) if on else [] for row, on in zip(every_row, sources)]
    carried = outcome(agnostic._walk_natively, walker, transitions, max_arcs, True, None, True, sources)
    assert carried == outcome(agnostic._groups_by_transforms, transitions, trie, max_arcs, None, sources)
    if carried[0] == "value":
        everything = regroup(agnostic._groups_by_walks(transitions, trie))
        assert regroup(carried[1]) == {(q, t, r) for q, t, r in everything if sources[q]}
    if native[0] == "value":
        assert regroup(native[1]) == {(q, t, r) for q, t, r in regroup(agnostic._groups_by_walks(transitions, trie))
                                      if sources[q]}


def random_large_pattern(rng, symbols: list[int], n: int, row_size) -> list[dict[int, int]]:
    return [{k: rng.randrange(n) for k in rng.sample(symbols, row_size(q))} for q in range(n)]


def assert_walks_match_the_pure_walks(transitions, trie) -> None:
    """Both walks on both engines, whole and from the wide states, the compiled ones given the transitions and
    given a StateWalk over them (its packed rows read as they are, as walk_groups' ``packed``)."""
    walker = trie.native_walker()
    assert walker is not None
    everything = agnostic._groups_by_walks(transitions, trie)
    wide = bytes(len(row) >= 24 for row in transitions)
    for rows in (transitions, walker.over(transitions)):
        assert agnostic._walk_natively(walker, rows, None, True) == everything
        assert agnostic._walk_natively(walker, rows, None, True, None, True, wide) == \
            agnostic._groups_by_transforms(transitions, trie, None, None, wide)
        assert ordered(agnostic._walk_natively(walker, rows, None, False)) == ordered(pure_rows(transitions, trie))


def test_walks_of_a_pattern_too_large_for_a_dense_lookup_match_the_pure_walks() -> None:
    """Past 2**24 rows x symbols the compiled walks look a state's arcs up in a table only for its wide rows
    (24 arcs or more; a JSON string's states between characters) and binary search the others: 60,000
    states over 300 symbols, one in fifty wide, rows in random insertion order, on both walks and both
    engines, whole and from some states."""
    import random

    rng = random.Random(23)
    symbols = list(range(300))
    spellings = {t: (t,) for t in symbols}
    spellings.update({300 + k: (rng.choice(symbols), rng.choice(symbols), rng.choice(symbols)) for k in range(900)})
    n = 60_000
    transitions = random_large_pattern(rng, symbols, n, lambda q: 40 if q % 50 == 0 else rng.randint(1, 4))
    assert n * len(symbols) > 1 << 24
    assert_walks_match_the_pure_walks(transitions, trie_of(spellings))


def test_walks_of_a_pattern_with_more_wide_rows_than_their_table_holds_match_the_pure_walks() -> None:
    """Wide rows past what their table holds (2**24 entries: 55,924 rows of 300 symbols): the widest are
    tabled, the rest binary searched: 58,000 wide rows of 24-30 and 120 arcs, and 2,000 narrow ones."""
    import random

    rng = random.Random(31)
    symbols = list(range(300))
    spellings = {t: (t,) for t in symbols}
    spellings.update({300 + k: (rng.choice(symbols), rng.choice(symbols)) for k in range(300)})
    n = 60_000
    transitions = random_large_pattern(rng, symbols, n, lambda q: 120 if q % 10 == 0 else
                                       rng.randint(1, 4) if q % 30 == 1 else rng.randint(24, 30))
    assert sum(len(row) >= 24 for row in transitions) * len(symbols) > 1 << 24
    assert_walks_match_the_pure_walks(transitions, trie_of(spellings))


def test_a_large_pattern_walks_its_heavy_states_carrying_transforms(small_tokenizer, monkeypatch) -> None:
    """walk_groups over a chunked pattern past the transform walk's size with heavy states (a JSON string's
    states between characters, which read the symbols most tokens begin with): their groups from one walk
    carrying transforms, then the others' walked one by one; the same list on both engines, the lattice of
    the walks from every state, and the lattice limit where the walks from every state count it (before
    keep), with its own figure.  The small vocabulary begins fewer tokens with any symbol than a real one:
    the bound is set at the heaviest states' weight."""
    model = small_tokenizer.model
    trie = SpellingTrie.from_model(model)
    keep = DEFAULT_PARTS.get(model).automaton.reachable_flags
    chunked = pretokenized.chunked_pattern(trim(schema_to_dfa({"type": "string"}, alphabet_for(model))), model,
                                           chunker_for("gpt2"))
    transitions = chunked.transitions
    leading = trie.leading_counts()
    byte_id = {spelled[0]: token for token, spelled in model.vocab.items() if len(spelled) == 1}  # the vocabulary's own bytes
    assert {symbol: count for symbol, count in enumerate(leading) if count} == \
        collections.Counter(byte_id[spelled[0]] for spelled in model.vocab.values() if all(b in byte_id for b in spelled))
    weights = [sum(leading[s] for s in row if s < len(leading)) for row in transitions]
    monkeypatch.setattr(agnostic, "_TRANSFORM_WALK_WEIGHT", max(weights))
    wide = [q for q, weight in enumerate(weights) if weight >= max(weights)]
    assert len(transitions) > agnostic._TRANSFORM_WALK_STATES and 0 < len(wide) < len(transitions) / 4
    both_walks = []  # the limits walk_groups walked the two kinds of states at once under (on two threads)
    walk_both = agnostic._walk_both_natively
    monkeypatch.setattr(agnostic, "_walk_both_natively",
                        lambda walker, rows, heavy, first, rest, max_arcs, keep: both_walks.append(max_arcs) or
                        walk_both(walker, rows, heavy, first, rest, max_arcs, keep))
    compiled = agnostic.walk_groups(chunked, trie, None, keep)
    everything = agnostic._groups_by_walks(transitions, trie)
    assert regroup(compiled) == regroup(agnostic._kept(everything, keep))
    arcs = sum(len(tokens) * len(pairs) for tokens, pairs in everything)
    assert arcs < sum(weights) and agnostic.walk_groups(chunked, trie, sum(weights), keep) == compiled
    assert both_walks == [None, sum(weights)]  # (no limit, and a limit the rows' weights bound)

    def refused(thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as no_threads:  # a process that cannot start one more thread: one walk, then the other
        no_threads.setattr(threading.Thread, "start", refused)
        assert agnostic.walk_groups(chunked, trie, None, keep) == compiled
    with monkeypatch.context() as pure:
        pure.setattr(trie, "native_walker", lambda: None)
        assert agnostic.walk_groups(chunked, trie, None, keep) == compiled
        # (a limit below the rows' weights: one walk after the other, the light states in one walk, so the
        # same arcs in fewer groups)
        assert regroup(agnostic.walk_groups(chunked, trie, arcs, keep)) == regroup(compiled)
        with pytest.raises(ArcLimitExceeded) as refused:
            agnostic.walk_groups(chunked, trie, arcs - 1, keep)
        assert str(refused.value) == str(ArcLimitExceeded(agnostic.LATTICE, arcs - 1, written_out=False))
    assert regroup(agnostic.walk_groups(chunked, trie, arcs, keep)) == regroup(compiled)
    with pytest.raises(ArcLimitExceeded) as refused:
        agnostic.walk_groups(chunked, trie, arcs - 1, keep)
    assert str(refused.value) == str(ArcLimitExceeded(agnostic.LATTICE, arcs - 1, written_out=False))
    assert both_walks == [None, sum(weights), None]  # (arcs and arcs - 1 the weights do not bound: one walk, then the other)
    sources = bytearray(random.Random(5).random() < 0.3 for _ in transitions)  # (declared.py walks some states only)
    sources[wide[0]] = 1  # a heavy state walked carrying transforms, the light ones of the sample one by one
    walked = regroup(agnostic.walk_groups(chunked, trie, None, keep, sources))
    assert walked == {(q, t, r) for q, t, r in regroup(compiled) if sources[q]}
    with monkeypatch.context() as pure:
        pure.setattr(trie, "native_walker", lambda: None)
        assert regroup(agnostic.walk_groups(chunked, trie, None, keep, sources)) == walked


def test_the_light_states_split_to_balance_the_two_threads(monkeypatch) -> None:
    """walk_groups' light states split in two: the first of them, as many as balance the heavy walk's thread
    against this one (a heavy state counted as _HEAVY_STATE_COST light ones), then the rest."""
    heavy, light = bytes([1, 0, 0, 0, 0, 0] * 4), bytes([0, 1, 1, 1, 1, 0] * 4)  # 4 heavy, 16 light, 4 neither
    monkeypatch.setattr(agnostic, "_HEAVY_STATE_COST", 2)
    first, rest = agnostic._light_split(heavy, light)
    assert first.count(1) == (16 - 2 * 4) // 2 and first.count(1) + rest.count(1) == 16
    assert bytes(a | b for a, b in zip(first, rest)) == light and not any(a & b for a, b in zip(first, rest))
    assert max(q for q, f in enumerate(first) if f) < min(q for q, r in enumerate(rest) if r)
    monkeypatch.setattr(agnostic, "_HEAVY_STATE_COST", 4)  # the heavy walk as long as the light one: no share
    assert agnostic._light_split(heavy, light) == (bytes(24), light)


def test_compiled_walks_pairs_read_as_the_pure_walks_dicts(small_tokenizer) -> None:
    """The compiled walks hand each group's (state, target) pairs over as a ``Pairs`` (two arrays): it must
    read as the dict q -> r the pure walks make, in every way Python reads one, both from the walk state by
    state and from the walk carrying transforms, and the solve must take it as it takes that dict."""
    import pickle

    model = small_tokenizer.model
    trie = SpellingTrie.from_model(model)
    keep = DEFAULT_PARTS.get(model).automaton.reachable_flags
    pattern = trim(schema_to_dfa({"type": "array", "items": {"type": "string"}}, alphabet_for(model)))
    chunked = pretokenized.chunked_pattern(pattern, model, chunker_for("gpt2"))
    walker = trie.native_walker()
    by_state = agnostic._walk_natively(walker, chunked.transitions, None, groups=True, keep=keep)
    by_transforms = agnostic._walk_natively(walker, chunked.transitions, None, groups=True, keep=keep, transforms=True)
    pure = agnostic._groups_by_walks(chunked.transitions, trie, None, keep)
    assert as_lists(by_state) == as_lists(pure)
    n = len(chunked.transitions)
    for found, expected in [*zip(by_state, pure), *zip(by_transforms, agnostic._groups_by_transforms(
            chunked.transitions, trie, None, keep))]:
        pairs, oracle = found[1], expected[1]
        assert type(pairs) is core.Pairs and len(oracle) > 0
        assert pairs == oracle and oracle == pairs and not pairs != oracle and pairs == pairs
        assert pairs != {**oracle, n: 0} and pairs != {} and pairs != list(oracle)
        assert len(pairs) == len(oracle) and bool(pairs)
        assert list(pairs) == list(oracle) and pairs.keys() == list(oracle.keys())  # (in ascending states)
        assert pairs.values() == list(oracle.values()) and pairs.items() == list(oracle.items())
        assert all(pairs[q] == r and q in pairs and pairs.get(q) == r for q, r in oracle.items())
        missing = next(q for q in range(n + 1) if q not in oracle)
        assert missing not in pairs and pairs.get(missing) is None and pairs.get(missing, -1) == -1
        assert "0" not in pairs and 2**70 not in pairs and -1 not in pairs
        with pytest.raises(KeyError):
            pairs[missing]
        assert repr(pairs) == repr(oracle) and pickle.loads(pickle.dumps(pairs)) == oracle
        with pytest.raises(TypeError):
            hash(pairs)
    cut = [row.get(BOUNDARY) for row in chunked.transitions]
    automaton = DEFAULT_PARTS.get(model).automaton
    assert_same_liveness(by_state, n, chunked.finals, cut, automaton)
    assert_same_liveness(by_transforms, n, chunked.finals, cut, automaton)
    fewer = max(q for _, pairs in by_state for q in pairs)  # a lattice of fewer states than the pairs name
    finals = [q for q in chunked.finals if q < fewer]
    cut = [r if r is not None and r < fewer else None for r in cut[:fewer]]
    for groups in (by_state, [(tokens, dict(pairs)) for tokens, pairs in by_state]):  # refused as a dict's are
        with pytest.raises(IndexError, match="outside 0 .. n - 1"):
            on_demand.solve_liveness(groups, fewer, finals, cut, automaton, engine="compiled")


def test_equal_token_lists_are_one_group_whatever_state_files_them() -> None:
    """State 2 repeats state 0's row (not walked again), state 3 reorders it (walked: the same lists), and
    state 1 reads token 3 alone, as state 0 does, to another target: one group per distinct list, each
    with a target per state, on both walks."""
    trie = trie_of({1: (1,), 2: (1, 2), 3: (2,)})
    transitions = [{1: 1, 2: 0}, {2: 1}, {1: 1, 2: 0}, {2: 0, 1: 1}]
    groups = native_rows(transitions, trie, None, True)
    assert groups == agnostic._groups_by_walks(transitions, trie)
    assert as_lists(groups) == [([1, 2], {0: 1, 2: 1, 3: 1}), ([3], {0: 0, 1: 1, 2: 0, 3: 0})]
    keep = [True, True, False, True]  # token 2 left out: state 0's first list is [1], a list no other state has
    kept = native_rows(transitions, trie, None, True, keep)
    assert kept == agnostic._groups_by_walks(transitions, trie, None, keep)
    assert as_lists(kept) == [([1], {0: 1, 2: 1, 3: 1}), ([3], {0: 0, 1: 1, 2: 0, 3: 0})]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(st.integers(0, 70), st.integers(0, 100_000)), max_size=90), max_size=6))
def test_token_masks_match_token_mask(lists) -> None:
    expected = [token_mask(tokens) for tokens in lists]
    assert core.token_masks(lists) == expected
    assert core.token_masks([array("I", tokens) for tokens in lists]) == expected


@pytest.mark.parametrize("lists", [None, [(1, 2)], [[1, -2]], [[1 << 30]], [["1"]], [[1.0]], ([1],), [array("i", [1])],
                                   [array("I", [1 << 30])], [b"\1\0\0\0"]])
def test_token_masks_refuse_what_is_not_tokens(lists) -> None:
    with pytest.raises((ValueError, TypeError)):
        core.token_masks(lists)


def test_walk_files_tokens_of_equal_spellings_in_order() -> None:
    trie = trie_of({5: (1, 2), 9: (1, 2), 3: (1, 2), 4: (1,)})
    rows = native_rows([{1: 1}, {2: 0, 1: 1}], trie)
    assert ordered(rows) == [[(4, 1), (3, 0), (5, 0), (9, 0)]] * 2
    assert_same_walk([{1: 1}, {2: 0, 1: 1}], trie)


def test_walk_takes_the_smaller_side_as_the_pure_walk_does() -> None:
    """A root with more children than a state has arcs iterates the state's row: its order, not the trie's."""
    trie = trie_of({t: (s,) for t, s in enumerate([5, 4, 3, 2, 1])})
    rows = [{1: 0, 3: 0, 5: 0}]
    assert ordered(native_rows(rows, trie)) == [[(4, 0), (2, 0), (0, 0)]]
    assert ordered(native_rows([{s: 0 for s in (2, 1, 3, 4, 5)}], trie)) == [[(t, 0) for t in range(5)]]
    assert_same_walk(rows, trie)


def test_states_with_equal_rows_walk_alike_and_only_equal_rows_do() -> None:
    """The core walks a row once; a row equal but for a key no spelling reads, or for the order of
    its keys, is walked again (it may take the other side, or file its tokens in another order)."""
    trie = trie_of({0: (1,), 1: (2,), 2: (1, 2), 3: (2, 1), 4: (3,)})
    rows = [{1: 1, 2: 0}, {1: 1, 2: 0}, {2: 0, 1: 1}, {1: 1, 2: 0, BOUNDARY: 2}, {1: 1, 2: 0}, {1: 0, 2: 1}]
    found = native_rows(rows, trie)
    assert ordered(found) == ordered(pure_rows(rows, trie))
    assert ordered(found)[0] == ordered(found)[1] == ordered(found)[4] != ordered(found)[2]
    assert_same_walk(rows, trie)


def test_walk_raises_the_pure_walks_arc_limit() -> None:
    trie = trie_of({0: (1,), 1: (1, 1), 2: (1, 1, 1)})
    rows = [{1: 1}, {1: 2}, {1: 0}]
    assert sum(map(len, pure_rows(rows, trie))) == 9
    assert len(native_rows(rows, trie, 9)) == 3
    for limit in (-1, 0, 3, 8):
        with pytest.raises(ArcLimitExceeded) as expected:
            pure_rows(rows, trie, limit)
        with pytest.raises(ArcLimitExceeded) as pure_groups:
            agnostic._groups_by_walks(rows, trie, limit)
        assert str(pure_groups.value) == str(expected.value).replace(" written out", "")  # groups are only walked
        for groups, twin in ((False, expected), (True, pure_groups)):
            with pytest.raises(ArcLimitExceeded) as found:
                native_rows(rows, trie, limit, groups)
            assert str(found.value) == str(twin.value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spellings_strategy, dfas(), st.lists(st.integers(0, 11), max_size=8), st.one_of(st.none(), st.integers(0, 80)))
def test_states_holding_one_dict_walk_as_states_with_equal_rows(spellings, transitions, aliases, max_arcs) -> None:
    """chunk_product gives states with equal rows one dict, which the core packs once: the rows, groups and
    limit are those of the pure walk, as for equal rows in distinct dicts."""
    for source in aliases:
        transitions.append(transitions[source % len(transitions)])  # the same object again
    assert_same_walk(transitions, trie_of(spellings), max_arcs)


def test_a_walk_refused_at_the_arc_limit_makes_no_python_objects_per_arc() -> None:
    """The arcs are counted before any object is made: a refused walk allocates nothing per arc that the
    interpreter traces (its pairs are C memory, freed on return; what it traces is the exception's), where
    the walk that succeeds makes its rows (an object per arc) or its groups (lists shared by equal rows)."""
    import tracemalloc

    spellings = {t: tuple(1 + (t >> k) % 3 for k in range(1 + t % 4)) for t in range(300)}
    trie = trie_of(spellings)
    rows = [{1: (q + 1) % 40, 2: (q + 7) % 40, 3: q} for q in range(40)]
    arcs = sum(map(len, pure_rows(rows, trie)))
    for groups in (False, True):
        tracemalloc.start()
        try:
            assert len(native_rows(rows, trie, arcs, groups)) > 0
            made = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            with pytest.raises(ArcLimitExceeded):
                native_rows(rows, trie, arcs - 1, groups)
            refused = tracemalloc.get_traced_memory()[1] - tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
        assert arcs > 10_000 and refused < arcs / 4 and (groups or refused < made / 10), (groups, refused, made)


def test_tries_the_core_cannot_take_stay_on_the_pure_walk() -> None:
    assert trie_of({1: (1,), 2: (-3,)}).native_walker() is None  # a negative symbol
    shared = SpellingTrie([{1: 1, 2: 2}, {}, {}], [[], [7], [7]])  # token 7 with two spellings
    assert shared.native_walker() is None
    backwards = SpellingTrie([{1: 2}, {}, {3: 1}], [[], [4], [5]])  # a child numbered before its parent
    assert backwards.native_walker() is None
    rows = [{1: 0, 2: 0, 3: 0}] * 300  # past the transform walk's size: token_rows walks state by state
    assert agnostic.token_rows(DFA(rows, 0, frozenset({0}), check=False), shared) == pure_rows(rows, shared)


# ---------------------------------------------------------------- the chunked pattern
def pure_chunked(pattern, model, chunker, max_states=None):
    values, decoder = pretokenized._symbol_values(model, chunker)
    return pretokenized._chunked_pattern(pattern, pretokenized._symbol_stepper(values, decoder, chunker), chunker, max_states)


def native_chunked(pattern, model, chunker, max_states=None):
    values, decoder = pretokenized._symbol_values(model, chunker)
    chunked = pretokenized._chunked_natively(pattern, native.symbol_table(values), decoder, chunker, max_states)
    assert chunked is not None
    return chunked


def as_value(dfa: DFA):
    return [list(row.items()) for row in dfa.transitions], dfa.start, dfa.finals


def assert_same_chunked(pattern, model, preset, max_states=None):
    chunker = chunker_for(preset)
    expected = outcome(pure_chunked, pattern, model, chunker, max_states)
    found = outcome(native_chunked, pattern, model, chunker, max_states)
    if expected[0] == "value":
        assert found[0] == "value" and as_value(found[1]) == as_value(expected[1])
    else:
        assert found == expected


@lru_cache(maxsize=None)
def byte_model(seed: int):
    return random_byte_model(seed, alphabet="aé1 '\n中".encode(), num_merges=20, pattern=PRESETS["gpt2"])


@lru_cache(maxsize=None)
def char_model(seed: int):
    return dataclasses.replace(random_char_model(seed, alphabet="ab1 '", suffix=None), pattern=PRESETS["gpt2"])


@st.composite
def byte_patterns(draw, model):
    """Random DFAs over some of the model's base symbols (bytes of several UTF-8 lengths) and one symbol it lacks."""
    symbols = sorted(model.base_ids)[:200:7] + sorted(model.base_ids)[-60:] + [model.max_id + 5]
    n = draw(st.integers(1, 10))
    rows = []
    for _ in range(n):
        keys = draw(st.lists(st.sampled_from(symbols), unique=True, max_size=12))
        rows.append({k: draw(st.integers(0, n - 1)) for k in keys})
    finals = draw(st.frozensets(st.integers(0, n - 1)))
    return DFA(rows, draw(st.integers(0, n - 1)), finals, check=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["gpt2", "cl100k", "o200k"]), st.one_of(st.none(), st.integers(0, 40)))
def test_chunked_pattern_matches_the_pure_product(data, preset, max_states) -> None:
    model = byte_model(data.draw(st.integers(0, 2)))
    assert_same_chunked(data.draw(byte_patterns(model)), model, preset, max_states)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.one_of(st.none(), st.integers(0, 40)))
def test_chunked_pattern_of_a_character_model_matches_the_pure_product(data, max_states) -> None:
    model = char_model(data.draw(st.integers(0, 2)))
    assert_same_chunked(data.draw(byte_patterns(model)), model, "gpt2", max_states)


def test_a_pattern_past_the_direct_numbering_table_is_numbered_by_hashing_alike() -> None:
    """chunk_product numbers its (pattern, chunker, decoder) states by a table read at the key where that table
    fits in 64 MB (the patterns above), and by hashing past it: a pattern of 2,275 states (a trie of ASCII
    words: a small product) is past it over the gpt2 chunker and UTF-8 decoder, and gives the pure product."""
    model = byte_model(0)
    symbols = [model.token_to_id[b] for b in (b"a", b"1", b" ", b"'")]
    rng = random.Random(5)
    rows, finals = [{}], set()
    for _ in range(1400):
        q = 0
        for symbol in rng.choices(symbols, k=rng.randint(3, 8)):
            if symbol not in rows[q]:
                rows[q][symbol] = len(rows)
                rows.append({})
            q = rows[q][symbol]
        finals.add(q)
    pattern = DFA(rows, 0, frozenset(finals), check=False)
    decoder, _, _ = pretokenized._packed_chunker("gpt2", True)
    keys = len(rows) * len(chunker_for("gpt2").dfa.transitions) * (len(decoder) // 4 // 256)
    assert keys * 4 > 64 << 20
    assert_same_chunked(pattern, model, "gpt2")
    assert outcome(pure_chunked, pattern, model, chunker_for("gpt2"), 3000)[0] != "value"  # (3,301 states)
    assert_same_chunked(pattern, model, "gpt2", max_states=3000)


def test_chunked_pattern_keeps_the_empty_text_off_the_chunkers_start() -> None:
    """A pattern accepting the empty text gets a fresh start state (a copy of state 0's row), trimmed alike."""
    model = byte_model(0)
    a, space = model.token_to_id[b"a"], model.token_to_id[b" "]
    pattern = DFA([{a: 1, space: 0}, {space: 0}], 0, frozenset({0, 1}), check=False)
    expected = pure_chunked(pattern, model, chunker_for("gpt2"))
    assert expected.start == len(expected.transitions) - 1
    assert as_value(native_chunked(pattern, model, chunker_for("gpt2"))) == as_value(expected)
    empty = DFA([{a: 0}], 0, frozenset(), check=False)
    assert as_value(native_chunked(empty, model, chunker_for("gpt2"))) == as_value(DFA.empty_language())


# ---------------------------------------------------------------- real patterns
@pytest.fixture(scope="module")
def small_tokenizer():
    return bpefst.train(ROOT / "fixtures" / "corpus.txt", 400)


def real_patterns(model):
    alphabet = alphabet_for(model)
    return {"e-mail": compile_regex(EMAIL, alphabet), "json schema": schema_to_dfa(SCHEMA, alphabet)}


def test_the_compiled_chunked_pattern_reads_as_its_list_of_dicts(small_tokenizer) -> None:
    """chunk_product's rows (``bpefst._core.PackedRows``, dicts made when asked for) are the pure twin's list of
    dicts: len, rows[q] (the same dict each time, negative indexes too, out of range an IndexError), iteration,
    == and != both ways, pickled as that list; cuts(), weights() and has_boundary() say what the dicts do."""
    import pickle

    model = small_tokenizer.model
    for name, pattern in real_patterns(model).items():
        found = native_chunked(trim(pattern), model, chunker_for("gpt2")).transitions
        rows = pure_chunked(trim(pattern), model, chunker_for("gpt2")).transitions
        assert type(found).__name__ == "PackedRows" and len(found) == len(rows), name
        assert found[3] is found[3] and found[-1] == rows[-1] and found[len(rows) - 1] is found[-1]
        with pytest.raises(IndexError):
            found[len(rows)]
        with pytest.raises(IndexError):
            found[-len(rows) - 1]
        assert found == rows and rows == found and not found != rows and [list(row.items()) for row in found] == \
            [list(row.items()) for row in rows]
        changed = [dict(row) for row in rows]
        changed[-1][10**9] = 0
        assert found != changed and changed != found
        assert pickle.loads(pickle.dumps(found)) == rows and type(pickle.loads(pickle.dumps(found))) is list
        assert found.cuts() == [row.get(BOUNDARY) for row in rows]
        weights = array("q", range(1, 300))
        assert found.weights(weights) == [sum(weights[s] for s in row if 0 <= s < 299) for row in rows]
        assert found.weights(array("q")) == [0] * len(rows)
        with pytest.raises(TypeError):
            found.weights(array("i", range(300)))
        assert found.has_boundary() == any(BOUNDARY in row for row in rows) is True
        spellings = [(), (97,), (97, 98), (BOUNDARY,), (-5, 97)] + [
            tuple(random.Random(k).choices(b"abe.@ 0\x80\xc3", k=k % 4)) for k in range(16)]
        for q, spelling in itertools.product(range(len(rows)), spellings):
            state = q
            for symbol in spelling:
                state = rows[state].get(symbol) if state is not None else None
            assert found.follow(q, spelling) == state, (name, q, spelling)
        with pytest.raises(IndexError):
            found.follow(len(rows), ())
        with pytest.raises(TypeError):
            found.follow(0, 5)
    without = native_chunked(trim(compile_regex("ab", alphabet_for(model))), model, chunker_for("gpt2")).transitions
    assert not without.has_boundary() and without.cuts() == [None] * len(without)


def test_the_chunked_pattern_gives_equal_rows_one_dict(small_tokenizer) -> None:
    """What the walk packs once: states whose rows are equal (in order) hold the same dict, and only they do."""
    model = small_tokenizer.model
    for name, pattern in real_patterns(model).items():
        chunked = native_chunked(trim(pattern), model, chunker_for("gpt2"))
        rows = chunked.transitions
        assert len({id(row) for row in rows}) == len({tuple(row.items()) for row in rows}) < len(rows), name


def assert_same_promotion_loops(model, patterns) -> None:
    trie = SpellingTrie.from_model(model)
    reachable = build_canonical(MergeForest.from_model(model)).reachable
    chunker = chunker_for("gpt2")
    for name, pattern in patterns.items():
        pattern = trim(pattern)
        chunked = pure_chunked(pattern, model, chunker)
        assert as_value(native_chunked(pattern, model, chunker)) == as_value(chunked), name
        assert any(BOUNDARY in row for row in chunked.transitions), name  # the matches are cut: the product matters
        assert_same_walk(chunked.transitions, trie, keep=reachable)
        assert_same_walk(pattern.transitions, trie, keep=reachable)


def test_mid_character_states_merge_without_changing_the_language(small_tokenizer, monkeypatch) -> None:
    """The chunked pattern's mid-character states with the same future are merged (pretokenized.
    _merged_mid_character, compiled in chunk_product): the same language as the product before, far fewer
    states, and the same DFA on both engines."""
    model = small_tokenizer.model
    chunker = chunker_for("gpt2")
    pattern = trim(schema_to_dfa({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                                  "required": ["a", "b"], "additionalProperties": False}, alphabet_for(model)))
    merged = pure_chunked(pattern, model, chunker)
    assert as_value(native_chunked(pattern, model, chunker)) == as_value(merged)
    monkeypatch.setattr(pretokenized, "_merged_mid_character", lambda dfa, mid: dfa)
    with unkeyed():
        product = pure_chunked(pattern, model, chunker)
    assert len(merged.transitions) < len(product.transitions) / 2
    assert minimize(merged) == minimize(product)


@contextmanager
def unkeyed():
    """The chunked product keyed on every chunker state inside a character (pretokenized.mid_character_chunks
    the identity), on both engines."""
    def every_chunker_state(preset):
        return [list(range(len(chunker_for(preset).dfa.transitions)))] * len(pretokenized.utf8_decoder(preset))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pretokenized, "mid_character_chunks", every_chunker_state)
        pretokenized._packed_chunker.cache_clear()
        try:
            yield
        finally:
            pretokenized._packed_chunker.cache_clear()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(["gpt2", "cl100k", "o200k"]))
def test_keying_mid_character_states_leaves_the_chunked_pattern_as_it_was(data, preset) -> None:
    """The product keyed on the chunker states a character's remaining atoms tell apart, dead characters not
    made (mid_character_chunks), is state for state the product keyed on every chunker state, trimmed and
    merged: the copies it leaves out are ones the merge and the trim drop (the oracle: the product as built
    before keying).  Both engines."""
    model = byte_model(data.draw(st.integers(0, 2)))
    pattern = data.draw(byte_patterns(model))
    chunker = chunker_for(preset)
    keyed = pure_chunked(pattern, model, chunker), native_chunked(pattern, model, chunker)
    with unkeyed():
        every = pure_chunked(pattern, model, chunker), native_chunked(pattern, model, chunker)
    assert as_value(keyed[0]) == as_value(keyed[1]) == as_value(every[0]) == as_value(every[1])


def test_keying_mid_character_states_numbers_fewer_of_them(small_tokenizer, monkeypatch) -> None:
    """A JSON object of two strings over GPT-2's chunker: the product keyed as mid_character_chunks says numbers
    fewer than half the states of the product keyed on every chunker state, and ends the same DFA."""
    model = small_tokenizer.model
    chunker = chunker_for("gpt2")
    pattern = trim(schema_to_dfa({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                                  "required": ["a", "b"], "additionalProperties": False}, alphabet_for(model)))
    numbered = {}
    real_numbering = pretokenized.Numbering

    def counting(name, limit):
        numbering = real_numbering(name, limit)
        numbered.setdefault("runs", []).append(numbering)
        return numbering

    monkeypatch.setattr(pretokenized, "Numbering", counting)
    keyed = pure_chunked(pattern, model, chunker)
    with unkeyed():
        every = pure_chunked(pattern, model, chunker)
    first, second = (len(run.keys) for run in numbered["runs"])
    assert first < second / 2
    assert as_value(keyed) == as_value(every)


def test_the_chunked_pattern_is_refused_at_the_lattice_arc_limit(small_tokenizer, monkeypatch) -> None:
    """A chunked pattern with more arcs on symbols than max_arcs is refused with the lattice's limit, on both
    engines alike, before its rows are made: each such arc is an arc of the lattice (base symbols are tokens)."""
    model = small_tokenizer.model
    trie, chunker = SpellingTrie.from_model(model), chunker_for("gpt2")
    for name, pattern in real_patterns(model).items():
        pattern = trim(pattern)
        chunked = pure_chunked(pattern, model, chunker)
        arcs = sum(len(row) - (BOUNDARY in row) for row in chunked.transitions)
        lattice = sum(len(tokens) * len(pairs) for tokens, pairs in agnostic._groups_by_walks(chunked.transitions, trie))
        assert lattice >= arcs > 0, name
        for engine in ("compiled", "pure"):
            if engine == "pure":
                monkeypatch.setattr(native, "core", None)
            assert as_value(pretokenized.chunked_pattern(pattern, model, chunker, max_arcs=arcs)) == as_value(chunked)
            with pytest.raises(ArcLimitExceeded, match="token lattice") as refused:
                pretokenized.chunked_pattern(pattern, model, chunker, max_arcs=arcs - 1)
            assert str(refused.value) == str(ArcLimitExceeded(agnostic.LATTICE, arcs - 1, written_out=False))
            monkeypatch.undo()


def test_a_likely_refused_lattice_is_counted_before_the_rows_are_made(small_tokenizer, monkeypatch) -> None:
    """Given the trie, a chunked pattern whose arcs times LATTICE_PER_CHUNKED_ARC pass max_arcs has its lattice
    counted in chunk_product: refused there exactly when the walk would refuse it (its arcs, counted before
    A_BPE's keep), the same message; otherwise the same chunked pattern as without the trie.  The pure path
    has no such count and refuses at the walk."""
    model = small_tokenizer.model
    trie, chunker = SpellingTrie.from_model(model), chunker_for("gpt2")
    counted = 0
    for name, pattern in real_patterns(model).items():
        pattern = trim(pattern)
        chunked = pure_chunked(pattern, model, chunker)
        arcs = sum(len(row) - (BOUNDARY in row) for row in chunked.transitions)
        lattice = sum(len(tokens) * len(pairs) for tokens, pairs in agnostic._groups_by_walks(chunked.transitions, trie))
        for limit in (lattice, lattice - 1, (lattice + arcs) // 2, arcs):
            counts = arcs * pretokenized.LATTICE_PER_CHUNKED_ARC > limit
            counted += counts
            if arcs > limit or (counts and lattice > limit):
                with pytest.raises(ArcLimitExceeded) as refused:
                    pretokenized.chunked_pattern(pattern, model, chunker, max_arcs=limit, trie=trie)
                assert str(refused.value) == str(ArcLimitExceeded(agnostic.LATTICE, limit, written_out=False)), name
            else:
                found = pretokenized.chunked_pattern(pattern, model, chunker, max_arcs=limit, trie=trie)
                assert as_value(found) == as_value(chunked), name
            monkeypatch.setattr(native, "core", None)
            if arcs > limit:
                with pytest.raises(ArcLimitExceeded):
                    pretokenized.chunked_pattern(pattern, model, chunker, max_arcs=limit, trie=trie)
            else:
                assert as_value(pretokenized.chunked_pattern(pattern, model, chunker, max_arcs=limit, trie=trie)) == \
                    as_value(chunked)
            monkeypatch.undo()
    assert counted  # the count ran on some of them


def test_the_lattice_of_a_chunked_pattern_past_the_dense_table_is_counted_as_the_walk_counts(monkeypatch) -> None:
    """Over GPT-2, a chunked pattern of 70,000 states (48 JSON strings) is past the dense lookup table of 2**24
    cells, so chunk_product's count searches its rows from end to end: refused at the lattice's own arcs
    less one, kept at them, the same chunked pattern as without the count (the oracle: the walk's groups).
    LATTICE_PER_CHUNKED_ARC is raised so that the count runs at both limits."""
    model = load_tokenizer(require_shared() / "gpt2" / "vocab.json")
    trie, chunker = SpellingTrie.from_model(model), chunker_for("gpt2")
    names = [f"p{i}" for i in range(48)]
    schema = {"type": "object", "properties": {name: {"type": "string"} for name in names}, "required": names,
              "additionalProperties": False}
    pattern = trim(schema_to_dfa(schema, alphabet_for(model)))
    chunked = pretokenized.chunked_pattern(pattern, model, chunker)
    assert len(chunked.transitions) * 257 > 1 << 24
    lattice = sum(len(tokens) * len(pairs) for tokens, pairs in agnostic.walk_groups(chunked, trie))
    arcs = sum(len(row) - (BOUNDARY in row) for row in chunked.transitions)
    monkeypatch.setattr(pretokenized, "LATTICE_PER_CHUNKED_ARC", 100.0)
    assert arcs * 100.0 > lattice and arcs <= lattice - 1  # the count runs, and decides
    with pytest.raises(ArcLimitExceeded):
        pretokenized.chunked_pattern(pattern, model, chunker, max_arcs=lattice - 1, trie=trie)
    assert as_value(pretokenized.chunked_pattern(pattern, model, chunker, max_arcs=lattice, trie=trie)) == as_value(chunked)


def test_chunk_product_refuses_a_walker_that_is_not_one() -> None:
    pattern = trim(compile_regex("ab", alphabet_for(random_byte_model(1))))
    with pytest.raises(TypeError, match="walker must be an initialised TrieWalker"):
        core.chunk_product(pattern.transitions, pattern.start, b"\0\0\1", b"", b"", b"\0\0", b"", 1, 0, b"\1", BOUNDARY, -1, 10,
                           object(), 2.0)


# ---------------------------------------------------------------- liveness
def liveness_inputs(model, pattern, preset="gpt2", parts=None):
    """What :class:`~bpefst.promotion.on_demand.OnDemandCanonical` hands the liveness solve (``parts``: the
    tokenizer's (A_BPE, trie) when the caller has them; the chunked pattern's own twin tests are above)."""
    automaton, trie = parts or (build_canonical(MergeForest.from_model(model)), SpellingTrie.from_model(model))
    chunking = native_chunked if parts else pure_chunked
    chunked = chunking(trim(pattern), model, chunker_for(preset))
    groups = agnostic.walk_groups(chunked, trie, keep=automaton.reachable)
    cut = [row.get(BOUNDARY) for row in chunked.transitions]
    return groups, len(chunked.transitions), chunked.finals, cut, automaton


def assert_same_liveness(groups, n, finals, cut, automaton) -> None:
    """The same good sets and the same pairs filed; the compiled ``filed`` (a ``Filed``, arrays) is the list
    of lists the pure solve makes, read as a sequence, and holds the groups' own token objects."""
    import pickle

    compiled = on_demand.solve_liveness(groups, n, finals, cut, automaton, engine="compiled")
    pure = on_demand.solve_liveness(groups, n, finals, cut, automaton, engine="pure")
    assert compiled[0] == pure[0]
    if any(type(pairs) is core.Pairs for _, pairs in groups):  # the compiled walks' pairs, read as arrays
        as_dicts = on_demand.solve_liveness([(tokens, dict(pairs)) for tokens, pairs in groups], n, finals, cut,
                                            automaton, engine="compiled")
        assert as_dicts[0] == compiled[0] and as_dicts[1] == compiled[1]
    filed = compiled[1]
    assert type(filed).__name__ == "Filed" and len(filed) == n
    assert filed == pure[1] and pure[1] == filed and not filed != pure[1] and list(filed) == pure[1]
    assert [filed[q] for q in range(n)] == pure[1] and filed[-1] == pure[1][-1]
    with pytest.raises(IndexError):
        filed[n]
    assert pickle.loads(pickle.dumps(filed)) == pure[1]
    # what a guide file stores: the compiled pass, the Python pass over it and over the pure solve's lists
    assert filed.packed() == guide_cache.packed_filed_in_python(filed) == guide_cache.packed_filed_in_python(pure[1])
    group_tokens = {id(tokens) for tokens, _ in groups}
    assert all(id(tokens) in group_tokens or type(tokens) is list for row in filed for tokens, _ in row)
    # equal bitsets come out as one object on both engines (memory: string states share their good set)
    assert len({id(g) for g in compiled[0]}) == len(set(compiled[0])) == len({id(g) for g in pure[0]})


def test_liveness_matches_the_pure_fixpoint_on_real_patterns(small_tokenizer) -> None:
    for name, pattern in real_patterns(small_tokenizer.model).items():
        inputs = liveness_inputs(small_tokenizer.model, pattern)
        assert any(inputs[0]) and any(g for g in on_demand.solve_liveness(*inputs, engine="compiled")[0]), name
        assert_same_liveness(*inputs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), data=st.data())
def test_liveness_matches_the_pure_fixpoint_on_random_patterns(seed, data) -> None:
    model = byte_model(seed % 3)
    assert_same_liveness(*liveness_inputs(model, data.draw(byte_patterns(model))))


def test_liveness_over_gpt2_matches_and_shares_equal_sets() -> None:
    model = load_tokenizer(require_shared() / "gpt2" / "vocab.json")
    open_schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 4}, "n": {"type": "integer"}}}
    parts = build_canonical(MergeForest.from_model(model)), SpellingTrie.from_model(model)
    for pattern in (compile_regex(EMAIL, alphabet_for(model)), schema_to_dfa(open_schema, alphabet_for(model))):
        inputs = liveness_inputs(model, pattern, parts=parts)
        assert_same_liveness(*inputs)


def test_liveness_over_cl100k_matches_where_string_bodies_repeat_checks() -> None:
    """Three string bodies over cl100k ask the same token checks of equal good sets, body after body: the
    compiled solve answers the repeats from its memo of checks (thousands of them here, failed and
    successful), and must file exactly what the pure solve files, which checks every time."""
    model = load_tokenizer(require_shared() / "tiktoken" / "cl100k_base.tiktoken.gz")
    strings = {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": "string", "maxLength": 3}}
    schema = {"type": "object", "properties": strings, "required": list(strings), "additionalProperties": False}
    parts = DEFAULT_PARTS.get(model)
    inputs = liveness_inputs(model, schema_to_dfa(schema, alphabet_for(model)), parts=(parts.automaton, parts.trie))
    assert_same_liveness(*inputs)


def test_filed_packs_a_token_object_filed_by_two_groups_as_one_group(small_tokenizer) -> None:
    """A guide numbers groups by token object (a walk's group is one object under many states): two groups
    given the same object are one stored group, in the compiled packing as in the Python pass; groups given
    as lists of ints are packed alike."""
    pattern = real_patterns(small_tokenizer.model)["e-mail"]
    groups, n, finals, cut, automaton = liveness_inputs(small_tokenizer.model, pattern)
    tokens, pairs = next((tokens, pairs) for tokens, pairs in groups if len(pairs) > 1)
    split = sorted(pairs)
    doubled = groups + [(tokens, {q: pairs[q] for q in split[: len(split) // 2]})]
    doubled = [(list(group) if k % 2 and group is not tokens else group, pairs) for k, (group, pairs) in enumerate(doubled)]
    as_lists = {id(group) for group, _ in doubled if type(group) is list}
    filed = on_demand.solve_liveness(doubled, n, finals, cut, automaton, engine="compiled")[1]
    rows, stored = filed.packed()
    assert any(id(group) in as_lists for row in filed for group, _ in row)  # groups given as lists were filed
    assert (rows, stored) == guide_cache.packed_filed_in_python(filed)
    assert len(stored) < sum(len(row) for row in filed)  # groups were shared, so numbering by object mattered
    named = {number for row in rows for number in unpack_ints(row)[0::2]}
    assert named == set(range(len(stored)))


@lru_cache(maxsize=None)
def byte_automaton(seed: int):
    return build_canonical(MergeForest.from_model(byte_model(seed)))


@st.composite
def hand_made_lattices(draw, automaton=None):
    """Groups drawn directly, not walked: tokens repeated within a group (the compiled solve adds a group's
    tokens to a set in one pass, counting each once), groups taken from many states to mostly one target
    (states that come to hold equal sets and grow alike), cuts and several finals."""
    automaton = automaton or byte_automaton(draw(st.integers(0, 2)))
    tokens = [t for t, ok in enumerate(automaton.reachable) if ok]
    n = draw(st.integers(2, 12))
    state = st.integers(0, n - 1)
    groups = []
    for _ in range(draw(st.integers(1, 14))):
        group_tokens = draw(st.lists(st.sampled_from(tokens), min_size=1, max_size=12))
        target = draw(state)
        sources = draw(st.lists(state, min_size=1, max_size=n, unique=True))
        groups.append((group_tokens, {q: draw(st.sampled_from([target, target, draw(state)])) for q in sources}))
    finals = draw(st.sets(state, min_size=1, max_size=3))
    cut = draw(st.lists(st.one_of(st.none(), state), min_size=n, max_size=n))
    return groups, n, finals, cut, automaton


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lattice=hand_made_lattices())
def test_liveness_matches_the_pure_fixpoint_on_hand_made_lattices(lattice) -> None:
    assert_same_liveness(*lattice)


@lru_cache(maxsize=None)
def gpt2_automaton():
    return DEFAULT_PARTS.get(load_tokenizer(require_shared() / "gpt2" / "vocab.json")).automaton


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_liveness_matches_the_pure_fixpoint_on_hand_made_lattices_over_gpt2(data) -> None:
    """Tokens anywhere in GPT-2's 786 words of bits: sets spread over a few words far apart, copied, given up and
    their bits reused for others (the compiled sets copy and clear only the words their tokens are in)."""
    assert_same_liveness(*data.draw(hand_made_lattices(gpt2_automaton())))


def test_liveness_solves_on_threads_as_one_after_another(small_tokenizer) -> None:
    """The compiled solve runs without the GIL: solves of several lattices over one shared checker (A_BPE's),
    started together on four threads, give each lattice's good sets and filed pairs as a solve alone does."""

    model = small_tokenizer.model
    parts = build_canonical(MergeForest.from_model(model)), SpellingTrie.from_model(model)
    patterns = list(real_patterns(model).values()) + [compile_regex(r"[a-z ]{1,12}[0-9]{0,3}", alphabet_for(model))]
    inputs = [liveness_inputs(model, pattern, parts=parts) for pattern in patterns]
    alone = [on_demand.solve_liveness(*each, engine="compiled") for each in inputs]
    jobs = [k % len(inputs) for k in range(12)]
    found = []
    start = threading.Barrier(4)

    def solve(thread: int) -> None:
        start.wait()
        for job in jobs[thread::4]:
            good, filed = on_demand.solve_liveness(*inputs[job], engine="compiled")
            found.append((job, list(good), list(filed)))

    threads = [threading.Thread(target=solve, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(found) == len(jobs)
    for job, good, filed in found:
        assert good == list(alone[job][0]) and filed == list(alone[job][1])


def test_promotions_on_threads_give_the_languages_of_one_after_another(small_tokenizer) -> None:
    """bpefst.promote from several threads at once over one tokenizer (its parts shared): every view each
    thread reads is the one a promotion alone gives (masks along a document, the written-out DFA)."""

    schema = {"type": "object", "properties": {"name": {"type": "string"}, "tags": {"type": "array",
              "items": {"type": "string", "maxLength": 6}}}, "required": ["name"]}
    requests = [{"json_schema": schema}, {"regex": EMAIL}, {"regex": r"[a-z]{2,9}( [a-z]{2,9}){0,3}"}]
    document = '{"name":"ab c","tags":["x1","yy"]}'

    def views(request):
        language = bpefst.promote(small_tokenizer, **request)
        guide, masks = language.guide(), []
        text = document if "json_schema" in request else ("a.b@c.org" if request.get("regex") == EMAIL else "ab cd")
        state = guide.start
        for token in small_tokenizer.encode(text):
            masks.append(guide.allowed_mask(state))
            state = guide.step(state, token)
        return masks, guide.is_accepting(state), language.dfa().transitions

    alone = [views(request) for request in requests]
    assert all(accepted for _, accepted, _ in alone)
    found, failures = [], []
    start = threading.Barrier(3)

    def promote(first: int) -> None:
        start.wait()
        try:
            for k in range(len(requests)):
                job = (first + k) % len(requests)
                found.append((job, views(requests[job])))
        except Exception as exc:  # noqa: BLE001 - reported below, in the test's thread
            failures.append(repr(exc))

    threads = [threading.Thread(target=promote, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures and len(found) == 3 * len(requests)
    for job, seen in found:
        assert seen == alone[job]


def liveness_arguments(**change):
    arguments = {"checker": build_canonical(MergeForest.from_model(byte_model(0))).pair_checker(), "n": 3,
                 "finals": [2], "cut": [None, None, None], "groups": [([0, 1], {0: 1, 1: 2})]}
    arguments.update(change)
    return list(arguments.values())


def test_a_well_formed_liveness_solve_runs() -> None:
    """A chain 0 -> 1 -> 2 (final): the arcs into the final state are good; those into 1 where 0 or 1 may
    follow them (a single byte is followed canonically by some single byte)."""
    groups = [([0, 1], {0: 1, 1: 2})]
    automaton = build_canonical(MergeForest.from_model(byte_model(0)))
    numbers, table, filed = core.solve_liveness(*liveness_arguments())
    good = on_demand.GoodSets(unpack_ints(numbers), table)
    assert (good, filed) == on_demand.solve_liveness(groups, 3, {2}, [None, None, None], automaton, engine="pure")
    assert good[1] == 0b11 and good[2] == 0 and good[0] != 0
    assert table[0] == b"" and len(numbers) == 12  # the empty set first, a uint32 per state


def test_a_liveness_solve_takes_a_group_that_repeats_its_tokens() -> None:
    """A group may name a token more times than the vocabulary has tokens (nothing forbids it): the tokens its
    checks settle are held in room for the longest group, not for the vocabulary, and the solve gives the pure
    one's good sets."""
    automaton = build_canonical(MergeForest.from_model(byte_model(0)))
    vocabulary = byte_model(0).max_id + 1
    groups = [(array("I", [0, 1] * (2 * vocabulary)), {0: 1}), (array("I", [0, 1]), {1: 2})]
    numbers, table, _ = core.solve_liveness(*liveness_arguments(groups=groups))
    good = on_demand.GoodSets(unpack_ints(numbers), table)
    pure, _ = on_demand.solve_liveness(groups, 3, {2}, [None, None, None], automaton, engine="pure")
    assert list(good) == list(pure) and good[1] == 0b11 and good[0] != 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 300), max_size=20), min_size=1, max_size=6), st.data())
def test_good_sets_read_as_the_list_of_ints_and_as_bytes(sets, data) -> None:
    """The compiled solve's good[q] (bytes per distinct set, whole words as the solve keeps them, and a
    number per state) read as ints, iterated, compared with lists, and as a packed mask's bytes."""
    ints = [sum(1 << t for t in set(tokens)) for tokens in sets]
    table = [value.to_bytes(8 * ((value.bit_length() + 63) // 64), "little") for value in ints]
    numbers = array("I", data.draw(st.lists(st.integers(0, len(ints) - 1), min_size=1, max_size=10)))
    good = on_demand.GoodSets(numbers, table)
    expected = [ints[k] for k in numbers]
    assert len(good) == len(expected) and good == expected and list(good) == expected and good != expected + [0]
    length = data.draw(st.integers(0, 48))
    for q, value in enumerate(expected):
        fits = value.bit_length() <= 8 * length
        assert on_demand.good_as_bytes(good, q, length) == (value.to_bytes(length, "little") if fits else None)
        assert on_demand.good_as_bytes(expected, q, length) == on_demand.good_as_bytes(good, q, length)


@pytest.mark.parametrize("change", [
    {"checker": object()}, {"n": -1}, {"finals": [3]}, {"finals": ["2"]}, {"cut": [None]}, {"cut": [None, 5, None]},
    {"groups": [([0, 1], {0: 7})]}, {"groups": [([1 << 40], {0: 1})]}, {"groups": [([-1], {0: 1})]},
    {"groups": [[0, 1]]}, {"groups": [([0], [(0, 1)])]}, {"groups": [("ab", {0: 1})]},
    {"groups": [(array("i", [0]), {0: 1})]}, {"groups": [(b"\0\0\0\0", {0: 1})]},
    {"groups": [(array("I", [1 << 20]), {0: 1})]}, {"groups": [(memoryview(array("I", [0, 5, 1]))[::2], {0: 1})]},
])
def test_a_liveness_solve_refuses_arguments_that_lie(change) -> None:
    with pytest.raises((TypeError, ValueError, IndexError, OverflowError)):
        core.solve_liveness(*liveness_arguments(**change))


def test_real_patterns_over_a_small_trained_tokenizer(small_tokenizer) -> None:
    model = small_tokenizer.model
    assert model.pattern == PRESETS["gpt2"]
    assert_same_promotion_loops(model, real_patterns(model))


def test_real_patterns_over_gpt2() -> None:
    model = load_tokenizer(require_shared() / "gpt2" / "vocab.json")
    assert_same_promotion_loops(model, real_patterns(model))


PROMOTION_DIGEST = """
import hashlib, json, sys
import bpefst
from bpefst import native
tok = bpefst.train(sys.argv[1], 400)
digest = hashlib.sha256()
for kind, value in (("regex", sys.argv[2]), ("json_schema", json.loads(sys.argv[3]))):
    lang = bpefst.promote(tok, **{kind: value})
    dfa = lang.dfa()
    digest.update(repr((dfa.start, sorted(dfa.finals), [sorted(row.items()) for row in dfa.transitions])).encode())
    guide = lang.guide()
    digest.update(repr(sorted(guide.allowed(guide.start))).encode())
print(native.engine(), digest.hexdigest())
"""


def test_promotion_is_the_same_on_the_pure_path() -> None:
    """The written-out DFA and the first row of the guide, from a process on each engine."""
    outputs = {}
    for pure in ("0", "1"):
        env = dict(os.environ, BPEFST_PURE_PYTHON=pure, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
        done = subprocess.run([sys.executable, "-c", PROMOTION_DIGEST, str(ROOT / "fixtures" / "corpus.txt"), EMAIL,
                               json.dumps(SCHEMA)], capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
        assert done.returncode == 0, done.stderr
        outputs[pure] = done.stdout.split()
    assert outputs["0"][0] == "compiled" and outputs["1"][0] == "pure"
    assert outputs["0"][1] == outputs["1"][1]


# ---------------------------------------------------------------- hostile arguments
def packed(*values) -> bytes:
    return array("i", values).tobytes()


GOOD_WALKER = dict(node_start=packed(0, 2, 2, 2), edge_symbol=packed(0, 1), edge_token=packed(5, -4),
                   edge_child=packed(0, 0), end_start=packed(0, 0, 1, 3), end_token=packed(5, 6, 7),
                   symbol_index=packed(-1, 0, 1), symbols=2)


def test_a_well_formed_walker_walks() -> None:
    walker = core.TrieWalker(**GOOD_WALKER)
    assert [list(row.items()) for row in walker.walk([{1: 0, 2: 0}], -1, False)] == [[(5, 0), (6, 0), (7, 0)]]


def test_a_walk_carrying_transforms_ignores_subtrees_no_edge_reaches() -> None:
    """Nodes no edge reaches (they hold tokens ending elsewhere) are laid out after the root's subtree in their
    own order, where a subtree is not contiguous: a large one among them (41 tokens under node 3, whose laid-out
    range also holds the unreached node 4 and its token) is neither indexed for bulk filing nor walked."""
    edges = [(0, 0, 0), (1, -1, 3)] + [(k, 100 + k, 0) for k in range(40)] + [(40, -1, 5), (0, 300, 0), (0, 200, 0)]
    walker = core.TrieWalker(node_start=packed(0, 1, 2, 2, 43, 44, 45), edge_symbol=packed(*(e[0] for e in edges)),
                             edge_token=packed(*(e[1] for e in edges)), edge_child=packed(*(e[2] for e in edges)),
                             end_start=packed(0, 0, 0, 0, 0, 0, 0), end_token=packed(), symbol_index=packed(*range(64)),
                             symbols=64)
    assert as_lists(walker.walk_transforms([{0: 0, 1: 0}], -1)) == [([0], {0: 0})]
    assert as_lists(walker.walk_transforms([{k: 0 for k in range(64)}], -1)) == [([0], {0: 0})]


def test_a_walk_carrying_transforms_survives_an_end_list_filed_from_many_edges() -> None:
    """Tables that file one end list of 65,536 tokens from 65,536 edges (2**32 tokens below the root, which a
    32-bit count wraps to the 40 of the other edges): the subtree index is not built, and the walk stops at
    its arc limit, as it does without the index."""
    n = 1 << 16
    edges = [(s, -3, 0) for s in range(n)] + [(n + k, k, 0) for k in range(40)]
    walker = core.TrieWalker(node_start=packed(0, len(edges), len(edges)), edge_symbol=packed(*(e[0] for e in edges)),
                             edge_token=packed(*(e[1] for e in edges)), edge_child=packed(*(e[2] for e in edges)),
                             end_start=packed(0, 0, n), end_token=packed(*range(100, 100 + n)),
                             symbol_index=packed(*range(n + 40)), symbols=n + 40)
    assert walker.walk_transforms([{s: 0 for s in range(n + 40)}], 1_000) is None


@pytest.mark.parametrize("change", [
    dict(node_start=packed(0, 2, 2)), dict(node_start=packed(0, 2, 1, 2)), dict(node_start=packed(0, 2, 2, 3)),
    dict(node_start=packed(0)), dict(node_start=b"\x00\x00\x00"), dict(edge_symbol=packed(0, 2)),
    dict(edge_symbol=packed(1, 1)), dict(edge_symbol=packed(0, -1)), dict(edge_token=packed(5)),
    dict(edge_token=packed(5, -9)), dict(edge_token=packed(1 << 27, -1)), dict(edge_child=packed(0, 5)),
    dict(edge_child=packed(0, -1)), dict(node_start=packed(0, 1, 2, 2), edge_child=packed(1, 1)),
    dict(edge_child=packed(1, 1)), dict(node_start=packed(0, 1, 2, 2), edge_child=packed(2, 1)),
    dict(end_start=packed(0, 0, 1)), dict(end_start=packed(0, 2, 1, 3)), dict(end_token=packed(5, 6, -7)),
    dict(symbol_index=packed(-1, 0, 2)), dict(symbol_index=packed(-2)), dict(symbols=-1), dict(symbols="2"),
    dict(end_token="not bytes"),
])
def test_a_walker_refuses_tables_that_lie(change) -> None:
    with pytest.raises((ValueError, TypeError)):
        core.TrieWalker(**{**GOOD_WALKER, **change})


@pytest.mark.parametrize("transitions", [
    None, ({1: 0},), [{1: 0}, "row"], [{1: 1}], [{1: -1}], [{1: "0"}], [{1: 1 << 70}], [{2: 0.5}],
])
def test_a_walk_refuses_rows_that_lie(transitions) -> None:
    with pytest.raises((ValueError, TypeError)):
        core.TrieWalker(**GOOD_WALKER).walk(transitions, -1, False)


def test_a_walk_ignores_keys_no_spelling_reads() -> None:
    walker = core.TrieWalker(**GOOD_WALKER)
    assert walker.walk([{"x": 7, 1 << 80: 9, -4: 0, 2.5: 0}], -1, True) == []
    with pytest.raises(TypeError):
        walker.walk([{}], "many", False)
    with pytest.raises(RuntimeError):
        core.TrieWalker.__new__(core.TrieWalker).walk([{}], -1, False)
    with pytest.raises(RuntimeError):
        walker.__init__(**GOOD_WALKER)
    with pytest.raises(ValueError):
        walker.walk([{1: 0}], -1, True, bytes(7))  # a flag short of the largest token
    with pytest.raises(TypeError):
        walker.walk([{1: 0}], -1, True, [1] * 8)
    assert as_lists(walker.walk([{1: 0, 2: 0}], -1, True, bytes([0] * 6 + [1, 0]))) == [([6], {0: 0})]


def chunk_arguments(**change):
    """A two-state pattern over bytes 'a' and a 2-byte character, the gpt2 chunker and its decoder."""
    preset = "gpt2"
    decoder, chunks, inside = native.chunker_tables(pretokenized.utf8_decoder(preset), chunker_for(preset).dfa.transitions,
                                                    chunker_for(preset).boundary, pretokenized.mid_character_chunks(preset))
    chunker = chunker_for(preset)
    arguments = dict(transitions=[{10: 1, 11: 1, 12: 0}, {10: 0}], start=0, finals=bytes([0, 1]),
                     symbol_map=packed(*[-1] * 10, ord("a"), 0xC3, 0xA9), decoder=decoder, chunks=chunks,
                     inside=inside, atoms=chunker.boundary, chunk_start=chunker.dfa.start,
                     chunk_finals=bytes(c in chunker.dfa.finals for c in range(len(chunker.dfa.transitions))),
                     boundary=BOUNDARY, max_states=-1)
    arguments.update(change)
    return list(arguments.values())


def test_a_well_formed_chunk_product_runs() -> None:
    rows, start, finals = core.chunk_product(*chunk_arguments())
    assert rows and 0 <= start < len(rows) and finals
    assert core.chunk_product(*chunk_arguments(max_states=1)) is None


@pytest.mark.parametrize("change", [
    dict(transitions=[{10: 2}, {10: 0}]), dict(transitions=[{10: None}, {}]), dict(transitions="rows"),
    dict(transitions=[]), dict(start=2), dict(start=-1), dict(finals=bytes(3)), dict(symbol_map=packed(300)),
    dict(symbol_map=packed(-2)), dict(symbol_map=b"\x01"), dict(decoder=packed(7) * 255),
    dict(decoder=packed(10_000) * 256), dict(decoder=packed(-100) * 256), dict(chunks=packed(0) * 7),
    dict(chunks=packed(99) * 15), dict(inside=b""), dict(inside=packed(0) * 7), dict(inside=packed(99) * (355 * 22)),
    dict(inside=packed(-2) * (355 * 22)), dict(atoms=0), dict(atoms=-4), dict(chunk_start=1 << 20),
    dict(chunk_finals=b"\x01"), dict(max_states="many"),
])
def test_a_chunk_product_refuses_arguments_that_lie(change) -> None:
    with pytest.raises((ValueError, TypeError)):
        core.chunk_product(*chunk_arguments(**change))


def test_a_chunk_product_checks_every_table_it_has_not_checked() -> None:
    """chunk_product keeps the last bytes tables it checked (and its decoder's heights) by identity: the same
    call again gives the same product, and a table that is another object, of the same size and right after a
    good call, is checked again (refused when it lies) or, mutable, read from a copy."""
    arguments = chunk_arguments()
    first = core.chunk_product(*arguments)
    again = core.chunk_product(*arguments)
    product_of = lambda found: ([dict(row) for row in found[0]], found[1], sorted(found[2]))  # noqa: E731
    assert product_of(again) == product_of(first)
    decoder = arguments[4]
    lying = bytearray(decoder)
    lying[4 * 0xC3:4 * 0xC3 + 4] = packed(10_000)  # the first byte of the 2-byte character leads past the decoder
    for bad in (bytes(lying), lying):
        with pytest.raises(ValueError):
            core.chunk_product(*arguments[:4], bad, *arguments[5:])
    assert product_of(core.chunk_product(*arguments[:4], bytearray(decoder), *arguments[5:])) == product_of(first)
    assert product_of(core.chunk_product(*arguments)) == product_of(first)


def test_a_transform_walk_refuses_a_trie_that_spells_a_token_twice() -> None:
    """Tables the Python side never packs (trie_walker_tables refuses them) but a damaged parts file could
    hold: token 5 on an edge and again among a node's ends.  An exception, never a token read twice."""
    walker = core.TrieWalker(**{**GOOD_WALKER, "end_token": packed(5, 6, 5)})
    with pytest.raises(ValueError, match="twice"):
        walker.walk_transforms([{1: 0, 2: 0}], -1)
    assert as_lists(walker.walk_transforms([{1: 0, 2: 0}], -1, bytes([1, 1, 1, 1, 1, 0, 1, 1]))) == [([6], {0: 0})]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's heap and /proc/self/statm")
def test_release_freed_gives_the_heap_back_after_a_large_build() -> None:
    """What a dropped large language freed stays in the C heap until release_freed(): 200 MB of 2 kB blocks
    (as rows and groups are: heap, not mapped) freed below live blocks are not resident after it; with no
    large build since the last release it leaves the heap alone (its pages stay for the next build)."""
    def resident_mb() -> int:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20

    core.release_freed()
    blocks = [bytes(2048) + bytes([i & 255]) for i in range(100_000)]
    pins = [bytes(4096) for _ in range(64)]  # above them in the heap: their space cannot go back by shrinking its top
    held = resident_mb()
    del blocks
    assert core.release_freed() is False  # no large build: left alone
    core.note_large_build()
    assert core.release_freed() is True
    assert resident_mb() < held - 100  # given back here (or, if the heap's top moved, by free() already)
    assert core.release_freed() is False  # nothing large built since
    del pins
