"""The contract of :class:`bpefst.TokenLanguage`, through ``bpefst.promote`` and the language's views only.

A language is one value, built once at ``bpefst.promote()``: its views share
that build (checked by object identity of the shared product and by the
language's public ``built`` count), each view has one type whatever the
pattern or call order, ``guide()`` answers the same in any call order,
refusals come from ``promote()`` itself, ``cache_dir`` is honoured in every
call order, and nothing is kept past the language's life except in an
explicit, size-bounded cache.

Oracle: the textbook reference encoder (``ReferenceEncoder``, which follows
the model's pre-tokenization) over every text the pattern matches, found by
brute force with ``regex.fullmatch``.
"""

from __future__ import annotations

import gc
import itertools
import weakref

import pytest
import regex

import bpefst
from bpefst.automata.shared_rows import SharedRowDFA
from bpefst.automata import DFA
from bpefst.promotion import GuidedAutomaton, OnDemandCanonical
from bpefst.tokenizer import PRESETS, ReferenceEncoder
from small_models import random_byte_model

ALPHABET = "ab1 "
CUT = r"(ab|b1){1,2}( a{1,3})?"  # a space starts a gpt2 chunk: matches are cut
WHOLE = r"(ab|ba){1,3}"  # letters only: every match is one chunk
ORDERS = list(itertools.permutations(("guide", "on_demand", "shared_rows", "dfa")))


def model(seed: int = 0, pattern: str | None = PRESETS["gpt2"]):
    return random_byte_model(seed, alphabet=ALPHABET.encode(), num_merges=15, pattern=pattern)


def matches(pattern: str, longest: int = 8) -> list[str]:
    """Every text over ALPHABET of at most ``longest`` characters that ``pattern`` matches whole."""
    compiled = regex.compile(pattern)
    return [text for n in range(longest + 1) for text in map("".join, itertools.product(ALPHABET, repeat=n))
            if compiled.fullmatch(text)]


def encodings(m, pattern: str) -> set[tuple[int, ...]]:
    encoder = ReferenceEncoder(m)
    return {tuple(encoder.encode(text)) for text in matches(pattern)}


def guided_sequences(guide: GuidedAutomaton) -> set[tuple[int, ...]]:
    """Every token sequence a guide accepts (the language is finite), walking allowed() from the start."""
    found: set[tuple[int, ...]] = set()

    def walk(state, seq):
        assert len(seq) < 32
        if guide.is_accepting(state):
            found.add(tuple(seq))
        for token in guide.allowed(state):
            walk(guide.step(state, token), [*seq, token])

    if guide.start is not None:
        walk(guide.start, [])
    return found


def ask(language, view: str):
    return getattr(language, view)()


# -- one build, shared by every view -------------------------------------------------------------------
@pytest.mark.parametrize("pattern", [CUT, WHOLE])
@pytest.mark.parametrize("order", ORDERS[::5])
def test_views_share_one_build(pattern, order):
    language = bpefst.promote(model(), pattern)
    for view in order:
        ask(language, view)
    for view in order:  # asked again: the same objects, nothing rebuilt
        ask(language, view)
    product = language.on_demand()
    assert language.guide().automaton is product
    assert language.guide(stop_ids=[7]).automaton is product  # another stop set: another guide, the same product
    assert language.built["product"] == 1 and language.built["chunked pattern"] == 1
    assert all(count == 1 for count in language.built.values()), language.built
    assert language.shared_rows() is language.shared_rows() and language.dfa() is language.dfa()


def test_agnostic_and_direct_share_one_build():
    for mode in ("agnostic", "canonical-direct"):
        language = bpefst.promote(model(), WHOLE, mode=mode)
        views = [language.guide().automaton, language.shared_rows(), language.dfa(), language.guide().automaton]
        assert views[0] is views[3]
        assert all(count == 1 for count in language.built.values()), (mode, language.built)


# -- fixed view types ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["canonical", "agnostic", "canonical-direct"])
def test_each_view_has_one_type(mode):
    kinds = set()
    for pattern in (CUT, WHOLE) if mode != "canonical-direct" else (WHOLE,):
        for order in ORDERS[::7]:
            language = bpefst.promote(model(), pattern, mode=mode)
            for view in order:
                if view == "on_demand" and mode != "canonical":
                    continue
                ask(language, view)
            kinds.add((type(language.shared_rows()), type(language.guide()), type(language.guide().automaton),
                       type(language.dfa())))
    assert len(kinds) == 1, kinds
    (shared, guide, under, dfa), = kinds
    assert shared is SharedRowDFA and guide is GuidedAutomaton and dfa is DFA
    assert under is (OnDemandCanonical if mode == "canonical" else DFA)


# -- guide() answers the same whichever view ran first, and answers right ------------------------------------
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("pattern", [CUT, WHOLE])
def test_guide_is_independent_of_call_order(seed, pattern):
    m = model(seed)
    expected = encodings(m, pattern)
    assert expected
    for first in ("dfa", "shared_rows", "on_demand", None):
        language = bpefst.promote(m, pattern)
        if first is not None:
            ask(language, first)
        guide = language.guide()
        assert guided_sequences(guide) == expected, first
        assert {tuple(s) for s in expected if language.accepts(list(s))} == expected


# -- refusals come from promote() itself --------------------------------------------------------------------
def test_refusals_at_promote():
    with pytest.raises(bpefst.BpefstError, match="pretokenize=False"):
        bpefst.promote(model(), CUT, mode="canonical-direct")
    bpefst.promote(model(), CUT, mode="canonical-direct", pretokenize=False)  # whole-match canonicity: fine
    bpefst.promote(model(), WHOLE, mode="canonical-direct")  # never cut: fine
    with pytest.raises(bpefst.BpefstError, match="custom pre-tokenization pattern"):
        bpefst.promote(model(pattern=r"\w+|[^\w]"), CUT)
    bpefst.promote(model(pattern=r"\w+|[^\w]"), CUT, mode="agnostic")  # every spelling: no pre-tokenization to model


def test_an_estimated_lattice_limit_refuses_at_promote_by_the_chunked_patterns_arcs():
    """Limits.lattice_per_arc > 1 refuses, before any walk, a language whose chunked pattern's arcs on symbols
    (counted here from its rows) times that pass max_lattice_arcs; exactly at the limit it is built."""
    from bpefst.automata.errors import ArcLimitExceeded
    from bpefst.promotion.language_build import Limits
    from bpefst.promotion.pretokenized import BOUNDARY, chunked_pattern, chunker_or_whole
    from bpefst.regex import alphabet_for, compile_regex

    m = model()
    pattern = compile_regex(CUT, alphabet_for(m))
    chunked = chunked_pattern(pattern, m, chunker_or_whole(pattern, m, m.pattern))
    arcs = sum(len(row) - (BOUNDARY in row) for row in chunked.transitions)
    with pytest.raises(ArcLimitExceeded, match=rf"estimated at 3 per arc of the chunked pattern's arcs \(more than {(3 * arcs - 1) // 3:,}\)"):
        bpefst.TokenLanguage(pattern, m, limits=Limits(max_lattice_arcs=3 * arcs - 1, lattice_per_arc=3))
    language = bpefst.TokenLanguage(pattern, m, limits=Limits(max_lattice_arcs=3 * arcs, lattice_per_arc=3))
    assert guided_sequences(language.guide()) == encodings(m, CUT)
    bpefst.TokenLanguage(pattern, m, limits=Limits(max_lattice_arcs=arcs))  # the default (1 per arc) is the proof only


def test_the_lattice_limit_bounds_the_walk_and_the_arc_limit_what_is_written_out():
    """max_lattice_arcs refuses the canonical product whose lattice passes it (at promote(): the build is
    asked for there); max_arcs does not touch the lazy product, which guides as before, but refuses what
    would be written out, whose lattice is written out as rows (dfa(), shared_rows())."""
    from bpefst.automata.errors import ArcLimitExceeded
    from bpefst.promotion.language_build import Limits
    from bpefst.regex import alphabet_for, compile_regex

    m = model()
    pattern = compile_regex(CUT, alphabet_for(m))
    arcs = bpefst.TokenLanguage(pattern, m).on_demand().lattice_arcs
    with pytest.raises(ArcLimitExceeded, match="token lattice"):
        bpefst.TokenLanguage(pattern, m, limits=Limits(max_lattice_arcs=arcs - 1)).on_demand()
    with pytest.raises(ArcLimitExceeded, match="token lattice"):
        bpefst.promote(m, CUT, max_lattice_arcs=arcs - 1).guide()
    language = bpefst.promote(m, CUT, max_arcs=arcs - 1)
    assert guided_sequences(language.guide()) == encodings(m, CUT)
    for view in (language.dfa, language.shared_rows):
        with pytest.raises(ArcLimitExceeded):
            view()


# -- cache_dir, in every call order ----------------------------------------------------------------------
@pytest.mark.parametrize("first", ["dfa", "shared_rows", "on_demand", "guide", None])
def test_cache_dir_is_honoured_in_every_order(tmp_path, first):
    m = model(1)
    language = bpefst.promote(m, CUT)
    if first is not None:
        ask(language, first)
    language.guide(cache_dir=tmp_path)
    assert sorted(p.suffix for p in tmp_path.iterdir()) == [".guide", ".parts"]  # the tokenizer's parts beside it
    again = bpefst.promote(m, CUT, cache_dir=tmp_path)  # as in the next process: read, not built
    assert again.built["product from cache"] == 1 and again.built["product"] == 0
    assert guided_sequences(again.guide()) == encodings(m, CUT)


def test_cache_dir_at_promote_writes_then_reads(tmp_path):
    m = model(2)
    first = bpefst.promote(m, CUT, cache_dir=tmp_path)
    assert first.built["product"] == 1 and len(list(tmp_path.glob("*.guide"))) == 1  # beside the tokenizer's .parts
    second = bpefst.promote(m, CUT, cache_dir=tmp_path)
    assert second.built["product"] == 0 and second.built["product from cache"] == 1
    assert guided_sequences(second.guide()) == guided_sequences(first.guide()) == encodings(m, CUT)


@pytest.mark.parametrize("mode", ["canonical", "agnostic"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_written_out_view_is_the_pure_minimization(mode, seed):
    """dfa() minimizes on the compiled core where it runs: the same value as the pure minimize (canonically
    numbered), for the canonical (from its shared rows) and the agnostic (from its lattice) languages."""
    from bpefst.automata import minimize
    from bpefst.regex.compiler import minimal_of_dfa

    m = model(seed)
    for pattern in (CUT, WHOLE, r"(a|b| |1){0,6}"):
        language = bpefst.promote(m, pattern, mode=mode)
        written = language.shared_rows().to_dfa()  # (agnostic: its lattice, a row per state)
        assert language.dfa() == minimize(written) == minimal_of_dfa(written), (mode, seed, pattern)


def test_a_product_read_from_cache_dir_gives_the_written_out_views(tmp_path):
    """The shared rows and the minimal DFA are views over the product, also over one read from the disk cache
    (its lattice rows from the liveness filed there): the same language as a fresh build's."""
    from bpefst.automata import equivalent

    m = model(2)
    bpefst.promote(m, CUT, cache_dir=tmp_path)
    again = bpefst.promote(m, CUT, cache_dir=tmp_path)
    assert again.built["product from cache"] == 1 and again.built["product"] == 0
    assert equivalent(again.dfa(), bpefst.promote(m, CUT).dfa()).equal
    assert all(again.shared_rows().accepts(list(ids)) for ids in encodings(m, CUT))


def test_cache_dir_names_a_json_schema_language_by_its_schema(tmp_path):
    """A schema is translated straight to an automaton (no pattern text): the schema and its options name
    the language in cache_dir, so a second promote of the same schema reads it and another schema does not."""
    m = model(2)
    schema = {"type": "string", "enum": ["ab", "ba"]}
    first = bpefst.promote(m, json_schema=schema, cache_dir=tmp_path)
    second = bpefst.promote(m, json_schema=schema, cache_dir=tmp_path)
    assert first.built["product"] == 1 and second.built["product from cache"] == 1 and second.built["product"] == 0
    assert guided_sequences(second.guide()) == guided_sequences(first.guide())
    other = bpefst.promote(m, json_schema={"type": "string", "enum": ["ab"]}, cache_dir=tmp_path)
    assert other.built["product"] == 1 and len(list(tmp_path.glob("*.guide"))) == 2


# -- caches: explicit and bounded ----------------------------------------------------------------------------
def test_parts_cache_is_bounded_and_shared():
    from bpefst.promotion import PartsCache

    cache = PartsCache(size=2)
    models = [model(seed) for seed in range(4)]
    languages = [bpefst.promote(m, WHOLE, parts=cache) for m in models]
    assert len(cache) == 2
    again = bpefst.promote(models[-1], CUT, parts=cache)
    assert again.parts is languages[-1].parts  # the tokenizer's trie and A_BPE, built once for both
    assert bpefst.promote(models[0], WHOLE, parts=cache).parts is not languages[0].parts  # evicted, built again
    with pytest.raises(bpefst.BpefstError, match="size"):
        PartsCache(size=0)


def test_a_language_keeps_nothing_alive_after_it():
    m = model(3)
    first = bpefst.promote(m, CUT)
    guide = weakref.ref(first.guide())
    product = weakref.ref(first.on_demand())
    assert bpefst.promote(m, CUT).guide() is not first.guide()  # languages do not share guides behind the caller's back
    del first
    gc.collect()
    assert guide() is None and product() is None


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pattern", [CUT, WHOLE, r"[ab1 ]{0,6}1"])
def test_step_before_any_row_agrees_with_the_row(seed, pattern):
    """A step from a state whose row was never built (the decoder's path: a lookup outside the lattice
    state's largest token group) goes where the row, built afterwards, says; and the states reached by
    steps alone accept exactly the tokenizer's encodings of the matches."""
    m = model(seed)
    lazy = bpefst.promote(m, pattern).on_demand()
    tokens = range(m.max_id + 1)
    queue, seen, stepped = [lazy.start], {lazy.start}, {}
    while queue:  # every reachable state, numbered by steps only
        state = queue.pop()
        stepped[state] = {t: lazy.step(state, t) for t in tokens}
        for target in stepped[state].values():
            if target is not None and target not in seen:
                seen.add(target)
                queue.append(target)
    for state, arcs in stepped.items():
        assert {t: r for t, r in arcs.items() if r is not None} == lazy.row(state)
    assert guided_sequences(GuidedAutomaton(lazy)) == encodings(m, pattern)


def test_the_collector_is_left_as_it_was():
    """Stages build with the cyclic collector paused; promote() leaves it as it found it, refusals too."""
    import gc

    m = model(0)
    for enabled in (True, False):
        (gc.enable if enabled else gc.disable)()
        try:
            bpefst.promote(m, CUT).guide()
            assert gc.isenabled() is enabled
            with pytest.raises(bpefst.BpefstError):
                bpefst.promote(m, CUT, mode="canonical-direct")  # refused while its stage builds
            assert gc.isenabled() is enabled
        finally:
            gc.enable()


@pytest.mark.parametrize("pattern", [CUT, WHOLE])
def test_a_language_is_freed_without_the_cyclic_collector(pattern):
    """No reference cycle in a language, its product or its guide: dropped, they are freed at once, so a
    process promoting schema after schema does not wait for a full collection to get its memory back."""
    from bpefst.decoding import allocate_token_bitmask

    pytest.importorskip("numpy")
    m = model(2)
    gc.disable()
    try:
        language = bpefst.promote(m, pattern)
        guide = language.guide()
        guide.fill_next_token_bitmasks([guide.start], allocate_token_bitmask(1, m.max_id + 1))
        refs = [weakref.ref(x) for x in (language, guide, language.on_demand())]
        del language, guide
        assert [r() for r in refs] == [None, None, None]
    finally:
        gc.enable()
