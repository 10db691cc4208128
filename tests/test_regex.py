"""Layer 2: the regex compiler agrees with ``regex.fullmatch`` (the oracle).

For every pattern of a test set: strings sampled from the DFA must fully
match; random strings (biased to the pattern's characters and to mutations
of accepted strings) must be accepted exactly when they fully match; random
byte strings that are not valid UTF-8 must be rejected.  Random patterns
from a small grammar are checked exhaustively on short strings.
"""

from __future__ import annotations

import random
from array import array
from functools import lru_cache

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpefst.automata import DFA, NFA, StateLimitExceeded, enumerate_strings, minimize, sampler, shortest_accepted, trim
from bpefst import native
from bpefst.errors import BpefstError
from bpefst.regex import ByteAlphabet, CharAlphabet, RegexSyntaxError, compile_regex
from bpefst.regex.compiler import _minimal_natively, minimal_dfa, minimal_of_dfa
from bpefst.regex.charsets import scalar_ranges
from bpefst.regex.utf8 import utf8_decoder, utf8_dfa

BYTES = ByteAlphabet()

PATTERNS = [
    r"\d{4}-\d{2}-\d{2}",  # ISO date
    r"(0[1-9]|1[0-2])/(0[1-9]|[12]\d|3[01])/\d{2,4}",  # US date
    r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?",  # JSON number
    r"[+-]?\d{1,3}(,\d{3})*",
    r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z]{2,})+",  # e-mail
    r'"([^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"',  # JSON string
    r'\{"name": ?"[a-z]+", ?"age": ?\d+\}',  # JSON object fragment
    r"(true|false|null)",
    r"\[(\d+(, ?\d+)*)?\]",  # JSON array of ints
    r"(cat|dog|bird|catfish|do)s?",  # alternation of words
    r"colou?r",
    r"[α-ω]+",
    r"\p{Lu}\p{Ll}*",
    r"\p{Greek}{2,3}",
    r"[^a-z\s]{1,4}",
    r".{0,3}",
    r"(?s).{2}",
    r"\w+",
    r"\S+\s\S+",
    r"\P{L}*",
    r"(?i)hello( wörld)?",
    r"(?i:[a-f]+)x",
    r"café|naïve|日本語",
    r"\u00e9\x41\N{GREEK SMALL LETTER ALPHA}\U0001F600",
    r"(ab|a)*b?",
    r"^(a|b)*abb$",
    r"a{3}|b{2,}|c{,2}",
    r"[\d\p{Han}]+",
    r"(?a)\w+",
    r"[^\W\d_]+",
    r"\d+(?:\.\d+)?%",
    r"(?P<year>\d{4})-(?<m>\d\d)",
    r"a*?b+?c??x{1,2}?",
    r"[]a]+|[^]a]",
    r"\t\n\\\.\*\{\}|a{}|b{x}",
    r"[[:alpha:]0-9]+",
    r"\AHello\Z|^bye$",
    r"(?#comment)ab(?#another)*c",
    r"[^\x00-\x7f]+",
    r"(\p{L}|\p{N}|_)+",
    r"",
]

EXTRA_CHARS = "aAbBzZ019 \n\t\r-_.,@\"'\\/{}[]()éÉαΩ日本ß\x00\x7f\x80\u2028\U0001F600Ⅻ٣"


@lru_cache(maxsize=None)
def compiled(pattern: str) -> DFA:
    return compile_regex(pattern, BYTES)


@lru_cache(maxsize=None)
def samples(pattern: str, count: int = 60) -> tuple[str, ...]:
    shortest = shortest_accepted(compiled(pattern))
    if shortest is None:
        return ()
    draw = sampler(compiled(pattern), len(shortest) + 12)
    rng = random.Random(pattern)
    out = []
    for _ in range(count):
        s = draw(rng)
        if s is None:
            break
        out.append(bytes(s).decode("utf-8"))  # strict: every accepted byte string is valid UTF-8
    return tuple(out)


def char_pool(pattern: str) -> list[str]:
    chars = set(EXTRA_CHARS) | set(pattern)
    for s in samples(pattern):
        chars.update(s)
    return sorted(chars)


def agrees(pattern: str, text: str) -> None:
    expected = regex.fullmatch(pattern, text) is not None
    assert compiled(pattern).accepts(text.encode("utf-8")) == expected, (pattern, text)


def test_pattern_set_is_large_enough():
    assert len(PATTERNS) >= 20


@pytest.mark.parametrize("pattern", PATTERNS)
def test_sampled_strings_fully_match(pattern):
    dfa = compiled(pattern)
    assert dfa == minimize(dfa)  # trimmed and minimal
    found = samples(pattern)
    assert found, pattern
    for text in found:
        assert regex.fullmatch(pattern, text), (pattern, text)


@pytest.mark.parametrize("pattern", PATTERNS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_strings_agree_with_regex(pattern, data):
    pool = char_pool(pattern)
    chars = st.one_of(st.sampled_from(pool), st.characters(blacklist_categories=("Cs",)))
    base = samples(pattern)
    if base and data.draw(st.booleans()):
        text = list(data.draw(st.sampled_from(base)))
        for _ in range(data.draw(st.integers(0, 3))):  # mutate an accepted string
            op = data.draw(st.sampled_from(("insert", "delete", "replace")))
            k = data.draw(st.integers(0, len(text)))
            if op == "insert":
                text.insert(k, data.draw(chars))
            elif text and k < len(text):
                if op == "delete":
                    del text[k]
                else:
                    text[k] = data.draw(chars)
        text = "".join(text)
    else:
        text = "".join(data.draw(st.lists(chars, max_size=12)))
    agrees(pattern, text)


@pytest.mark.parametrize("pattern", [r".*", r"(?s).*", r"[^a]*", r"\p{L}*", r"\W*", r"[\x80-\U0010ffff]*"])
@settings(max_examples=150, deadline=None)
@given(raw=st.binary(max_size=10))
def test_byte_strings_accepted_iff_valid_utf8_and_matching(pattern, raw):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        assert not compiled(pattern).accepts(raw)
        return
    agrees(pattern, text)


@pytest.mark.parametrize(
    "raw",
    [
        b"\xc0\x80",  # overlong NUL
        b"\xc1\xbf",  # overlong
        b"\xe0\x80\x80",  # overlong 3-byte
        b"\xf0\x80\x80\x80",  # overlong 4-byte
        b"\xed\xa0\x80",  # surrogate U+D800
        b"\xed\xbf\xbf",  # surrogate U+DFFF
        b"\xf4\x90\x80\x80",  # U+110000
        b"\xf5\x80\x80\x80",
        b"\x80",  # stray continuation byte
        b"\xe2\x82",  # truncated
        b"\xff",
    ],
)
def test_invalid_utf8_is_rejected(raw):
    for pattern in (r"(?s).*", r".", r"[^a]+", r"\W+"):
        assert not compiled(pattern).accepts(raw)


def test_utf8_boundaries():
    dot = compiled(r"(?s).")
    for cp in (0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF):
        assert dot.accepts(chr(cp).encode("utf-8")), hex(cp)
    assert not compiled(".").accepts(b"\n")
    assert compiled("(?s).").accepts(b"\n")


def test_utf8_automaton_of_ranges_matches_encoding():
    rng = random.Random(7)
    for _ in range(30):
        points = sorted(rng.sample(range(0, 0x110000), 6))
        ranges = [(points[i], points[i + 1]) for i in (0, 2, 4)]
        ranges = [(lo, hi) for lo, hi in ranges if not (lo <= 0xDFFF and hi >= 0xD800)]
        dfa = utf8_dfa(tuple(ranges))
        assert dfa.num_states == minimize(dfa).num_states  # minimal already
        for _ in range(50):
            cp = rng.choice([rng.randrange(0x110000), *(b for r in ranges for b in r), *(b + 1 for r in ranges for b in r)])
            if 0xD800 <= cp <= 0xDFFF or cp > 0x10FFFF:
                continue
            inside = any(lo <= cp <= hi for lo, hi in ranges)
            assert dfa.accepts(chr(cp).encode("utf-8")) == inside


def _decoded(rows, raw: bytes):
    """Where ``raw`` leads in a ``utf8_decoder``: the class its last byte ends a character in, "mid" when it stops
    inside one, None where a byte has no arc (or a character ended before the last byte)."""
    d = 0
    for i, byte in enumerate(raw):
        nxt = rows[d].get(byte)
        if nxt is None:
            return None
        if nxt < 0:
            return -1 - nxt if i == len(raw) - 1 else None
        d = nxt
    return "mid"


@pytest.mark.parametrize("seed", range(12))
def test_utf8_class_decoder_reads_each_character_into_its_class(seed):
    """utf8_decoder against Python's UTF-8 encoder: every scalar value of a class ends in that class (the
    classes: random disjoint ranges, or the real presets' atoms), one of no class has no path, invalid UTF-8
    has none either, and the DFA is minimal (each class's ending a final state of its own)."""
    from bpefst.promotion.chunking import chunker_for

    rng = random.Random(seed)
    if seed < 3:
        classes = chunker_for(("gpt2", "cl100k", "o200k")[seed]).atom_ranges
    else:
        cuts = sorted(rng.sample(range(1, 0x110000), 40))
        spans = [(lo, hi - 1) for lo, hi in zip([0] + cuts, cuts + [0x110000])]
        classes = [[] for _ in range(rng.randrange(2, 6))]
        for lo, hi in spans:
            for part in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
                if part[0] <= part[1] and rng.random() < 0.8:
                    classes[rng.randrange(len(classes))].append(part)
        classes = [tuple(ranges) for ranges in classes]
    rows = utf8_decoder(classes)
    edges = [b for ranges in classes for lo, hi in ranges for b in (lo - 1, lo, hi, hi + 1)]
    points = edges + [rng.randrange(0x110000) for _ in range(3000)] + [0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x10000]
    for cp in points:
        if not 0 <= cp <= 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
            continue
        raw = chr(cp).encode("utf-8")
        owner = next((k for k, ranges in enumerate(classes) if any(lo <= cp <= hi for lo, hi in ranges)), None)
        assert _decoded(rows, raw) == owner, hex(cp)
        for cut in range(1, len(raw)):  # a character's prefix stops inside it, or dies where no class goes on
            assert _decoded(rows, raw[:cut]) in ("mid", None)
    for raw in (b"\x80", b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xf0\x80\x80\x80",
                b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xff"):
        assert _decoded(rows, raw) is None, raw
    # minimal: with class k's ending a final state of its own (a loop on 256 + k tells them apart), nothing merges
    ends = len(rows)
    transitions = [{b: (ends - 1 - v if v < 0 else v) for b, v in row.items()} for row in rows]
    transitions += [{256 + k: ends + k} for k in range(len(classes))]
    dfa = DFA(transitions, 0, frozenset(range(ends, ends + len(classes))), check=False)
    assert minimize(dfa).num_states == trim(dfa).num_states


def test_unicode_classes_use_the_oracles_tables():
    ranges = scalar_ranges(r"\p{L}")
    rng = random.Random(3)
    for _ in range(2000):
        cp = rng.randrange(0x110000)
        if 0xD800 <= cp <= 0xDFFF:
            continue
        inside = any(lo <= cp <= hi for lo, hi in ranges)
        assert inside == bool(regex.fullmatch(r"\p{L}", chr(cp)))


def test_unspellable_literal_empties_its_branch_only():
    assert compile_regex("\ud800", BYTES).is_empty()
    both = compile_regex("a|\ud800", BYTES)
    assert both == compile_regex("a", BYTES)


def test_byte_alphabet_with_ids():
    mapping = {b: 1000 + b for b in range(256) if b != ord("b")}
    alphabet = ByteAlphabet(mapping)
    dfa = compile_regex("a+|b", alphabet)
    assert dfa.accepts([1000 + ord("a")] * 3)
    assert not dfa.accepts([ord("a")])
    assert dfa == compile_regex("a+", alphabet)  # 'b' cannot be spelled
    assert alphabet.encode("ab") is None


@pytest.mark.parametrize("pattern", ["a+|b", r"[\u00e9-\u4e00]{2,5}x", r"(ab|cd)*[0-9]+", r"\p{L}{1,4}", "", r"[^a]*"])
def test_byte_alphabet_with_every_byte_renamed_gives_minimize_of_the_relabelled_dfa(pattern: str) -> None:
    """With one id per byte (GPT-2's byte tokens) the relabelled DFA is only renumbered, not minimized again:
    the result must be what minimizing it gives."""
    ids = list(range(256))
    random.Random(7).shuffle(ids)
    alphabet = ByteAlphabet(dict(zip(range(256), ids)))
    raw = compile_regex(pattern, BYTES)
    relabelled = DFA([{ids[b]: r for b, r in row.items()} for row in raw.transitions], raw.start, raw.finals)
    assert compile_regex(pattern, alphabet) == minimize(relabelled)


def test_byte_alphabet_drops_arcs_on_symbols_that_are_no_bytes() -> None:
    """An automaton read from a file may carry symbols past 255: their arcs go, and the rest is minimized."""
    alphabet = ByteAlphabet({b: 255 - b for b in range(256)})
    raw = DFA([{ord("a"): 1, 300: 2}, {}, {ord("b"): 1}], 0, frozenset({1}))
    assert alphabet.finish(raw) == minimize(DFA([{255 - ord("a"): 1}, {}], 0, frozenset({1})))


# ------------------------------------------------------------- random patterns
_ATOMS = ["a", "b", "c", ".", "[ab]", "[^a]", r"\d", "[a-c1]", r"\w", "(?:)", "1"]


def _pattern_strategy():
    atom = st.sampled_from(_ATOMS)

    def extend(inner):
        quant = st.sampled_from(["*", "+", "?", "{2}", "{0,2}", "{1,}", "{,1}", "*?"])
        return st.one_of(
            st.builds(lambda x, q: f"(?:{x}){q}", inner, quant),
            st.builds(lambda xs: "".join(xs), st.lists(inner, min_size=2, max_size=3)),
            st.builds(lambda xs: "(" + "|".join(xs) + ")", st.lists(inner, min_size=2, max_size=3)),
        )

    return st.recursive(atom, extend, max_leaves=6)


_ALL_SHORT = ["".join(t) for n in range(5) for t in __import__("itertools").product("ab1\n", repeat=n)]


@settings(max_examples=150, deadline=None)
@given(pattern=_pattern_strategy())
def test_random_patterns_agree_exhaustively(pattern):
    dfa = compile_regex(pattern, BYTES)
    for text in _ALL_SHORT:
        assert dfa.accepts(text.encode()) == (regex.fullmatch(pattern, text) is not None), (pattern, text)


# ------------------------------------------------------------ char alphabets
SMALL_CHARS = "abcdefghijklmnopqrstuvwxyzAB0123456789 -.@éα"
SMALL_IDS = {c: 10 + 3 * i for i, c in enumerate(SMALL_CHARS)}
SMALL = CharAlphabet({**SMALL_IDS, "xyz": 999})  # multi-character symbols are ignored
DECODE = {v: k for k, v in SMALL_IDS.items()}


@pytest.mark.parametrize("pattern", [p for p in PATTERNS if "(?a)" not in p] + [r"ß|a", r"[日a]b"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_char_alphabet_agrees_with_regex(pattern, data):
    dfa = compile_regex(pattern, SMALL)
    assert dfa.alphabet() <= SMALL.symbols
    text = "".join(data.draw(st.lists(st.sampled_from(SMALL_CHARS), max_size=10)))
    assert dfa.accepts(SMALL.encode(text)) == (regex.fullmatch(pattern, text) is not None)
    draw = sampler(dfa, 12)
    seq = draw(random.Random(data.draw(st.integers(0, 1000))))
    if seq is not None:
        assert regex.fullmatch(pattern, "".join(DECODE[s] for s in seq))


def test_char_alphabet_unspellable_branch_is_empty():
    assert compile_regex("ß|ab", SMALL) == compile_regex("ab", SMALL)
    assert compile_regex("日", SMALL).is_empty()
    assert compile_regex("[^a-z]", SMALL).alphabet() == {SMALL_IDS[c] for c in SMALL_CHARS if not "a" <= c <= "z"}


MARKED = CharAlphabet({**{c: i for i, c in enumerate("abc")}, **{c + "▁": 10 + i for i, c in enumerate("abc")}, "▁": 50}, end_of_word_suffix="▁")


@pytest.mark.parametrize("pattern", ["ab|b+", "a*", "(a|b)c?", "[abc]{2,3}", ".", "", "ab▁c"])
def test_end_of_word_suffix_marks_the_last_character(pattern):
    dfa = compile_regex(pattern, MARKED)
    plain = {i: c for i, c in enumerate("abc")} | {50: "▁"}
    marked = {10 + i: c for i, c in enumerate("abc")}
    accepted = set(enumerate_strings(dfa, 4))
    for seq in accepted:  # every accepted sequence: plain symbols, then one marked symbol
        assert seq and all(s in plain for s in seq[:-1]) and seq[-1] in marked
        word = "".join(plain[s] for s in seq[:-1]) + marked[seq[-1]]
        assert regex.fullmatch(pattern, word)
    import itertools

    for n in range(1, 5):
        for t in itertools.product("abc▁", repeat=n):
            word = "".join(t)
            spelled = MARKED.encode(word)
            if spelled is not None and regex.fullmatch(pattern, word):
                assert tuple(spelled) in accepted
    assert not dfa.accepts([])  # the empty word is never accepted


def test_wikitext_alphabet(shared_data):
    from bpefst.tokenizer import load_tokenizer

    model = load_tokenizer(shared_data / "wikitext-bpe" / "tokenizer_4000.json")
    alphabet = CharAlphabet.from_model(model)
    dfa = compile_regex(r"[Tt]he|cats?", alphabet)
    ids = model.token_to_id
    assert dfa.accepts([ids["t"], ids["h"], ids["e▁"]])
    assert dfa.accepts([ids["c"], ids["a"], ids["t"], ids["s▁"]])
    assert not dfa.accepts([ids["c"], ids["a"], ids["t▁"], ids["s▁"]])
    assert dfa.num_states == compile_regex(r"[Tt]he|cats?", CharAlphabet({c: ord(c) for c in "Tthecas"} | {c + "▁": 1000 + ord(c) for c in "Tthecas"}, "▁")).num_states


# ----------------------------------------------------------------- errors
ERRORS = [
    ("a(?=b)", 1, "(?="),
    ("(?<=a)b", 0, "(?<="),
    ("(?<!a)b", 0, "(?<!"),
    ("a(?!b)", 1, "(?!"),
    ("(?>ab)", 0, "(?>"),
    ("(a)\\1", 3, "backreference"),
    ("(?P<x>a)(?P=x)", 8, "(?P="),
    ("a*+", 1, "possessive"),
    ("a{1,2}+", 1, "possessive"),
    ("a\\bc", 1, "\\b"),
    ("a^b", 1, "^"),
    ("a$b", 1, "$"),
    ("(^a)", 1, "^"),
    ("(a$)", 2, "$"),
    ("ab(?i)c", 2, "(?i)"),
    ("(?x)a b", 0, "(?x"),
    ("\\X", 0, "\\X"),
    ("(?|a)", 0, "(?|"),
    ("(a", 2, "missing )"),
    ("a)", 1, "parenthesis"),
    ("[a", 2, "unterminated"),
    ("a{3,1}", 2, "min repeat greater than max"),
    ("[z-a]", 4, "bad character range"),
    ("*a", 0, "nothing to repeat"),
    ("\\q", 2, "bad escape"),
]


@pytest.mark.parametrize("pattern,position,fragment", ERRORS)
def test_errors_name_the_position(pattern, position, fragment):
    with pytest.raises(RegexSyntaxError) as info:
        compile_regex(pattern, BYTES)
    message = str(info.value)
    assert isinstance(info.value, BpefstError)
    assert "\n" not in message
    assert message.endswith(f"at position {position}"), message
    assert fragment in message
    assert info.value.position == position


def test_state_limit():
    with pytest.raises(StateLimitExceeded):
        compile_regex("(a|b)*a(a|b){30}", BYTES, max_states=5000)
    with pytest.raises(StateLimitExceeded) as info:
        compile_regex(r"(\p{L}{1000}){1000}", BYTES)
    assert "position" in str(info.value)
    assert compile_regex("(a|b)*a(a|b){5}", BYTES, max_states=5000).num_states == 64


def test_lazy_and_greedy_are_the_same_language():
    assert compiled("a*?b+?c??") == compile_regex("a*b+c?", BYTES)
    assert compiled("(ab|a)*b?") == compile_regex("(a|ab)*b?", BYTES)


def test_not_a_string():
    with pytest.raises(BpefstError):
        compile_regex(b"abc", BYTES)  # type: ignore[arg-type]


def test_scoped_ignorecase_does_not_leak():
    # regex 2026.11.15 says no here (its scoped (?i:...) leaks into the other branch's class);
    # Python's re and the documented semantics say yes, and so do we.
    import re

    assert re.fullmatch(r"(?i:x)|[^aB]", "A")
    assert compiled(r"(?i:x)|[^aB]").accepts(b"A")
    assert not compiled(r"(?i:x)|[^aB]").accepts(b"a")


@pytest.mark.parametrize("alternation, atom, char", [
    (r"(?i)a|\p{Lu}", r"(?i)\p{Lu}", "\U0001DF09"),
    (r"(?i)\p{Greek}|a", r"(?i)\p{Greek}", "\u0345"),
    (r"(?i)\p{ASCII}|ß", r"(?i)\p{ASCII}", "\u0130"),
])
def test_ignorecase_property_in_alternation_takes_the_atoms_answer(alternation, atom, char):
    # regex 2026.11.15 answers these alternations differently from their atom alone (its
    # case-insensitive sets); an alternation matches what one of its branches matches, so we
    # follow the atom.
    assert compiled(alternation).accepts(char.encode()) == bool(regex.fullmatch(atom, char))


@pytest.mark.parametrize("pattern", [r"(?a:\d)", r"(?a)\p{L}", r"(?a)[\P{L}x]"])
def test_ascii_flag_limits(pattern):
    with pytest.raises(RegexSyntaxError):
        compile_regex(pattern, BYTES)


# ------------------------------------------------- the two engines of the NFA -> minimal DFA step
# compile_regex's last step runs on the compiled core (src/core/minimal_dfa.h) where it is built; the
# pure determinize + minimize + finish is its specification.  Minimal DFAs numbered canonically are equal
# as values exactly when their languages are, so the two must give equal automata.
needs_core = pytest.mark.skipif(native.core is None, reason="the compiled core is not built (pure Python install)")
_SHUFFLED_IDS = list(range(1000, 1256))
random.Random(3).shuffle(_SHUFFLED_IDS)
ENGINE_ALPHABETS = {
    "bytes": BYTES,
    "renamed bytes": ByteAlphabet(dict(zip(range(256), _SHUFFLED_IDS))),  # GPT-2's byte tokens, say
    "some bytes": ByteAlphabet({b: 2 * b for b in range(256) if b not in b"b1\xc3\xa9"}),  # a model lacking bytes
    "characters": SMALL,
}


def both_engines(pattern: str, alphabet, max_states: int | None = None):
    """compile_regex's verdict on each engine: the DFA, or the type and text of what it raised."""
    verdicts = []
    for engine in ("pure", "compiled"):
        try:
            verdicts.append(compile_regex(pattern, alphabet, max_states, engine=engine))
        except BpefstError as error:
            verdicts.append((type(error), str(error)))
    return verdicts


@needs_core
@pytest.mark.parametrize("alphabet", ENGINE_ALPHABETS.values(), ids=ENGINE_ALPHABETS.keys())
def test_engines_give_the_same_minimal_dfa(alphabet):
    for pattern in PATTERNS + [r"\{\"id\":\"[0-9a-f]{8}-[0-9a-f]{4}\",\"n\":(0|[1-9][0-9]{0,2})\}", "b+", "[^\\x00-\\xff]"]:
        pure, compiled_ = both_engines(pattern, alphabet)
        assert pure == compiled_, pattern


@needs_core
@settings(max_examples=150, deadline=None)
@given(pattern=_pattern_strategy(), name=st.sampled_from(sorted(ENGINE_ALPHABETS)))
def test_engines_agree_on_random_patterns(pattern, name):
    pure, compiled_ = both_engines(pattern, ENGINE_ALPHABETS[name])
    assert pure == compiled_


@st.composite
def small_nfas(draw):
    """Any NFA of up to 7 states over 3 symbols: epsilon cycles, unreachable and dead states, no finals."""
    n = draw(st.integers(1, 7))
    state = st.integers(0, n - 1)
    arcs = [draw(st.lists(st.tuples(st.integers(0, 2), state), max_size=4)) for _ in range(n)]
    eps = [draw(st.lists(state, max_size=2)) for _ in range(n)]
    return NFA(arcs, eps, draw(state), draw(st.frozensets(state, max_size=n)))


@needs_core
@settings(max_examples=300, deadline=None)
@given(nfa=small_nfas())
def test_engines_agree_on_random_nfas(nfa):
    """minimal_dfa on each engine, with and without a relabelling: the same automaton."""
    assert minimal_dfa(nfa, engine="compiled") == minimal_dfa(nfa, engine="pure")
    relabelled = NFA([[(2 - a, r) for a, r in row if a != 1] for row in nfa.arcs], nfa.eps, nfa.start, nfa.finals)
    table = array("i", [2, -1, 0]).tobytes()  # 0 -> 2, 1 dropped, 2 -> 0
    assert _minimal_natively(nfa, None, table) == minimal_dfa(relabelled, engine="pure")


@st.composite
def small_dfas(draw):
    """Any DFA of up to 7 states over 4 symbols, partial: unreachable and dead states, no finals."""
    n = draw(st.integers(1, 7))
    rows = [draw(st.dictionaries(st.sampled_from([0, 3, 40_000, 2**31 - 2]), st.integers(0, n - 1), max_size=4))
            for _ in range(n)]
    return DFA(rows, draw(st.integers(0, n - 1)), draw(st.frozensets(st.integers(0, n - 1), max_size=n)), check=False)


@needs_core
@settings(max_examples=300, deadline=None)
@given(dfa=small_dfas())
def test_the_core_minimizes_a_dfa_read_from_its_dict_rows(dfa):
    """A DFA's dict rows are read as its arcs (what the written-out token automata hand over): the pure
    minimization's value."""
    rows, finals = native.core.minimal_dfa(dfa.transitions, [[]] * len(dfa.transitions), dfa.start, sorted(dfa.finals),
                                           None, -1)
    assert DFA(rows, 0, frozenset(finals), check=False) == minimize(dfa) == minimal_of_dfa(dfa)


@needs_core
@settings(max_examples=300, deadline=None)
@given(dfa=small_dfas(), merged=st.integers(0, 2))
def test_a_dfa_relabelled_onto_fewer_symbols_is_determinized(dfa, merged):
    """The core numbers a deterministic input without the subset construction; one whose relabelling sends two
    of a state's symbols to one id is no longer deterministic and takes the subset construction.  Both give
    the pure value (arcs listed in the dict rows' order, which need not be ascending)."""
    own = {a: i for i, a in enumerate([0, 3, 40_000, 2**31 - 2])}  # small_dfas' symbols, as 0 .. 3
    arcs = [[(own[a], r) for a, r in row.items()] for row in dfa.transitions]
    nfa = NFA(arcs, [[] for _ in arcs], dfa.start, dfa.finals)
    assert minimal_dfa(nfa, engine="compiled") == minimal_dfa(nfa, engine="pure")
    relabelling = [0, 1, 2, merged]  # symbol 3 takes the id of symbol `merged`
    relabelled = NFA([[(relabelling[a], r) for a, r in row] for row in arcs], nfa.eps, nfa.start, nfa.finals)
    assert _minimal_natively(nfa, None, array("i", relabelling).tobytes()) == minimal_dfa(relabelled, engine="pure")


@needs_core
def test_engines_share_the_state_limit_on_a_deterministic_input():
    """On a DFA the limit counts the states reached from the start (its subsets), not those it lists."""
    chain = [{97: 1}, {98: 2, 97: 0}, {99: 3}, {}, {97: 0}]  # state 4 is not reached
    nfa = NFA([list(row.items()) for row in chain], [[] for _ in chain], 0, frozenset({3}))
    for engine in ("pure", "compiled"):
        assert minimal_dfa(nfa, 4, engine=engine) == minimal_dfa(nfa, engine="pure")
        with pytest.raises(StateLimitExceeded):
            minimal_dfa(nfa, 3, engine=engine)


@needs_core
@settings(max_examples=300, deadline=None)
@given(dfa=small_dfas(), data=st.data())
def test_the_core_reads_a_copied_row_through_its_ids(dfa, data):
    """A row given as (another automaton's row, the copy's state for each of that row's targets), as the JSON
    Schema translation hands over its copied automata: the same value as the row written out."""
    n = len(dfa.transitions)
    ids = data.draw(st.permutations(range(n)))
    where = {q: i for i, q in enumerate(ids)}  # ids[where[q]] == q
    copies = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    rows = [({a: where[r] for a, r in row.items()}, list(ids)) if copy else row
            for row, copy in zip(dfa.transitions, copies)]
    got, finals = native.core.minimal_dfa(rows, [[]] * n, dfa.start, sorted(dfa.finals), None, -1)
    assert DFA(got, 0, frozenset(finals), check=False) == minimize(dfa)


@needs_core
def test_engines_share_the_state_limit():
    """The limit counts the subsets of the determinization on both: the smallest limit that passes is the same."""
    pattern = "(a|b)*a(a|b){6}"

    def passes(limit: int, engine: str) -> bool:
        try:
            compile_regex(pattern, BYTES, limit, engine=engine)
        except StateLimitExceeded:
            return False
        return True

    smallest = next(limit for limit in range(1, 1000) if passes(limit, "pure"))
    assert smallest > 64  # (the determinization has 2**7 subsets)
    assert passes(smallest, "compiled") and not passes(smallest - 1, "compiled")
    pure, compiled_ = both_engines(pattern, BYTES, smallest - 1)
    assert pure == compiled_


@needs_core
@pytest.mark.parametrize("arguments, error", [
    (([[(97, 1)], []], [[]], 0, [1], None, -1), ValueError),  # eps shorter than arcs
    (([[(97, 2)], []], [[], []], 0, [1], None, -1), ValueError),  # a target outside the states
    (([[(-1, 1)], []], [[], []], 0, [1], None, -1), ValueError),  # a negative symbol
    (([[(97, 1)], []], [[], [5]], 0, [1], None, -1), ValueError),  # an epsilon target outside
    (([[(97, 1)], []], [[], []], 2, [1], None, -1), ValueError),  # the start outside
    (([[(97, 1)], []], [[], []], 0, [7], None, -1), ValueError),  # a final outside
    (([[[97, 1]], []], [[], []], 0, [1], None, -1), TypeError),  # an arc that is no tuple
    (([(97, 1), []], [[], []], 0, [1], None, -1), TypeError),  # a row that is no list
    (([[(97, 1)], []], [[], []], 0, [1], b"abc", -1), ValueError),  # a table that is no int32s
    (([[(2**40, 1)], []], [[], []], 0, [1], None, -1), ValueError),  # a symbol past int32
    (([[(2**70, 1)], []], [[], []], 0, [1], None, -1), OverflowError),
    (([], [], 0, [], None, -1), ValueError),
    (([{97: 2}, {}], [[], []], 0, [1], None, -1), ValueError),  # a DFA row's target outside the states
    (([{-1: 1}, {}], [[], []], 0, [1], None, -1), ValueError),  # a DFA row's negative symbol
    (([{"a": 1}, {}], [[], []], 0, [1], None, -1), ValueError),  # a DFA row's symbol that is no int
    (([{97: None}, {}], [[], []], 0, [1], None, -1), ValueError),  # a DFA row's target that is no int
    (([{2**40: 1}, {}], [[], []], 0, [1], None, -1), ValueError),  # a DFA row's symbol past int32
    (([({97: 0}, [2]), {}], [[], []], 0, [1], None, -1), ValueError),  # a copy's id outside the states
    (([({97: 1}, [1]), {}], [[], []], 0, [1], None, -1), ValueError),  # a copied target outside its ids
    (([({97: 0}, ["a"]), {}], [[], []], 0, [1], None, -1), ValueError),  # a copy's id that is no int
    (([({97: 0}, (1,)), {}], [[], []], 0, [1], None, -1), TypeError),  # ids that are no list
    (([([(97, 0)], [1]), {}], [[], []], 0, [1], None, -1), TypeError),  # a copied row that is no dict
    (([({97: 0}, [1], 0), {}], [[], []], 0, [1], None, -1), TypeError),  # a tuple of three
])
def test_minimal_dfa_refuses_bad_arguments(arguments, error):
    with pytest.raises(error):
        native.core.minimal_dfa(*arguments)


@needs_core
@settings(max_examples=200, deadline=None)
@given(nfa=small_nfas(), wide=st.sampled_from([2**20, 2**31 - 2]))
def test_engines_agree_on_nfas_over_symbols_past_the_stamp_table(nfa, wide):
    """Symbols past the core's table of stamps take its other determinism check (each row sorted): a symbol
    twice in a row is still found, and the value is the pure one."""
    arcs = [[(wide if a == 2 else a, r) for a, r in row] for row in nfa.arcs]
    wide_nfa = NFA(arcs, [[] for _ in arcs], nfa.start, nfa.finals)
    assert minimal_dfa(wide_nfa, engine="compiled") == minimal_dfa(wide_nfa, engine="pure")
