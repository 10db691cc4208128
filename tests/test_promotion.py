"""Promotion against brute force: the accepted token sequences are exactly the (canonical) tokenizations of the matches."""

from __future__ import annotations

from functools import lru_cache

import pytest

from bpefst.automata import count_strings, enumerate_strings, equivalent
from bpefst.bpe import MergeForest, build_canonical
from bpefst.promotion import GuidedAutomaton, SpellingTrie, TokenLanguage
from bpefst.promotion.language_build import Limits
from bpefst.regex import alphabet_for, compile_regex
from bpefst.tokenizer import PRESETS, ReferenceEncoder, load_tokenizer
from conftest import require_shared
from small_models import random_byte_model

PATTERNS = [
    r"202[0-5]-0[1-3]-1[0-2]",  # dates
    r"-?[1-9][0-9]?(\.[05])?",  # numbers
    r"[+-]?[0-9]{1,3}",
    r"(ann|bob)@(mail|web)\.(com|org)",  # e-mail
    r'\{"(id|name)": (1|22|"x")\}',  # JSON fragments
    r'\[(1|2)(, ?(1|2)){0,2}\]',
    r"(true|false|null)",
    r"(cat|dog|bird|horse)s?",  # alternations of words
    r"(hello|world)( (hello|world)){0,2}",
    r"[α-ε]{1,3}",  # Unicode classes
    r"[ÀÉÖ][a-c]",
    r"[中文字]{1,3}",
    r"(😀|👍){1,3}",
    r"(ab){1,4}c?",  # bounded repetitions
    r"\$[1-9]{1,3}",
    r"[01][0-9]:[03]0",
    r"0x[0-9a-f]{1,2}",
    r"(yes|no)!{0,2}",
    r"[ \t\n]{1,3}x",
    r'"[a-c]{0,4}"',
    r"https?://(a|b)\.com",
    r"a*b*",
]
MAX_BYTES = 12


@lru_cache(maxsize=None)
def real(name: str):
    """A real tokenizer; its languages take its trie and A_BPE from the shared parts cache."""
    sources = {"cl100k": "tiktoken/cl100k_base.tiktoken.gz", "gpt2": "gpt2/vocab.json"}
    return load_tokenizer(require_shared() / sources[name])


def spelled_lengths(model) -> dict[int, int]:
    return {t: len(s) for t, s in model.spellings.items()}


def accepted(dfa, lengths: dict[int, int], budget: int) -> set[tuple[int, ...]]:
    """Accepted token sequences spelling at most ``budget`` base symbols."""
    found = set()

    def walk(q, seq, left):
        if q in dfa.finals:
            found.add(tuple(seq))
        for t, target in dfa.transitions[q].items():
            if lengths[t] <= left:
                seq.append(t)
                walk(target, seq, left - lengths[t])
                seq.pop()

    walk(dfa.start, [], budget)
    return found


def all_segmentations(symbols: tuple[int, ...], by_spelling: dict[tuple[int, ...], int], longest: int):
    if not symbols:
        yield ()
        return
    for k in range(1, min(longest, len(symbols)) + 1):
        token = by_spelling.get(symbols[:k])
        if token is not None:
            for rest in all_segmentations(symbols[k:], by_spelling, longest):
                yield (token, *rest)


def check_pattern(model, pattern: str, automaton=None, budget: int = MAX_BYTES, on_demand: bool = False) -> tuple[int, int]:
    """Each mode's whole-match language (``automaton``: an A_BPE of the caller's, else the shared parts')."""
    dfa = compile_regex(pattern, alphabet_for(model))
    assert count_strings(dfa, budget) < 50_000, "pattern set too large for brute force"
    matches = list(enumerate_strings(dfa, budget))
    encoder = ReferenceEncoder(model)
    lengths = spelled_lengths(model)

    def language(mode: str) -> TokenLanguage:
        return TokenLanguage(dfa, model, mode, pretokenize=False, automaton=automaton)

    canonical = language("canonical").dfa()
    assert accepted(canonical, lengths, budget) == {tuple(encoder.bpe(list(s))) for s in matches}, pattern
    by_spelling = {s: t for t, s in model.spellings.items()}
    longest = max(map(len, by_spelling))
    agnostic = language("agnostic").dfa()
    expected = {seg for s in matches for seg in all_segmentations(tuple(s), by_spelling, longest)}
    assert accepted(agnostic, lengths, budget) == expected, pattern
    direct = language("canonical-direct").dfa()
    assert equivalent(direct, canonical), pattern
    if on_demand:  # the lazy product, every state expanded, is the same language (whole match as one chunk)
        assert equivalent(language("canonical").on_demand().to_dfa(), canonical), pattern
    return len(expected), len(matches)


def test_canonicality_removes_spellings() -> None:
    spellings, matches = check_pattern(real("cl100k"), r"(hello|world)( (hello|world)){0,2}")
    assert spellings > 10 * matches  # the agnostic automaton accepts many tokenizations per match


def test_enough_patterns() -> None:
    assert len(PATTERNS) >= 20


@pytest.mark.parametrize("pattern", PATTERNS)
def test_small_tokenizer(pattern: str) -> None:
    model = random_byte_model(3, alphabet=b"ab1-x\" ", num_merges=25, pattern=PRESETS["gpt2"])
    automaton = build_canonical(MergeForest.from_model(model), "explicit")
    check_pattern(model, pattern, automaton, budget=8, on_demand=True)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("name", ["cl100k", "gpt2"])
def test_real_tokenizers(name: str, pattern: str) -> None:
    check_pattern(real(name), pattern)


def test_wikitext_words_with_end_of_word_suffix() -> None:
    model = load_tokenizer(require_shared() / "wikitext-bpe" / "tokenizer_4000.json")
    automaton = build_canonical(MergeForest.from_model(model), "explicit")
    for pattern in [r"(the|them|then|there)", r"[a-c]{1,3}", r"(un)?(do|done|doing)"]:
        check_pattern(model, pattern, automaton, budget=8, on_demand=True)


def test_empty_and_guided_api() -> None:
    model = real("cl100k")
    dfa = compile_regex(r"(hello|help) world", alphabet_for(model))
    promoted = TokenLanguage(dfa, model, pretokenize=False).dfa()
    guided = GuidedAutomaton(promoted)
    encoder = ReferenceEncoder(model)
    state = guided.start
    for token in encoder.bpe(list(alphabet_for(model).encode("help world"))):
        assert token in guided.allowed(state) and guided.allowed_mask(state) >> token & 1
        state = guided.step(state, token)
    assert guided.is_accepting(state)
    # after "hel", "lo world" or "p world" — but " world" is forced at the end
    forced_states = [q for q, chain in guided.forced.items() if chain]
    assert forced_states and all(len(promoted.transitions[q]) == 1 for q in forced_states)


@pytest.mark.parametrize("regex", ["(ab|c)+ ?[abc]{0,5}", "[abc ]{300}"])  # the transform walk, and the per-state walk
def test_lattice_arc_limit_is_exact_and_checked_before_the_product(regex: str) -> None:
    """``max_arcs`` stops the token lattice itself: at its arc count it passes, one below it raises."""
    from bpefst.automata.errors import ArcLimitExceeded
    from bpefst.promotion.agnostic import token_rows

    model = random_byte_model(5, alphabet=b"abc ", num_merges=12)
    pattern = compile_regex(regex, alphabet_for(model))
    trie = SpellingTrie.from_model(model)
    arcs = sum(map(len, token_rows(pattern, trie)))
    assert sum(map(len, token_rows(pattern, trie, max_arcs=arcs))) == arcs
    with pytest.raises(ArcLimitExceeded):
        token_rows(pattern, trie, max_arcs=arcs - 1)
    with pytest.raises(ArcLimitExceeded):
        TokenLanguage(pattern, model, pretokenize=False, limits=Limits(max_arcs=arcs - 1)).dfa()
