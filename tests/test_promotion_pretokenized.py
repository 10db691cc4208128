"""Pre-tokenization-aware canonical promotion against independent oracles.

(a) each chunker against ``regex.findall`` with the real pattern: every string
    over class representatives up to length 5 (o200k, with more classes: up to
    length 4, plus random strings of length 5 and 6 over the representatives),
    random longer strings over all members of the small classes, corpus lines,
    end-of-text cases;
(b) the promoted automaton accepts exactly ``{Tokenizer.encode_ordinary(s)}``
    over the pattern's (finite) language, for small random models and for the
    real GPT-2, cl100k and o200k tokenizers;
(c) agnostic ⊇ pre-tokenized canonical, and equality with whole-match
    canonical promotion on patterns that no chunk boundary cuts;
(d) the shared-row form (not minimized) on the same patterns: of all the
    agnostic sequences, ``accepts`` holds exactly for the encodings; it is
    trim, and its state and arc counts are those of its written-out rows;
(e) the on-demand form (:mod:`bpefst.promotion.on_demand`), expanded state by
    state: exactly the encodings, trim, and on large real patterns (e-mail,
    JSON) row by row equal to the shared-row form along random walks.
"""

from __future__ import annotations

import itertools
import random
from functools import lru_cache

import pytest
import regex

from bpefst.automata import accessible, coaccessible, count_strings, difference, enumerate_strings, equivalent, sampler, trim
from bpefst.automata.errors import ArcLimitExceeded
from bpefst.bpe import MergeForest, build_canonical
from bpefst.errors import BpefstError
from bpefst.pipeline.encoder import Tokenizer
from bpefst.automata.shared_rows import SharedRowDFA
from bpefst.promotion import GuidedAutomaton, PartsCache, TokenLanguage
from bpefst.promotion import canonical as canonical_module
from bpefst.promotion import pretokenized as pretokenized_module
from bpefst.promotion.chunking import chunker_for
from bpefst.promotion.on_demand import OnDemandCanonical
from bpefst.promotion.pretokenized import BOUNDARY, chunked_pattern, chunker_or_whole, shared_canonical_subsets
from bpefst.regex import alphabet_for, compile_regex
from bpefst.tokenizer import PRESETS, load_tokenizer
from conftest import corpus_prefix, require_shared
from small_models import random_byte_model

CHUNKED_PRESETS = ("gpt2", "cl100k", "o200k", "gpt2-digits")
EXHAUSTIVE_LENGTH = {"gpt2": 5, "cl100k": 5, "o200k": 4, "gpt2-digits": 5}  # o200k: 19 classes, 19**5 strings take ~30 s


# ---------------------------------------------------------------- (a) chunkers
def placements(chunker, text: str) -> set[tuple[int, ...]]:
    """Every boundary placement the chunker DFA accepts on ``text`` (cut positions)."""
    atoms = chunker.atoms_of_text(text)
    dfa, cut = chunker.dfa, chunker.boundary
    rows = dfa.transitions
    configs = {(dfa.start, ())}
    for i, atom in enumerate(atoms):
        if i:
            configs |= {(rows[q][cut], cuts + (i,)) for q, cuts in configs if cut in rows[q]}
        configs = {(rows[q][atom], cuts) for q, cuts in configs if atom in rows[q]}
    return {cuts for q, cuts in configs if q in dfa.finals}


def findall_cuts(preset: str, text: str) -> tuple[int, ...]:
    chunks = regex.findall(PRESETS[preset], text)
    assert "".join(chunks) == text
    return tuple(itertools.accumulate(len(c) for c in chunks[:-1]))


def check_texts(preset: str, texts) -> int:
    chunker = chunker_for(preset)
    count = 0
    for text in texts:
        assert placements(chunker, text) == {findall_cuts(preset, text)}, (preset, text, regex.findall(PRESETS[preset], text))
        count += 1
    return count


def members(chunker, atom: int, rng: random.Random, limit: int = 6) -> list[str]:
    """Up to ``limit`` code points of an atom: the first few and random ones."""
    ranges = chunker.atom_ranges[atom]
    first = [chr(c) for lo, hi in ranges[:3] for c in range(lo, min(hi, lo + 1) + 1)]
    size = sum(hi - lo + 1 for lo, hi in ranges)
    picks = []
    for _ in range(limit):
        k = rng.randrange(size)
        for lo, hi in ranges:
            if k <= hi - lo:
                picks.append(chr(lo + k))
                break
            k -= hi - lo + 1
    return [c for c in dict.fromkeys(first + picks) if not 0xD800 <= ord(c) <= 0xDFFF][:limit]


def representatives(chunker) -> list[str]:
    return [chr(ranges[0][0]) if letter != "P" else "!" for letter, ranges in zip(chunker.letters, chunker.atom_ranges)]


@pytest.mark.parametrize("preset", CHUNKED_PRESETS)
def test_chunker_exhaustive_over_class_representatives(preset: str) -> None:
    reps = representatives(chunker_for(preset))
    top = EXHAUSTIVE_LENGTH[preset] + 1
    texts = ("".join(reps[k] for k in combo) for n in range(1, top) for combo in itertools.product(range(len(reps)), repeat=n))
    assert check_texts(preset, texts) == sum(len(reps) ** n for n in range(1, top))


def test_o200k_chunker_random_class_strings_beyond_the_exhaustive_length() -> None:
    reps = representatives(chunker_for("o200k"))
    rng = random.Random(11)
    texts = ["".join(rng.choice(reps) for _ in range(n)) for n in (5, 6) for _ in range(60_000)]
    assert check_texts("o200k", texts) == 120_000


@pytest.mark.parametrize("preset", CHUNKED_PRESETS)
def test_chunker_random_strings_over_all_class_members(preset: str) -> None:
    chunker = chunker_for(preset)
    rng = random.Random(7)
    pools = [members(chunker, k, rng) for k in range(len(chunker.letters))]
    texts = []
    for _ in range(3000):
        n = rng.randint(6, 24)
        texts.append("".join(rng.choice(rng.choice(pools)) for _ in range(n)))
    assert check_texts(preset, texts) == 3000


@pytest.mark.parametrize("preset", CHUNKED_PRESETS)
def test_chunker_end_of_text_cases(preset: str) -> None:
    texts = ["a  ", "a \n", "a\n", " ", "\n\n", "a \t", "a\t b", "x  \n y", "x \n\n", "1  \r\n", "'s  ", "'", "a'", " '",
             "a   b", "a \n b", "\t1", " 1", "\u00a0x", "\u00a0 x", "'ll ", "'LL", "'ſ", "x\r\n\r\n", "!!\n\n x", " !\r\n",
             "%\n/", "%\n/!", "a\n/\n", " /\r\n/x", "\n  ", "x\n\t", "ªA", "Aª", "AªA", "ABc", "aBC", "HELLOworld",
             "DON'T", "don'tx", "A'S", "a'", "A'r", "a'l", "ª'll", "\u0300", " \u0300", "!\u0300A", "A\u0300B", "e\u0301'S",
             "\u0300\u0300A", "ǅx", "ǅ", "Ⅻ1", "'A", " 'A", "/a", "/A"]
    assert check_texts(preset, texts) == len(texts)


@pytest.mark.parametrize("preset", CHUNKED_PRESETS)
@pytest.mark.parametrize("corpus", ["pydocs", "fortunes"])
def test_chunker_on_corpus_lines(preset: str, corpus: str) -> None:
    lines = corpus_prefix(corpus, 150_000).splitlines(keepends=True)
    texts = lines + ["".join(lines[i : i + 3]) for i in range(0, len(lines) - 3, 3)]
    assert check_texts(preset, (t for t in texts if t)) > 1000


@pytest.mark.parametrize("preset", CHUNKED_PRESETS)
def test_the_chunker_state_kept_inside_a_character_moves_as_the_one_it_stands_for(preset: str) -> None:
    """mid_character_chunks against its definition, from the decoder's own exits: for every decoder state
    (the atoms its character can still end in found by a walk over every byte path) and chunker state, the
    state kept is the first that moves alike on each of those atoms, and -1 exactly where none is taken."""
    decoder = pretokenized_module.utf8_decoder(preset)
    chunks = chunker_for(preset).dfa.transitions

    def endings(d: int) -> set[int]:
        found, stack = set(), [d]
        while stack:
            for v in decoder[stack.pop()].values():
                if v < 0:
                    found.add(-1 - v)
                else:
                    stack.append(v)
        return found

    table = pretokenized_module.mid_character_chunks(preset)
    assert len(table) == len(decoder)
    for d in range(1, len(decoder)):
        atoms = endings(d)
        for c, kept in enumerate(table[d]):
            moves = [chunks[c].get(a) for a in sorted(atoms)]
            if all(move is None for move in moves):
                assert kept == -1
            else:
                assert kept == min(k for k in range(len(chunks)) if [chunks[k].get(a) for a in sorted(atoms)] == moves)


# ---------------------------------------------------------------- (b) against encode_ordinary
def accepted_all(dfa, limit: int = 200_000) -> set[tuple[int, ...]]:
    """Every sequence a DFA with a finite language accepts."""
    found: set[tuple[int, ...]] = set()

    def walk(q: int, seq: list[int]) -> None:
        assert len(found) < limit and len(seq) < 64, "language too large"
        if q in dfa.finals:
            found.add(tuple(seq))
        for t, r in dfa.transitions[q].items():
            seq.append(t)
            walk(r, seq)
            seq.pop()

    walk(dfa.start, [])
    return found


def expected_encodings(model, tokenizer: Tokenizer, pattern_dfa) -> set[tuple[int, ...]]:
    texts = (b"".join(model.vocab[i] for i in s).decode("utf-8") for s in enumerate_strings(pattern_dfa, 64))
    return {tuple(tokenizer.encode_ordinary(text)) for text in texts}


PARTS = PartsCache(size=1)  # a real tokenizer's trie and A_BPE, kept while its tests run


def language(dfa, model, mode: str = "canonical", automaton=None, pretokenize: bool = True) -> TokenLanguage:
    """``dfa``'s language over a small model's own A_BPE (``automaton``), or over a real model's cached parts."""
    if automaton is not None:
        return TokenLanguage(dfa, model, mode, pretokenize, automaton=automaton)
    return TokenLanguage(dfa, model, mode, pretokenize, parts=PARTS)


def check_against_encoder(model, tokenizer, pattern: str, automaton=None) -> int:
    dfa = compile_regex(pattern, alphabet_for(model))
    assert count_strings(dfa, 64) < 30_000, pattern
    canonical = language(dfa, model, automaton=automaton)
    promoted = canonical.dfa()
    expected = expected_encodings(model, tokenizer, dfa)
    assert accepted_all(promoted) == expected, pattern
    agnostic = language(dfa, model, "agnostic", automaton).dfa()
    assert difference(promoted, agnostic).is_empty(), pattern  # (c) agnostic contains it
    check_shared_rows(model, canonical.parts, dfa, expected, agnostic)
    check_on_demand(model, automaton, dfa, expected)
    return len(expected)


def check_on_demand(model, automaton, dfa, expected: set) -> None:
    """(e) the on-demand form, every state expanded, accepts exactly the encodings and is trim."""
    lazy = language(dfa, model, automaton=automaton).on_demand()
    assert isinstance(lazy, OnDemandCanonical)
    written = lazy.to_dfa()
    assert accepted_all(written) == expected
    if expected:
        assert all(accessible(written)) and all(coaccessible(written))  # liveness leaves no dead end
    for k in range(written.num_states):  # step without a row, and the explicit mask, agree with the row
        row = written.transitions[k]
        assert lazy.allowed_mask(k) == sum(1 << t for t in row)
    fresh = language(dfa, model, automaton=automaton).on_demand()
    for seq in expected:
        state = fresh.start
        for t in seq:
            state = fresh.step(state, t)
        assert state in fresh.finals


def check_shared_rows(model, parts, dfa, expected: set, agnostic) -> None:
    """(d) the shared-row form steps exactly through the encodings, is trim (built over the live lattice, the
    states it marks dead are exactly those not reached), and counts its arcs right."""
    trie, automaton = parts.trie, parts.automaton
    chunked = chunked_pattern(dfa, model, chunker_or_whole(dfa, model, model.pattern))
    if not any(BOUNDARY in row for row in chunked.transitions):
        return  # no match is cut: the language takes the whole-match route
    product = OnDemandCanonical(chunked, trie, automaton, BOUNDARY)
    shared = shared_canonical_subsets(product)
    if count_strings(agnostic, 64) <= 100_000:
        spellings = accepted_all(agnostic)  # every spelling of every match
    else:  # real vocabularies: the encodings, and uniform samples of all spellings (nearly all not canonical)
        draw = sampler(agnostic, 64)
        rng = random.Random(7)
        spellings = expected | {draw(rng) for _ in range(3000)}
    for seq in spellings:  # accepted iff it is the encoding
        assert shared.accepts(seq) == (seq in expected), seq
    written = shared.to_dfa()
    reached, useful = accessible(written), coaccessible(written)
    live = [s for s in range(len(shared.parts)) if not shared.dead[s]]
    if expected:  # built over the live lattice: every state it numbers reaches a final state, so dead = unreached
        assert [s for s in range(written.num_states) if reached[s]] == live
        assert all(useful[s] for s in live)
    else:
        assert not live and not written.finals
    assert not any(written.transitions[s] for s in range(len(shared.parts)) if shared.dead[s])
    assert not [r for s in live for r in written.transitions[s].values() if shared.dead[r]]
    assert shared.num_states == len(live) == trim(written).num_states
    assert shared.num_arcs == written.num_arcs == sum(map(len, (written.transitions[s] for s in live)))
    assert all(shared.arc_count(s) == len(written.transitions[s]) for s in live)
    # max_arcs counts, while building, at most the largest row per state numbered (reached or not), and stops the build
    numbered = len(shared.parts) * max(len(product.lattice_row(q)) for q in range(len(chunked.transitions)))
    assert shared_canonical_subsets(product, max_arcs=numbered).num_arcs == shared.num_arcs
    if shared.num_arcs:
        with pytest.raises(ArcLimitExceeded):
            shared_canonical_subsets(product, max_arcs=0)


SMALL_PATTERNS = [
    r"(ab|a1|1\.)( ?(ab|1|b\.)){0,2}",
    r"(a|b| ){1,5}",
    r"a'(s|ll|x)( b)?",
    r"[ab]{1,2} {1,3}\n?",
    r"1{1,5}\.?a?",
    r"( |\n){1,3}[ab]",
    r"(ab|1\.)?( (a|b1)){0,2}",  # matches the empty text (zero chunks), and cuts
    r"a?",  # matches the empty text, cuts nothing
]


# o200k: letter case decides where a word ends, and line breaks and slashes trail punctuation
SMALL_O200K_PATTERNS = [
    r"(a|A|S){1,4}('S|'s)?",
    r"(\.|a|A)(\n|/){1,3}",
    r"(A|\.)( |\n){1,3}",
    r" ?\.(\.|/)?(aA|Aa)",
]


@pytest.mark.parametrize("preset", CHUNKED_PRESETS)
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("bitsets", ["own", "restricted"])
def test_small_models(preset: str, seed: int, bitsets: str, monkeypatch) -> None:
    """``bitsets``: explicit A_BPE's banned bitsets over all tokens, or restricted to the lattice's tokens (both forced)."""
    monkeypatch.setattr(canonical_module, "OWN_BITSETS_BELOW", 0)
    monkeypatch.setattr(canonical_module, "OWN_BITSETS_SHARE", 0.0 if bitsets == "own" else 2.0)
    model = random_byte_model(seed, alphabet=b"ab1. '\ns", num_merges=30, pattern=PRESETS[preset])
    automaton = build_canonical(MergeForest.from_model(model), "explicit")
    for pattern in SMALL_PATTERNS:
        check_against_encoder(model, Tokenizer(model), pattern, automaton)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_small_o200k_models(seed: int) -> None:
    model = random_byte_model(seed, alphabet=b"aAS1. '\n/", num_merges=30, pattern=PRESETS["o200k"])
    automaton = build_canonical(MergeForest.from_model(model), "explicit")
    for pattern in SMALL_O200K_PATTERNS:
        check_against_encoder(model, Tokenizer(model), pattern, automaton)


REAL_PATTERNS = [
    r"[1-4]{1,4}(\.[05]{1,2})?",  # digits with punctuation
    r"20[12][0-9]-(0[1-9]|1[0-2])-[0-3][0-9]",  # dates
    r"(a|b| ){1,6}",
    r"(hello|world)( {1,3}(hello|world)){0,2}",  # words with spaces
    r"(I|you|They|HE)'(ll|ve|re|d|s|LL|S)",  # contractions
    r"(ok|no)[ \t]{0,3}\n{0,2}",  # trailing whitespace and newlines
    r"x( {1,3}|\t| \n)(y|1|!)",  # whitespace runs before a word
    r"[àéü]{1,2}( [αβ]{1,2})?[.,]?",  # non-ASCII letters
    r"(😀|👍|🎉){1,3}( ?!)?",  # emoji
    r"'[a-c' ]{0,3}",  # apostrophes that start no contraction
    r"(\r\n|\n|  ){1,3}[a-c]?",
    r"((hello|world)( (hello|world))?)?",  # the empty text: no tokens
]
# o200k's differences from cl100k: case runs, marks, contraction suffixes, slashes after punctuation
O200K_PATTERNS = [
    r"(Hello|HELLO|hello)(World|WORLD|world)?('s|'S|'ll)?",
    "(e|E|a)\u0301{1,2}(A|b)?",  # combining marks (\p{M}: letter-like and punctuation-like)
    "(\u00aa|A|a){1,3}",  # ª is Lo: lower and upper
    r"(%|!|a)[\r\n/]{1,3}",
    r"(ok|\.)[ \n]{1,3}",
    " ?\u0300(a|A|!)?",
]


@lru_cache(maxsize=None)
def real(name: str):
    sources = {"cl100k": "tiktoken/cl100k_base.tiktoken.gz", "o200k": "tiktoken/o200k_base.tiktoken.gz",
               "gpt2": "gpt2/vocab.json"}
    model = load_tokenizer(require_shared() / sources[name])
    return model, Tokenizer(model)


def test_enough_real_patterns() -> None:
    assert len(REAL_PATTERNS) >= 8


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2"])
def test_real_tokenizers(name: str) -> None:
    model, tokenizer = real(name)
    patterns = REAL_PATTERNS + (O200K_PATTERNS if name == "o200k" else [])
    total = sum(check_against_encoder(model, tokenizer, pattern) for pattern in patterns)
    assert total > 10_000


# ---------------------------------------------------------------- (c) one chunk: same as before
ONE_CHUNK_PATTERNS = [r"(hello|help|world)", r"(hello)?", r"[a-z]{1,2}", r" (the|them|then)", r"[0-9]{1,3}", r"(!|\?|\.){1,3}"]


@pytest.mark.parametrize("name", ["cl100k", "o200k", "gpt2"])
def test_one_chunk_patterns_unchanged(name: str) -> None:
    model, _ = real(name)
    for pattern in ONE_CHUNK_PATTERNS:
        dfa = compile_regex(pattern, alphabet_for(model))
        new = language(dfa, model).dfa()
        old = language(dfa, model, pretokenize=False).dfa()
        assert equivalent(new, old), pattern


def test_uncut_patterns_keep_canonical_direct_and_cut_ones_refuse_it() -> None:
    model = random_byte_model(3, alphabet=b"ab1 ", num_merges=20, pattern=PRESETS["cl100k"])
    dfa = compile_regex(r"(ab|ba){1,3}", alphabet_for(model))
    direct = TokenLanguage(dfa, model, "canonical-direct").dfa()
    assert equivalent(direct, TokenLanguage(dfa, model).dfa())
    with pytest.raises(BpefstError, match="canonical-direct does not model"):
        TokenLanguage(compile_regex(r"ab 1", alphabet_for(model)), model, "canonical-direct")


def test_unsupported_patterns_are_refused() -> None:
    model = random_byte_model(3, alphabet=b"ab1 ", num_merges=20, pattern=r"\w+|\s")
    dfa = compile_regex(r"ab", alphabet_for(model))
    with pytest.raises(BpefstError, match="custom pre-tokenization pattern.*--no-pretokenize"):
        TokenLanguage(dfa, model)
    o200k = random_byte_model(3, alphabet=b"ab1 ", num_merges=20, pattern=PRESETS["o200k"])  # o200k is modelled
    assert not TokenLanguage(dfa, o200k).dfa().is_empty()
    assert not TokenLanguage(dfa, model, pretokenize=False).dfa().is_empty()  # the old behaviour needs no pattern rules


def test_whitespace_pattern_only_when_no_match_is_cut() -> None:
    model = random_byte_model(3, alphabet=b"ab1 ", num_merges=20, pattern=PRESETS["whitespace"])
    one_word = compile_regex(r"(ab|b1){1,2}", alphabet_for(model))
    assert equivalent(TokenLanguage(one_word, model).dfa(), TokenLanguage(one_word, model, pretokenize=False).dfa())
    with pytest.raises(BpefstError, match="whitespace pre-tokenizer"):
        TokenLanguage(compile_regex(r"ab a", alphabet_for(model)), model)


def test_guided_generation_over_shared_rows() -> None:
    """``shared_rows()`` gives the shared-row form; decoding it follows cl100k's own encodings."""
    model, tokenizer = real("cl100k")
    dfa = compile_regex(r"[А-Яа-я]{2,5}( [А-Яа-я]{2,5})?", alphabet_for(model))
    shared = language(dfa, model).shared_rows()
    assert isinstance(shared, SharedRowDFA)
    guided = GuidedAutomaton(shared)
    rng = random.Random(3)
    letters = [chr(c) for c in range(ord("А"), ord("я") + 1)]
    for _ in range(300):
        words = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 5))) for _ in range(rng.randint(1, 2))]
        ids = tokenizer.encode_ordinary(" ".join(words))
        state = guided.start
        for token in ids:
            assert token in guided.allowed(state) and guided.allowed_mask(state) >> token & 1
            state = guided.step(state, token)
        assert guided.is_accepting(state)
        spelled = [i for ch in " ".join(words) for i in tokenizer.encode_ordinary(ch)]  # one character at a time
        if spelled != ids:
            assert not shared.accepts(spelled)
    # after "hel", "lo world" or "p world", and " world" is forced at the end
    shared = language(compile_regex(r"(hello|help) world", alphabet_for(model)), model).shared_rows()
    guided = GuidedAutomaton(shared)
    chains = {q: guided.forced_chain(q) for q in range(len(shared.parts)) if not shared.dead[q]}
    assert [tokenizer.decode(chain) for chain in chains.values() if chain] == [" world"]
    for q, chain in chains.items():
        assert bool(chain) == (q not in shared.finals and shared.arc_count(q) == 1)


@pytest.mark.parametrize("name", ["gpt2", "cl100k"])
def test_on_demand_rows_equal_shared_rows_on_large_patterns(name: str) -> None:
    """Patterns too large to write out: along random walks, each on-demand state has the shared-row state's arcs."""
    model, tokenizer = real(name)
    rng = random.Random(5)
    for pattern in (r"[a-z0-9._]{1,12}@[a-z]{1,8}\.(com|org|net)", r'\{"name": "[A-Za-z ]{1,10}", "age": [0-9]{1,3}\}'):
        dfa = compile_regex(pattern, alphabet_for(model))
        shared, lazy = language(dfa, model).shared_rows(), language(dfa, model).on_demand()
        for _ in range(15):
            a, b = lazy.start, shared.start
            while True:
                row_a, row_b = lazy.row(a), shared.row(b)
                assert set(row_a) == set(row_b) and (a in lazy.finals) == (b in shared.finals)
                if not row_a or (a in lazy.finals and rng.random() < 0.2):
                    break
                token = rng.choice(sorted(row_a))
                assert lazy.step(a, token) == row_a[token]
                a, b = row_a[token], row_b[token]
        text = "jo.doe_1@mail.org" if "@" in pattern else '{"name": "Ann Lee", "age": 42}'
        state = lazy.start  # the real encoding walks through, and the one-byte spelling does not
        for token in tokenizer.encode_ordinary(text):
            state = lazy.step(state, token)
        assert state in lazy.finals
        state = lazy.start
        for token in [tokenizer.encode_ordinary(ch)[0] for ch in text]:
            state = lazy.step(state, token) if state is not None else None
        assert state is None or state not in lazy.finals


def test_guided_generation_on_demand() -> None:
    """GuidedAutomaton over the on-demand form follows cl100k's own encodings of random e-mail addresses."""
    model, tokenizer = real("cl100k")
    dfa = compile_regex(r"[a-z0-9._]{1,12}@[a-z]{1,8}\.(com|org|net)", alphabet_for(model))
    guided = GuidedAutomaton(language(dfa, model).on_demand())
    rng = random.Random(9)
    for _ in range(50):
        local = "".join(rng.choice("abcxyz09._") for _ in range(rng.randint(1, 12)))
        text = f"{local}@{''.join(rng.choice('mailbox') for _ in range(rng.randint(1, 8)))}.{rng.choice(['com', 'org', 'net'])}"
        state = guided.start
        for token in tokenizer.encode_ordinary(text):
            assert guided.allowed_mask(state) >> token & 1
            state = guided.step(state, token)
        assert guided.is_accepting(state)
