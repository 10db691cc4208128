"""The fast paths of promotion and minimization agree with their plain counterparts.

* ``minimize`` takes a linear-time route (Revuz) for acyclic inputs and Hopcroft
  otherwise: both must give the same canonical DFA;
* the canonical language written out (shared rows per lattice state, resolved
  arcs) must give the same minimal DFA as the textbook product with A_BPE;
* the one-pass lattice walk (transforms over the chain-compressed trie) must give
  ``token_arcs`` and the brute-force arcs for every state;
* banned sets restricted to a lattice's tokens (implicit A_BPE) must equal pair checks.
"""

from __future__ import annotations

import random
from contextlib import contextmanager

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.automata import DFA, minimize, trim
from bpefst.automata.minimization import _coarsest_stable_partition, canonical
from bpefst.bpe import MergeForest, build_canonical
from bpefst.promotion import SpellingTrie, TokenLanguage, promote_agnostic
from bpefst.promotion import subtrees
from bpefst.promotion.agnostic import _Transforms, token_arcs
from bpefst.regex import alphabet_for, compile_regex
from bpefst.tokenizer import PRESETS, load_tokenizer
from conftest import require_shared
from small_models import random_byte_model


def hopcroft(dfa: DFA) -> DFA:
    """Minimization by Hopcroft refinement only (the cyclic route), for comparison."""
    dfa = trim(dfa)
    if not dfa.finals:
        return DFA.empty_language()
    block = _coarsest_stable_partition(dfa.transitions, dfa.finals)
    rows: list = [None] * (max(block) + 1)
    for q, row in enumerate(dfa.transitions):
        if rows[block[q]] is None:
            rows[block[q]] = {a: block[r] for a, r in row.items()}
    return canonical(DFA(rows, block[dfa.start], frozenset(block[q] for q in dfa.finals), check=False))


@st.composite
def dfas(draw, acyclic: bool):
    n = draw(st.integers(1, 12))
    rows = []
    for q in range(n):
        targets = range(q + 1, n) if acyclic else range(n)
        row = {}
        if targets:
            for a in draw(st.lists(st.integers(0, 3), max_size=4, unique=True)):
                row[a] = draw(st.sampled_from(list(targets)))
        rows.append(row)
    finals = draw(st.sets(st.integers(0, n - 1)))
    return DFA(rows, 0, finals)


@settings(max_examples=300, deadline=None)
@given(dfas(acyclic=True))
def test_acyclic_minimization_matches_hopcroft(dfa: DFA) -> None:
    assert minimize(dfa) == hopcroft(dfa)


@settings(max_examples=200, deadline=None)
@given(dfas(acyclic=False))
def test_cyclic_minimization_matches_hopcroft(dfa: DFA) -> None:
    assert minimize(dfa) == hopcroft(dfa)


def plain_product(lattice: DFA, automaton) -> DFA:
    """Textbook lazy product of the lattice with A_BPE, states (lattice state, last token)."""
    index = {(lattice.start, -1): 0}
    pairs = [(lattice.start, -1)]
    rows = []
    for q, last in pairs:
        row = {}
        for t, r in lattice.transitions[q].items():
            if automaton.allowed(last, t):
                row[t] = index.setdefault((r, t), len(pairs))
                if row[t] == len(pairs):
                    pairs.append((r, t))
        rows.append(row)
    finals = frozenset(i for i, (q, _) in enumerate(pairs) if q in lattice.finals)
    return minimize(DFA(rows, 0, finals, check=False))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([r"(ab|a|b1)*x?", r"[ab1-]{1,5}", r'"(a|b)*"', r"a+b*1?", r"-?1(ab)*"]),
       st.sampled_from(["explicit", "implicit"]))
def test_product_matches_plain_product(seed: int, pattern: str, encoding: str) -> None:
    """The whole-match canonical language, written out, over A_BPE in either encoding."""
    model = random_byte_model(seed, alphabet=b'ab1-x"', num_merges=20, pattern=PRESETS["gpt2"])
    automaton = build_canonical(MergeForest.from_model(model), encoding)
    trie = SpellingTrie.from_model(model)
    dfa = compile_regex(pattern, alphabet_for(model))
    lattice = promote_agnostic(dfa, model, trie, minimal=False)
    written = TokenLanguage(dfa, model, pretokenize=False, automaton=automaton).dfa()
    assert written == plain_product(lattice, automaton)
    assert all(lattice.transitions[q] == token_arcs(trim(dfa), trie, q) for q in range(lattice.num_states))


def brute_force_rows(dfa: DFA, model) -> list[dict[int, int]]:
    """``token -> δ*(q, spelling)`` for every state, by running each token's spelling through the DFA."""
    rows = []
    for q in range(dfa.num_states):
        row = {}
        for token, spelling in model.spellings.items():
            target = dfa.run(spelling, q)
            if target is not None:
                row[token] = target
        rows.append(row)
    return rows


@contextmanager
def subtree_threshold(min_tokens: int):
    """Index subtrees with at least ``min_tokens`` tokens below them (the threshold is read when an index is built)."""
    default = subtrees.MIN_TOKENS
    subtrees.MIN_TOKENS = min_tokens
    try:
        yield
    finally:
        subtrees.MIN_TOKENS = default


@pytest.mark.parametrize("min_tokens", [subtrees.MIN_TOKENS, 1])
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([r"[ab1]{1,6}-[ab]{0,3}", r'"[a-b ]{1,5}": [1]{1,3}', r"(ab|a|b1)*x?", r"-?1(ab)*", r"[ab]*"]))
def test_transform_walk_matches_brute_force(min_tokens: int, seed: int, pattern: str) -> None:
    """The single walk carrying state transforms (over the chain-compressed trie) gives every state's arcs.

    With ``min_tokens`` 1 every subtree is a candidate for filing in bulk, which
    these small vocabularies would otherwise rarely reach.
    """
    model = random_byte_model(seed, alphabet=b'ab1-x" :', num_merges=40, pattern=PRESETS["gpt2"])
    dfa = trim(compile_regex(pattern, alphabet_for(model)))
    with subtree_threshold(min_tokens):
        trie = SpellingTrie.from_model(model)
        trie.subtrees()  # otherwise built on a trie's second walk only
        lattice = promote_agnostic(dfa, model, trie, minimal=False)
    assert lattice.transitions == brute_force_rows(dfa, model)


@pytest.mark.parametrize("name", ["gpt2", "cl100k"])
def test_bulk_filing_on_real_vocabularies(name: str, monkeypatch) -> None:
    """On letter-heavy patterns over real vocabularies, where most tokens are filed in bulk, every row equals the per-state walk."""
    sources = {"gpt2": "gpt2/vocab.json", "cl100k": "tiktoken/cl100k_base.tiktoken.gz"}
    model = load_tokenizer(require_shared() / sources[name])
    trie = SpellingTrie.from_model(model)
    trie.subtrees()  # otherwise built on the trie's second walk only
    bulk_runs = []
    run = _Transforms.uniform_run

    def counted(self, *args):
        found = run(self, *args)
        bulk_runs.append(bool(found))
        return found

    monkeypatch.setattr(_Transforms, "uniform_run", counted)
    for regex in (r'\{"name": "[A-Za-z ]{1,10}", "age": [0-9]{1,3}\}', r"[a-z0-9._]{1,12}@[a-z]{1,8}\.(com|org|net)"):
        dfa = trim(compile_regex(regex, alphabet_for(model)))
        lattice = promote_agnostic(dfa, model, trie, minimal=False)
        assert lattice.transitions == [token_arcs(dfa, trie, q) for q in range(dfa.num_states)], regex
    assert sum(bulk_runs) > 100  # the bulk path was taken, not just offered


def test_chains_spell_every_token() -> None:
    """Following the collapsed chains from the root visits each token once, at its full spelling."""
    model = random_byte_model(7, alphabet=b"abc", num_merges=30)
    trie = SpellingTrie.from_model(model)
    found: dict[int, tuple[int, ...]] = {}
    stack = [(0, ())]
    while stack:
        node, prefix = stack.pop()
        for symbol, (rest, token, end, _) in trie.chains()[node].items():
            spelled = (*prefix, symbol, *rest)
            tokens = [token] if token >= 0 else trie.tokens[-2 - token] if token < -1 else []
            found.update(dict.fromkeys(tokens, spelled))
            if end:
                stack.append((end, spelled))
    assert found == {t: tuple(s) for t, s in model.spellings.items()}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.data())
def test_restricted_banned_matches_pair_checks(seed: int, data) -> None:
    """Banned sets restricted to a token subset equal the implicit A_BPE's pair-by-pair answers."""
    from bpefst.promotion.banned_subset import restricted_banned

    model = random_byte_model(seed, alphabet=b'ab1-x"', num_merges=30, pattern=PRESETS["gpt2"])
    forest = MergeForest.from_model(model)
    automaton = build_canonical(forest, "implicit")
    ids = [t for t in range(forest.size) if forest.reachable[t]]
    followers = data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=40))
    leaders = data.draw(st.lists(st.sampled_from(ids), unique=True, max_size=40))
    masks = restricted_banned(forest, leaders, followers)
    for u in leaders:
        assert masks[u] == sum(1 << i for i, v in enumerate(followers) if not automaton.allowed(u, v))


def test_set_bits_finds_every_set_bit() -> None:
    """Both ways of reading a bitset (few bits, many bits) against the positions it was built from."""
    from bpefst.promotion.canonical import set_bits

    rng = random.Random(11)
    for count in (0, 1, 5, 32, 33, 400, 3000):
        positions = rng.sample(range(60_000), count)
        mask = sum(1 << p for p in positions)
        assert sorted(set_bits(mask)) == sorted(positions)


def test_subtree_index_waits_for_a_second_walk() -> None:
    """A trie walked once (a one-off promotion) does not build the subtree index; its second walk does, with equal rows."""
    model = random_byte_model(11, alphabet=b"ab1", num_merges=30)
    dfa = trim(compile_regex(r"[ab1]{1,6}", alphabet_for(model)))
    trie = SpellingTrie.from_model(model)
    with subtree_threshold(1):  # so that the second walk files in bulk
        first = promote_agnostic(dfa, model, trie, minimal=False)
        assert trie._subtrees is None
        second = promote_agnostic(dfa, model, trie, minimal=False)
        assert trie._subtrees is not None
    assert first.transitions == second.transitions == brute_force_rows(dfa, model)
