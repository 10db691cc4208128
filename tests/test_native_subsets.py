"""The compiled canonical subsets (``src/core/subsets.h``) against their pure twin, which is the specification.

``shared_canonical_subsets`` (the ``shared_rows()`` view of a canonical
language, and what ``dfa()`` writes out) runs on the core where it is built
(:func:`bpefst.promotion.pretokenized._subsets_natively`) and in Python
otherwise (:func:`~bpefst.promotion.pretokenized._subsets_in_python`).  Both
must give the same automaton state for state: the same parts (lattice state
and excluded tokens) in the same order, the same overrides, shared rows, dead
states and finals, hence the same rows and arc counts; and the same
refusals at the state and arc limits.  Compared on small random models (where
overrides and dead states occur), on a tokenizer trained on
``fixtures/corpus.txt`` and, where ``../shared`` is present, on GPT-2 and
cl100k; plus hostile arguments (an exception, never a crash) and builds on
threads at once (the build runs without the GIL).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path

import pytest

import bpefst
from bpefst import native
from bpefst.automata.errors import ArcLimitExceeded, StateLimitExceeded
from bpefst.automata.shared_rows import SharedRowDFA
from bpefst.bpe import MergeForest, build_canonical
from bpefst.promotion import PartsCache, TokenLanguage
from bpefst.promotion.pretokenized import _subsets_in_python, _subsets_natively, shared_canonical_subsets
from bpefst.regex import alphabet_for, compile_regex
from bpefst.regex.json_schema import schema_to_dfa
from bpefst.tokenizer import PRESETS, load_tokenizer
from conftest import require_shared
from small_models import random_byte_model

pytestmark = pytest.mark.skipif(native.core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = [r"(ab|a1|1\.)( ?(ab|1|b\.)){0,2}", r"(a|b| ){1,5}", r"a'(s|ll|x)( b)?", r"[ab]{1,2} {1,3}\n?", r"1{1,5}\.?a?",
            r"( |\n){1,3}[ab]", r"(ab|1\.)?( (a|b1)){0,2}", r"(a|b|1| |'|\.){1,6}"]
EMAIL = r"[a-z0-9._]{1,12}@[a-z]{1,8}\.(com|org|net)"
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 6}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}
PARTS = PartsCache(size=1)


@lru_cache(maxsize=None)
def small_model(seed: int, preset: str):
    model = random_byte_model(seed, alphabet=b"ab1 '.\n", num_merges=25, pattern=PRESETS[preset])
    return model, build_canonical(MergeForest.from_model(model))


def product_of(pattern, model, automaton=None):
    """The canonical product a language's shared rows are built over (its whole liveness solved)."""
    language = TokenLanguage(pattern, model, automaton=automaton) if automaton is not None else TokenLanguage(pattern, model, parts=PARTS)
    return language._the_product()


def whole(shared: SharedRowDFA):
    """Everything a SharedRowDFA says, as plain values."""
    states = range(len(shared.parts))
    return {"parts": [tuple((q, frozenset(excluded)) for q, excluded in shared.parts[s]) for s in states],
            "overrides": [shared.overrides[s] for s in states], "shared": [shared.shared[q] for q in range(len(shared.shared))],
            "dead": list(shared.dead), "finals": shared.finals, "start": shared.start}


def assert_same_subsets(product, rows: bool = True) -> tuple[SharedRowDFA, SharedRowDFA]:
    compiled, pure = _subsets_natively(product, None, None), _subsets_in_python(product)
    assert compiled is not None and compiled._core is not None and pure._core is None
    assert whole(compiled) == whole(pure)
    assert compiled.num_states == pure.num_states and compiled.num_arcs == pure.num_arcs
    if rows:
        for s in range(len(pure.parts)):
            assert compiled.row(s) == pure.row(s) and compiled.arc_count(s) == pure.arc_count(s), s
            for token in list(pure.row(s))[:20] + [0, 97, product.automaton.forest.size - 1]:
                assert compiled.step(s, token) == pure.step(s, token)
    return compiled, pure


def test_small_models_give_the_pure_automaton_with_overrides_and_dead_states() -> None:
    """Random byte models under GPT-2's and cl100k's pre-tokenization: the cases include states with overrides
    (a token read both continuing the chunk and after a cut) and dead states (reached only through tokens
    every state over them overrides), so both paths of the compiled build are exercised."""
    seen = {"overrides": 0, "dead": 0}
    for seed in range(8):
        for preset in ("gpt2", "cl100k"):
            model, automaton = small_model(seed, preset)
            for text in PATTERNS:
                product = product_of(compile_regex(text, alphabet_for(model)), model, automaton)
                if product.start is None:
                    continue
                _, pure = assert_same_subsets(product)
                seen["overrides"] += any(pure.overrides[s] for s in range(len(pure.parts)))
                seen["dead"] += any(pure.dead)
    assert seen["overrides"] >= 10 and seen["dead"] >= 10, seen


@pytest.fixture(scope="module")
def trained():
    return bpefst.train(ROOT / "fixtures" / "corpus.txt", 400).model


def test_a_trained_tokenizer_gives_the_pure_automaton(trained) -> None:
    alphabet = alphabet_for(trained)
    for pattern in (compile_regex(EMAIL, alphabet), schema_to_dfa(SCHEMA, alphabet), compile_regex(r"-?[0-9]{1,4}(\.[0-9]{1,2})?", alphabet)):
        assert_same_subsets(product_of(pattern, trained))


@lru_cache(maxsize=None)
def real(name: str):
    sources = {"gpt2": "gpt2/vocab.json", "cl100k": "tiktoken/cl100k_base.tiktoken.gz"}
    return load_tokenizer(require_shared() / sources[name])


@pytest.mark.parametrize("name, pattern", [("gpt2", EMAIL), ("gpt2", r"-?(0|[1-9][0-9]*)(\.[0-9]+)?"),
                                           ("cl100k", r"[А-Яа-я]{2,5}( [А-Яа-я]{2,5})?"), ("cl100k", r"[0-9]{1,7}")])
def test_real_tokenizers_give_the_pure_automaton(name, pattern) -> None:
    """GPT-2's e-mail pattern is 41,566 states over 11,379 tokens (the figure of bench_promote.py)."""
    model = real(name)
    product = product_of(compile_regex(pattern, alphabet_for(model)), model)
    compiled, pure = assert_same_subsets(product, rows=len(product.cut) < 40 and name == "cl100k")
    for s in range(0, len(pure.parts), max(1, len(pure.parts) // 300)):  # rows of a sample of states
        assert compiled.row(s) == pure.row(s)


def test_the_state_and_arc_limits_refuse_alike() -> None:
    """max_states refuses past the states numbered; max_arcs counts each state's largest part, as the pure
    loop does, and stops the build at the same bound."""
    model, automaton = small_model(3, "gpt2")
    product = product_of(compile_regex(PATTERNS[-1], alphabet_for(model)), model, automaton)
    states = len(_subsets_in_python(product).parts)
    assert states > 5
    for limit in (0, 1, states - 1, states, states + 1):
        outcomes = []
        for build in (_subsets_natively, _subsets_in_python):
            try:
                outcomes.append(len(build(product, limit, None).parts))
            except StateLimitExceeded as refusal:
                outcomes.append(str(refusal))
        assert outcomes[0] == outcomes[1], limit
        assert isinstance(outcomes[0], str) == (limit < states)
    refused = []
    for limit in range(0, 400, 7):
        outcomes = []
        for build in (_subsets_natively, _subsets_in_python):
            try:
                outcomes.append(build(product, None, limit).num_arcs)
            except ArcLimitExceeded as refusal:
                outcomes.append(str(refusal))
        assert outcomes[0] == outcomes[1], limit
        refused.append(isinstance(outcomes[0], str))
    assert refused[0] and not refused[-1] and refused == sorted(refused, reverse=True)


def test_an_empty_language_has_one_dead_state() -> None:
    model, automaton = small_model(1, "gpt2")
    product = product_of(compile_regex(r"ab", alphabet_for(model)), model, automaton)
    product.start = None  # (as when no canonical sequence spells a match)
    empty = shared_canonical_subsets(product)
    assert empty.dead == [True] and not empty.finals and empty.num_states == 0


def test_the_compiled_form_reads_as_lists() -> None:
    model, automaton = small_model(5, "cl100k")
    product = product_of(compile_regex(PATTERNS[1], alphabet_for(model)), model, automaton)
    compiled, pure = assert_same_subsets(product)
    n = len(pure.parts)
    assert len(compiled.parts) == n and compiled.parts[-1] == compiled.parts[n - 1] and list(compiled.parts[1:3]) == [compiled.parts[1], compiled.parts[2]]
    assert [tuple(p) for p in compiled.parts] == [compiled.parts[s] for s in range(n)]
    with pytest.raises(IndexError):
        compiled.parts[n]
    with pytest.raises(IndexError):
        compiled.shared[len(compiled.shared)]
    for bad in (-1, 1 << 40, model.max_id + 7):  # tokens no lattice reads: no arc
        assert compiled.step(0, bad) is None
    with pytest.raises(IndexError):
        compiled.step(n, 97)
    with pytest.raises(TypeError):
        compiled.row("0")
    assert compiled.to_dfa().transitions == pure.to_dfa().transitions


def test_hostile_arguments_raise() -> None:
    """canonical_subsets checks what it is given: wrong types, states or tokens out of range, sizes that do not
    agree; an exception each time, never a crash."""
    model, automaton = small_model(2, "gpt2")
    product = product_of(compile_regex(PATTERNS[0], alphabet_for(model)), model, automaton)
    index, filed, cut = automaton.banned_index(), list(product.filed), list(product.cut)
    finals, start, n = sorted(product.finals_q), product.start_q, len(product.cut)
    call = native.core.canonical_subsets
    assert len(call(index, filed, cut, finals, start, -1, -1)) > 0
    bad_calls = [
        (None, filed, cut, finals, start, -1, -1),
        (index, filed, cut[:-1], finals, start, -1, -1),
        (index, filed, cut, finals, n, -1, -1),
        (index, filed, cut, finals, -1, -1, -1),
        (index, filed, cut, [n], start, -1, -1),
        (index, filed, [n] * n, finals, start, -1, -1),
        (index, filed, ["x"] * n, finals, start, -1, -1),
        (index, [[([1, 2], n)]] * n, cut, finals, start, -1, -1),
        (index, [[([model.max_id + 100], 0)]] * n, cut, finals, start, -1, -1),
        (index, [[(["a"], 0)]] * n, cut, finals, start, -1, -1),
        (index, [[(1, 0)]] * n, cut, finals, start, -1, -1),
        (index, [[[[1], 0, 3]]] * n, cut, finals, start, -1, -1),
        (index, [None] * n, cut, finals, start, -1, -1),
        (index, [], [], [], 0, -1, -1),
        (index, filed, cut, finals, start, "many", -1),
    ]
    for args in bad_calls:
        with pytest.raises((TypeError, ValueError, IndexError, OverflowError)):
            call(*args)
    uninitialised = native.core.BannedIndex.__new__(native.core.BannedIndex)
    with pytest.raises(RuntimeError):
        call(uninitialised, filed, cut, finals, start, -1, -1)


def test_builds_on_threads_at_once_equal_builds_one_after_another() -> None:
    """The build runs without the GIL: three threads building at once give what each gives alone."""
    cases = []
    for seed, preset, text in ((0, "gpt2", PATTERNS[0]), (1, "cl100k", PATTERNS[-1]), (4, "gpt2", PATTERNS[6])):
        model, automaton = small_model(seed, preset)
        product = product_of(compile_regex(text, alphabet_for(model)), model, automaton)
        cases.append((product, whole(_subsets_natively(product, None, None))))
    results: dict[int, list] = {k: [] for k in range(len(cases))}

    def build(k: int) -> None:
        for _ in range(20):
            results[k].append(whole(_subsets_natively(cases[k][0], None, None)))

    threads = [threading.Thread(target=build, args=(k,)) for k in range(len(cases))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for k, (_, alone) in enumerate(cases):
        assert len(results[k]) == 20 and all(result == alone for result in results[k])


def test_a_product_read_from_the_disk_cache_gives_the_same_automaton(tmp_path) -> None:
    """A language whose set-up comes from ``cache_dir`` files its lattice otherwise (decoded arrays, not the
    solve's groups); its shared rows are the same states."""
    model, automaton = small_model(6, "gpt2")
    source = PATTERNS[-1]
    parts = PartsCache(size=1)
    fresh = bpefst.promote(model, source, cache_dir=tmp_path, parts=parts)
    again = bpefst.promote(model, source, cache_dir=tmp_path, parts=parts)
    assert again.built["product from cache"] == 1
    assert whole(again.shared_rows()) == whole(fresh.shared_rows())
    assert again.shared_rows()._core is not None


def test_arcs_kept_by_hash_give_the_same_automaton() -> None:
    """Past the bytes allowed for the table of arcs by target and class (lattices of many states and classes),
    the arcs' states and configurations are kept by hash: the same automaton."""
    for seed, preset, text in ((0, "gpt2", PATTERNS[0]), (1, "cl100k", PATTERNS[-1]), (4, "gpt2", PATTERNS[6])):
        model, automaton = small_model(seed, preset)
        product = product_of(compile_regex(text, alphabet_for(model)), model, automaton)
        hashed = native.core.canonical_subsets(automaton.banned_index(), product.filed, product.cut, sorted(product.finals_q),
                                               product.start_q, -1, -1, 0)
        assert whole(SharedRowDFA.from_core(hashed)) == whole(_subsets_in_python(product))
