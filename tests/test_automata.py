"""Tests for bpefst.automata against independent oracles.

Oracles: brute-force enumeration of every string up to a length (with our own
walkers, not the library's ``accepts``), a naive Moore partition refinement for
minimal state counts, and Python's ``re`` module for the Thompson combinators.
"""

from __future__ import annotations

import itertools
import random
import re
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpefst.automata import (
    DFA,
    NFA,
    DFABuilder,
    NFABuilder,
    StateLimitExceeded,
    accessible,
    canonical,
    coaccessible,
    complement,
    complete,
    count_by_length,
    count_strings,
    counterexample,
    determinize,
    difference,
    enumerate_strings,
    equivalent,
    explore,
    intersect,
    is_finite,
    is_trim,
    map_symbols,
    minimize,
    random_accepted,
    renumber,
    reverse,
    shortest_accepted,
    symmetric_difference,
    thompson,
    trim,
    union,
)
from bpefst.errors import BpefstError

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALPHABETS = [(0, 1), (0, 1, 2), (3, 9)]


# ------------------------------------------------------------------ oracles
def all_strings(alphabet, max_len):
    for length in range(max_len + 1):
        yield from itertools.product(alphabet, repeat=length)


def shortlex(strings):
    return sorted(strings, key=lambda s: (len(s), s))


def dfa_language(d: DFA, alphabet, max_len):
    """Accepted strings up to max_len, by walking the raw transition dicts."""
    out = set()
    for s in all_strings(alphabet, max_len):
        q = d.start
        for a in s:
            q = d.transitions[q].get(a)
            if q is None:
                break
        if q is not None and q in d.finals:
            out.add(s)
    return out


def nfa_language(n: NFA, alphabet, max_len):
    """Accepted strings up to max_len, by our own epsilon-closure simulation."""

    def close(states):
        states = set(states)
        changed = True
        while changed:
            changed = False
            for q in list(states):
                for r in n.eps[q]:
                    if r not in states:
                        states.add(r)
                        changed = True
        return states

    out = set()
    for s in all_strings(alphabet, max_len):
        cur = close({n.start})
        for a in s:
            cur = close({r for q in cur for (b, r) in n.arcs[q] if b == a})
        if cur & set(n.finals):
            out.add(s)
    return out


def moore_minimal_size(d: DFA, alphabet) -> int:
    """States of the minimal trim DFA, by naive Moore refinement on the completed reachable DFA."""
    dead = -1
    reach, todo = {d.start}, [d.start]
    while todo:
        q = todo.pop()
        for a in alphabet:
            r = d.transitions[q].get(a, dead) if q != dead else dead
            if r not in reach:
                reach.add(r)
                todo.append(r)
    reach.add(dead)

    def step(q, a):
        return dead if q == dead else d.transitions[q].get(a, dead)

    cls = {q: (q in d.finals) for q in reach}
    while True:
        sig = {q: (cls[q],) + tuple(cls[step(q, a)] for a in alphabet) for q in reach}
        ids = {s: i for i, s in enumerate(sorted(set(sig.values()), key=repr))}
        new = {q: ids[sig[q]] for q in reach}
        if len(set(new.values())) == len(set(cls.values())):
            break
        cls = new
    live_classes = {c for q, c in cls.items() if c != cls[dead]}
    return max(1, len(live_classes))


# --------------------------------------------------------------- strategies
@st.composite
def dfas(draw, max_states=6, alphabet=None):
    alphabet = alphabet or draw(st.sampled_from(ALPHABETS))
    n = draw(st.integers(1, max_states))
    rows = []
    for _ in range(n):
        row = {}
        for a in alphabet:
            t = draw(st.integers(-1, n - 1))
            if t >= 0:
                row[a] = t
        rows.append(row)
    start = draw(st.integers(0, n - 1))
    finals = draw(st.sets(st.integers(0, n - 1)))
    return DFA(rows, start, finals)


@st.composite
def nfas(draw, max_states=5, alphabet=(0, 1)):
    n = draw(st.integers(1, max_states))
    state = st.integers(0, n - 1)
    arcs = [[] for _ in range(n)]
    eps = [[] for _ in range(n)]
    for q, sym, r in draw(st.lists(st.tuples(state, st.sampled_from(alphabet + (None,)), state), max_size=12)):
        (eps[q].append(r) if sym is None else arcs[q].append((sym, r)))
    return NFA(arcs, eps, draw(state), draw(st.sets(state)))


def max_len_for(alphabet):
    return {2: 7, 3: 5}[len(alphabet)]


# ------------------------------------------------------------ DFA basics
def test_dfa_basics_and_builder():
    b = DFABuilder()
    s0, s1 = b.add_state(), b.add_state(final=True)
    b.add_arc(s0, 5, s1)
    b.add_arc(s1, 5, s1)
    b.add_arc(s1, 5, s1)  # same arc twice is fine
    with pytest.raises(ValueError):
        b.add_arc(s1, 5, s0)  # conflicting
    with pytest.raises(ValueError):
        b.add_arc(s1, 6, 7)  # no such state
    d = b.build()
    assert (d.num_states, d.num_arcs, d.alphabet()) == (2, 2, frozenset({5}))
    assert d.accepts([5, 5, 5]) and not d.accepts([]) and not d.accepts([5, 6])
    assert d.step(0, 5) == 1 and d.step(0, 6) is None
    assert not d.is_empty() and DFA.empty_language().is_empty()
    assert DFA([{0: 1}, {}], 0, {1}).is_empty() is False
    assert DFA([{0: 0}, {}], 0, {1}).is_empty()
    assert sorted(d.arcs()) == [(0, 5, 1), (1, 5, 1)]
    assert d == DFA.from_arcs(2, 0, [1], [(0, 5, 1), (1, 5, 1)])
    assert d != DFA.from_arcs(2, 0, [1], [(0, 5, 1)])
    assert DFA.universal([1, 2]).accepts([2, 1, 1]) and DFA.epsilon().accepts([])
    trie = DFA.from_strings([[1, 2], [1], [3]])
    assert dfa_language(trie, (1, 2, 3), 3) == {(1, 2), (1,), (3,)}
    for bad in (lambda: DFA([], 0, ()), lambda: DFA([{}], 1, ()), lambda: DFA([{0: 2}], 0, ()),
                lambda: DFA([{}], 0, {3}), lambda: DFA([{-1: 0}], 0, ())):
        with pytest.raises(ValueError):
            bad()


def test_nfa_builder_and_accepts():
    b = NFABuilder()
    s, m, f = b.add_state(), b.add_state(), b.add_state(final=True)
    b.add_arc(s, 1, m)
    b.add_arc(s, 1, f)
    b.add_epsilon(m, s)
    n = b.build()
    assert n.accepts([1]) and n.accepts([1, 1, 1]) and not n.accepts([]) and not n.accepts([2])
    assert n.num_states == 3 and n.num_arcs == 3 and n.alphabet() == {1}
    assert n.epsilon_closure([m]) == {m, s}
    with pytest.raises(ValueError):
        NFA([[(0, 5)]], None, 0, ())


# ------------------------------------------------------- determinize / trim
@FAST
@given(nfas())
def test_determinize_preserves_language(n):
    d = determinize(n)
    assert dfa_language(d, (0, 1), 7) == nfa_language(n, (0, 1), 7)
    assert is_trim(d)
    assert all(isinstance(t, int) for row in d.transitions for t in row.values())


@FAST
@given(dfas())
def test_trim_preserves_language_and_is_trim(d):
    alphabet = tuple(sorted(d.alphabet())) or (0,)
    t = trim(d)
    assert is_trim(t)
    assert t.num_states <= d.num_states
    assert dfa_language(t, alphabet, 5) == dfa_language(d, alphabet, 5)
    acc, co = accessible(d), coaccessible(d)
    for q in range(d.num_states):  # brute-force definitions
        reachable = any(d.run(s) == q for s in all_strings(alphabet, d.num_states))
        assert bool(acc[q]) == reachable
        live = any((d.run(s, q) in d.finals) for s in all_strings(alphabet, d.num_states))
        assert bool(co[q]) == live


def test_coaccessible_fallback_on_long_backward_chain():
    # q -> q-1, final 0: each reverse-order sweep settles only one state, forcing the exact fallback.
    n = 50
    d = DFA([{}] + [{0: q - 1} for q in range(1, n)] + [{0: n}], n - 1, {0})
    flags = coaccessible(d)
    assert list(flags) == [1] * n + [0]
    assert trim(d).num_states == n and minimize(d).num_states == n


# ---------------------------------------------------------------- minimize
@FAST
@given(dfas())
def test_minimize_language_and_minimality(d):
    alphabet = tuple(sorted(d.alphabet())) or (0,)
    m = minimize(d)
    L = max_len_for(alphabet) if len(alphabet) > 1 else 6
    assert dfa_language(m, alphabet, L) == dfa_language(d, alphabet, L)
    assert m.num_states == moore_minimal_size(d, alphabet)
    assert is_trim(m)
    assert minimize(m) == m  # idempotent and canonical


@FAST
@given(dfas(), st.randoms(use_true_random=False))
def test_minimize_is_canonical(d, rnd):
    # Blow d up into an equivalent DFA with duplicated, shuffled states: same minimal value.
    n = d.num_states
    rows = []
    for copy in range(2):
        for row in d.transitions:
            rows.append({a: t + n * rnd.randrange(2) for a, t in row.items()})
    big = DFA(rows, d.start + n, set(d.finals) | {f + n for f in d.finals})
    order = list(range(2 * n))
    rnd.shuffle(order)
    shuffled = renumber(big, order)
    assert minimize(shuffled) == minimize(d)
    assert minimize(determinize(reverse(d))) == minimize(determinize(reverse(shuffled)))


def test_minimize_examples():
    # (ab)* written with redundant states
    d = DFA([{0: 1}, {1: 2}, {0: 3}, {1: 0}], 0, {0, 2})
    m = minimize(d)
    assert m == DFA([{0: 1}, {1: 0}], 0, {0})
    assert minimize(DFA([{0: 0}], 0, ())) == DFA.empty_language()
    assert canonical(DFA([{}, {5: 0, 2: 0}], 1, {0})) == DFA([{2: 1, 5: 1}, {}], 0, {1})


# --------------------------------------------------------- boolean algebra
@FAST
@given(st.sampled_from(ALPHABETS).flatmap(lambda al: st.tuples(st.just(al), dfas(alphabet=al), dfas(alphabet=al))))
def test_products_are_set_operations(args):
    alphabet, a, b = args
    L = max_len_for(alphabet)
    la, lb = dfa_language(a, alphabet, L), dfa_language(b, alphabet, L)
    assert dfa_language(intersect(a, b), alphabet, L) == la & lb
    assert dfa_language(union(a, b), alphabet, L) == la | lb
    assert dfa_language(difference(a, b), alphabet, L) == la - lb
    assert dfa_language(symmetric_difference(a, b), alphabet, L) == la ^ lb
    universe = set(all_strings(alphabet, L))
    assert dfa_language(complement(a, alphabet), alphabet, L) == universe - la
    for result in (intersect(a, b), union(a, b), difference(a, b), complement(a, alphabet)):
        assert is_trim(result)


def test_complement_drops_foreign_symbols_and_complete():
    d = DFA([{0: 1, 7: 1}, {}], 0, {1})
    c = complement(d, [0, 1])
    assert 7 not in c.alphabet() and c.accepts([]) and not c.accepts([0]) and c.accepts([1, 0])
    full = complete(d, [0, 1])
    assert all(set(row) >= {0, 1} for row in full.transitions) and full.num_states == 3
    assert complete(DFA.universal([0, 1]), [0, 1]).num_states == 1


def test_intersect_state_limit():
    a = DFA([{0: (q + 1) % 50} for q in range(50)], 0, {0})
    b = DFA([{0: (q + 1) % 51} for q in range(51)], 0, {0})
    assert intersect(a, b).num_states == 50 * 51
    with pytest.raises(StateLimitExceeded) as info:
        intersect(a, b, max_states=100)
    assert isinstance(info.value, BpefstError) and "100" in str(info.value)


# ------------------------------------------------------------- equivalence
SMALL2 = dfas(max_states=4, alphabet=(0, 1))


@settings(max_examples=150, deadline=None)
@given(SMALL2, SMALL2, st.booleans())
def test_equivalent_agrees_with_brute_force(a, b, make_equal):
    if make_equal:  # an equivalent automaton built differently
        b = union(minimize(a), intersect(a, a))
    # For DFAs with <= 4 states (+ dead), a difference shows up at length <= 9.
    la, lb = dfa_language(a, (0, 1), 9), dfa_language(b, (0, 1), 9)
    result = equivalent(a, b)
    assert bool(result) == (la == lb)
    if la == lb:
        assert result.counterexample is None and counterexample(a, b) is None
    else:
        assert result.counterexample == shortlex(la ^ lb)[0]
        assert (result.counterexample in la) == (result.accepted_by == "a")
        assert (result.counterexample in lb) == (result.accepted_by == "b")
    assert bool(equivalent(a, b)) == (minimize(a) == minimize(b))


# ---------------------------------------------------------------- language
@FAST
@given(dfas())
def test_enumerate_and_count(d):
    alphabet = tuple(sorted(d.alphabet())) or (0,)
    L = max_len_for(alphabet) if len(alphabet) > 1 else 6
    expected = shortlex(dfa_language(d, alphabet, L))
    assert list(enumerate_strings(d, L)) == expected
    assert list(enumerate_strings(d, L, min_len=2)) == [s for s in expected if len(s) >= 2]
    assert count_strings(d, L) == len(expected)
    assert count_by_length(d, L) == [sum(1 for s in expected if len(s) == k) for k in range(L + 1)]
    shortest = shortest_accepted(d)
    assert shortest == (expected[0] if expected else shortest)
    if shortest is None:
        assert d.is_empty() and not expected
    rng = random.Random(1)
    for _ in range(5):
        s = random_accepted(d, rng, L)
        assert (s is None) == (not expected)
        assert s is None or s in expected


def test_random_accepted_is_uniform_enough():
    d = minimize(determinize(thompson.repeat(thompson.symbols([0, 1, 2]), 0, 2)))  # 13 strings
    rng = random.Random(7)
    seen = {}
    for _ in range(2600):
        s = random_accepted(d, rng, 2)
        seen[s] = seen.get(s, 0) + 1
    assert len(seen) == 13
    assert min(seen.values()) > 100  # expected 200 each


def test_count_is_exact_for_huge_languages():
    assert count_strings(DFA.universal(range(256)), 20) == sum(256**k for k in range(21))


def test_is_finite():
    assert is_finite(DFA.from_strings([[1, 2], [3]]))
    assert not is_finite(DFA.universal([0]))
    assert not is_finite(DFA([{0: 0, 1: 1}, {}], 0, {1}))  # 0* 1
    assert is_finite(DFA([{1: 1}, {0: 1}], 0, {0}))  # the loop is on a dead-end state


# --------------------------------------------------------- relabel / reverse
def test_map_symbols_and_reverse():
    d = DFA.from_strings([[1, 2], [3]])
    mapped = map_symbols(d, {1: 10, 2: 20, 3: 30})
    assert mapped.accepts([10, 20]) and mapped.accepts([30]) and not mapped.accepts([1, 2])
    assert map_symbols(d, lambda a: None if a == 3 else a).accepts([1, 2])
    assert not map_symbols(d, lambda a: None if a == 3 else a).accepts([3])
    with pytest.raises(ValueError):
        map_symbols(DFA([{1: 1, 2: 0}, {}], 0, {1}), {1: 5, 2: 5})
    rev = NFA.from_dfa(DFA([{1: 1, 2: 0}, {}], 0, {1})).map_symbols({1: 5, 2: 5})
    assert determinize(rev).accepts([5, 5, 5])


@FAST
@given(dfas(alphabet=(0, 1)))
def test_reverse_language(d):
    lang = dfa_language(d, (0, 1), 6)
    assert nfa_language(reverse(d), (0, 1), 6) == {s[::-1] for s in lang}


# ---------------------------------------------------------------- explore
@FAST
@given(SMALL2, SMALL2)
def test_explore_product_matches_intersect(a, b):
    def successors(pair):
        p, q = pair
        return [(s, (r, b.transitions[q][s])) for s, r in sorted(a.transitions[p].items()) if s in b.transitions[q]]

    d, keys = explore((a.start, b.start), successors, lambda pr: pr[0] in a.finals and pr[1] in b.finals)
    assert keys[0] == (a.start, b.start) and len(keys) == d.num_states == len(set(keys))
    assert equivalent(d, intersect(a, b))


def test_explore_rejects_nondeterminism_and_limits():
    with pytest.raises(ValueError):
        explore(0, lambda k: [(1, 0), (1, 1)], lambda k: True)
    with pytest.raises(StateLimitExceeded):
        explore(0, lambda k: [(0, k + 1)], lambda k: False, max_states=1000)


# -------------------------------------------------- Thompson vs Python re
CHARS = "abc"


def regexes():
    leaf = st.one_of(
        st.sampled_from(CHARS).map(lambda c: (c, thompson.literal([CHARS.index(c)]))),
        st.text(CHARS, min_size=0, max_size=3).map(
            lambda s: (f"(?:{s})", thompson.literal([CHARS.index(c) for c in s]))),
        st.sets(st.sampled_from(CHARS), min_size=1).map(
            lambda cs: ("[" + "".join(sorted(cs)) + "]", thompson.symbols(CHARS.index(c) for c in cs))),
    )

    def extend(inner):
        pair = st.tuples(inner, inner)
        reps = st.tuples(st.integers(0, 2), st.integers(0, 2))
        return st.one_of(
            pair.map(lambda p: (f"(?:{p[0][0]}{p[1][0]})", thompson.concat(p[0][1], p[1][1]))),
            pair.map(lambda p: (f"(?:{p[0][0]}|{p[1][0]})", thompson.union(p[0][1], p[1][1]))),
            inner.map(lambda x: (f"(?:{x[0]})*", thompson.star(x[1]))),
            inner.map(lambda x: (f"(?:{x[0]})+", thompson.plus(x[1]))),
            inner.map(lambda x: (f"(?:{x[0]})?", x[1].optional())),
            st.tuples(inner, reps).map(lambda x: (
                f"(?:{x[0][0]}){{{min(x[1])},{max(x[1])}}}", thompson.repeat(x[0][1], min(x[1]), max(x[1])))),
            st.tuples(inner, st.integers(0, 2)).map(
                lambda x: (f"(?:{x[0][0]}){{{x[1]},}}", x[0][1].repeat(x[1]))),
        )

    return st.recursive(leaf, extend, max_leaves=6)


@settings(max_examples=120, deadline=None)
@given(regexes())
def test_thompson_matches_python_re(case):
    pattern, nfa = case
    compiled = re.compile(pattern)
    dfa = minimize(determinize(nfa))
    for s in all_strings((0, 1, 2), 5):
        text = "".join(CHARS[i] for i in s)
        assert dfa.accepts(s) == bool(compiled.fullmatch(text)), (pattern, text)
        assert nfa.accepts(s) == dfa.accepts(s)


def test_thompson_edge_cases():
    assert determinize(thompson.empty()).is_empty()
    assert dfa_language(determinize(thompson.epsilon()), (0,), 3) == {()}
    assert determinize(thompson.union()).is_empty()
    assert dfa_language(determinize(thompson.concat()), (0,), 3) == {()}
    assert determinize(thompson.symbols([])).is_empty()
    big = thompson.repeat(thompson.literal([0]), 3, 2000)
    assert big.num_states < 10000  # linear, not quadratic
    m = minimize(determinize(big))
    assert m.num_states == 2001 and m.accepts([0] * 2000) and not m.accepts([0] * 2001)
    with pytest.raises(ValueError):
        thompson.repeat(thompson.literal([0]), 3, 2)
    with pytest.raises(ValueError):
        thompson.literal([-1])


def test_determinize_state_limit():
    # (0|1)* 0 (0|1){12}: the classic exponential blow-up (2^13 states).
    any_symbol = thompson.symbols([0, 1])
    nfa = thompson.concat(thompson.star(any_symbol), thompson.literal([0]), thompson.repeat(any_symbol, 12, 12))
    with pytest.raises(StateLimitExceeded):
        determinize(nfa, max_states=1000)
    assert minimize(determinize(nfa)).num_states == 2**13


# ----------------------------------------------------------------- scale
def random_dfa(n, k, seed, final_ratio=0.3):
    rng = random.Random(seed)
    rows = [{a: rng.randrange(n) for a in range(k)} for _ in range(n)]
    return DFA(rows, 0, {q for q in range(n) if rng.random() < final_ratio}, check=False)


def test_minimize_scales_to_50k_states_500k_arcs():
    base = random_dfa(25_000, 10, seed=3)
    n = base.num_states
    # Two copies of base, each arc going to either copy at random: 50k states, 500k arcs,
    # every state equivalent to its twin -- Hopcroft must merge exactly the twins.
    rng = random.Random(4)
    rows = [{a: t + n * rng.randrange(2) for a, t in row.items()} for _ in range(2) for row in base.transitions]
    doubled = DFA(rows, base.start, set(base.finals) | {f + n for f in base.finals}, check=False)
    assert doubled.num_arcs == 500_000
    started = time.perf_counter()
    m = minimize(doubled)
    elapsed = time.perf_counter() - started
    print(f"minimize 50k states / 500k arcs: {elapsed:.2f}s")
    assert m == minimize(base)
    assert m.num_states <= n
    chain = DFA([{0: q + 1, 1: 0} for q in range(49_999)] + [{}], 0, {49_999}, check=False)
    assert minimize(chain).num_states == 50_000  # Moore would need 50k rounds here


@FAST
@given(dfas(max_states=5, alphabet=(0, 1)))
def test_is_finite_matches_pumping_lemma(d):
    # L is infinite iff it has a string whose length is in [n, 2n) (n = number of states).
    n = d.num_states
    long_ones = [s for s in dfa_language(d, (0, 1), 2 * n - 1) if len(s) >= n]
    assert is_finite(d) == (not long_ones)
