"""The Aho-Corasick MaxMatch transducer and MaxMatch-preserving promotion, against brute force."""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bpefst.automata import DFA, count_strings, enumerate_strings, is_finite
from bpefst.automata.errors import StateLimitExceeded
from bpefst.errors import BpefstError
from bpefst.promotion.maxmatch import PHI, MaxMatchTransducer, promote_maxmatch, wordpiece_alphabet
from bpefst.regex import compile_regex
from bpefst.tokenizer.wordpiece import WordPieceModel, load_wordpiece
from conftest import require_shared


def small_model(first=(), cont=(), max_chars=100) -> WordPieceModel:
    vocab = {"[UNK]": 0}
    for piece in first:
        vocab.setdefault(piece, len(vocab))
    for piece in cont:
        vocab.setdefault("##" + piece, len(vocab))
    return WordPieceModel(vocab, max_input_chars_per_word=max_chars)


def spell(model: WordPieceModel, ids) -> str:
    """The word a MaxMatch token sequence spells (first piece literal, later ones without the prefix)."""
    cut = len(model.continuing_subword_prefix)
    return "".join(model.id_to_token[t] if i == 0 else model.id_to_token[t][cut:] for i, t in enumerate(ids))


def brute_force(pattern: DFA, model: WordPieceModel, bound: int, unk: str = "exclude") -> set[tuple[int, ...]]:
    """{MaxMatch(w) : w matched, 1 <= |w| <= bound}, with HF's unknown-word rules."""
    out = set()
    for symbols in enumerate_strings(pattern, bound, min_len=1):
        word = "".join(map(chr, symbols))
        ids = model.max_match(word)
        if ids is not None and len(word) <= model.max_input_chars_per_word:
            out.add(tuple(ids))
        elif unk == "token":
            out.add((model.unk_id,))
    return out


def promoted_upto(dfa: DFA, model: WordPieceModel, bound: int) -> set[tuple[int, ...]]:
    """Accepted sequences spelling at most ``bound`` characters ([UNK] alone counts as one)."""
    return {seq for seq in enumerate_strings(dfa, bound) if len(seq) == 1 and seq[0] == model.unk_id or len(spell(model, seq)) <= bound}


def check(pattern_text: str, model: WordPieceModel, bound: int, transducer=None, unk="exclude") -> DFA:
    pattern = compile_regex(pattern_text, wordpiece_alphabet(model))
    dfa = promote_maxmatch(pattern, model, transducer, unk=unk)
    expected = brute_force(pattern, model, bound, unk)
    if unk == "token" and not is_finite(pattern):
        expected.add((model.unk_id,))  # words longer than max_input_chars_per_word
    assert promoted_upto(dfa, model, bound) == expected, pattern_text
    if is_finite(pattern) and not any(True for _ in enumerate_strings(pattern, bound + 40, min_len=bound + 1)):
        assert count_strings(dfa, bound + 40) == len(expected)  # nothing longer is accepted
    return dfa


# -- the transducer ------------------------------------------------------------------------------


def test_transducer_on_the_paper_example():
    m = small_model(["b", "ba", "ban", "bana", "a", "n", "s", "na"], ["a", "b", "n", "s", "ba", "na", "ban", "bana"])
    t = MaxMatchTransducer(m)
    assert t.match("bananas") == m.max_match("bananas")
    assert [m.id_to_token[i] for i in t.match("bananas")] == ["bana", "##na", "##s"]
    assert t.num_states > 10 and t.num_arcs > t.num_states - 2
    phis = [a for a in t.arcs() if a[1] == PHI]
    assert phis and all(outs for _, _, outs, _ in phis)  # every failure arc outputs a token


def test_transducer_failures_and_limits():
    m = small_model(["a", "ab", "abcd"], ["c", "x"], max_chars=50)
    t = MaxMatchTransducer(m)
    assert t.match("abcx") == [m.vocab["ab"], m.vocab["##c"], m.vocab["##x"]]
    assert t.match("abcd") == [m.vocab["abcd"]]
    assert t.match("abd") is None and t.encode_word("abd") == [0]
    assert t.match("") == []
    assert t.encode_word("a" + "x" * 50) == [0]  # too long
    assert t.match("a" + "x" * 50) == [m.vocab["a"]] + [m.vocab["##x"]] * 50


pieces = st.text(alphabet="abc", min_size=1, max_size=4)


@st.composite
def random_model(draw, max_chars=100):
    first = draw(st.lists(pieces, min_size=1, max_size=14))
    cont = draw(st.lists(pieces, max_size=14))
    return small_model(first, cont, max_chars)


@settings(max_examples=300, deadline=None)
@given(random_model(), st.lists(st.text(alphabet="abcd", max_size=16), min_size=1, max_size=20))
def test_transducer_equals_reference_on_random_vocabularies(model, words):
    t = MaxMatchTransducer(model)
    for word in words:
        assert t.match(word) == model.max_match(word), word
        assert t.encode_word(word) == model.encode_word(word)


@settings(max_examples=100, deadline=None)
@given(random_model(), st.sampled_from("abc"), st.integers(min_value=50, max_value=3000))
def test_transducer_adversarial_repetitions(model, letter, n):
    t = MaxMatchTransducer(model)
    assert t.match(letter * n) == model.max_match(letter * n)


# -- promotion on small vocabularies ------------------------------------------------------------------

SMALL = small_model(["a", "b", "ab", "abc", "ba", "c", "bca"], ["a", "b", "c", "bc", "ca", "abc", "cab"])
SMALL_PATTERNS = [
    "abc", "ab|abc|abca", "[abc]", "[ab]{1,4}", "a(b|c)*", "(ab)+c?", "[^a]{2,5}", "c?(ab|ba){1,2}", "a*b+", "[abc]*cab",
]


@pytest.mark.parametrize("pattern", SMALL_PATTERNS)
def test_promotion_equals_brute_force_small(pattern):
    check(pattern, SMALL, 7)
    check(pattern, SMALL, 7, unk="token")


def test_unknown_words_excluded_or_unk():
    m = small_model(["a", "b"], ["a"])
    alphabet = wordpiece_alphabet(m)
    exclude = promote_maxmatch(compile_regex("a|ab|ba", alphabet), m)
    assert set(enumerate_strings(exclude, 5)) == {(m.vocab["a"],), (m.vocab["b"], m.vocab["##a"])}
    token = promote_maxmatch(compile_regex("a|ab|ba", alphabet), m, unk="token")
    assert set(enumerate_strings(token, 5)) == {(m.vocab["a"],), (m.vocab["b"], m.vocab["##a"]), (0,)}
    assert set(enumerate_strings(promote_maxmatch(compile_regex("a", alphabet), m, unk="token"), 5)) == {(m.vocab["a"],)}
    with pytest.raises(BpefstError, match="UNK"):
        promote_maxmatch(compile_regex("a", alphabet), m, unk="bogus")


def test_length_limit_is_exact():
    m = small_model(["a", "aa"], ["a", "aa"], max_chars=7)
    alphabet = wordpiece_alphabet(m)
    dfa = promote_maxmatch(compile_regex("a+", alphabet), m)
    assert is_finite(dfa)
    assert {len(spell(m, s)) for s in enumerate_strings(dfa, 20)} == set(range(1, 8))
    assert (0,) in set(enumerate_strings(promote_maxmatch(compile_regex("a+", alphabet), m, unk="token"), 3))
    unlimited = promote_maxmatch(compile_regex("a+", alphabet), m, limit_length=False)
    assert not is_finite(unlimited)
    assert (0,) not in set(enumerate_strings(promote_maxmatch(compile_regex("a{1,7}", alphabet), m, unk="token"), 3))


def test_empty_word_is_never_accepted():
    m = small_model(["a"], ["a"])
    dfa = promote_maxmatch(compile_regex("a?", wordpiece_alphabet(m)), m, unk="token")
    assert set(enumerate_strings(dfa, 3)) == {(m.vocab["a"],)}


def test_state_limit():
    m = small_model(["a", "b", "ab", "ba", "aab"], ["a", "b", "ab", "ba", "bab"])
    with pytest.raises(StateLimitExceeded):
        promote_maxmatch(compile_regex("[ab]{0,30}", wordpiece_alphabet(m)), m, max_states=3)


def test_transducer_from_another_model_is_rejected():
    a, b = small_model(["a"]), small_model(["b"])
    with pytest.raises(BpefstError, match="another"):
        promote_maxmatch(compile_regex("a", wordpiece_alphabet(a)), a, MaxMatchTransducer(b))


regex_atoms = st.sampled_from(["a", "b", "c", "[ab]", "[bc]", "[abc]", "(ab|c)", "(a|bc)", "(abc|ca)"])


@st.composite
def random_pattern(draw):
    parts = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        atom = draw(regex_atoms)
        parts.append(atom + draw(st.sampled_from(["", "", "?", "*", "+", "{1,2}", "{0,3}"])))
    if draw(st.booleans()):
        return "".join(parts[: len(parts) // 2 + 1]) + "|" + "".join(parts)
    return "".join(parts)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_model(max_chars=6), random_pattern(), st.sampled_from(["exclude", "token"]))
def test_promotion_equals_brute_force_random(model, pattern, unk):
    alphabet = wordpiece_alphabet(model)
    try:
        compiled = compile_regex(pattern, alphabet)
    except BpefstError:
        return
    dfa = promote_maxmatch(compiled, model, unk=unk)
    expected = brute_force(compiled, model, 7, unk)
    if unk == "token" and not is_finite(compiled):
        expected.add((0,))  # words longer than max_input_chars_per_word
    assert promoted_upto(dfa, model, 7) == expected, pattern
    # words longer than max_input_chars_per_word (6) are unknown: nothing accepted spells more than 6
    assert all(len(spell(model, s)) <= 6 for s in enumerate_strings(dfa, 8) if s != (0,))


# -- the real BERT vocabulary ------------------------------------------------------------------------


@lru_cache(maxsize=None)
def bert():
    model = load_wordpiece(require_shared() / "wordpiece" / "tokenizer.json")
    return model, MaxMatchTransducer(model)


BERT_PATTERNS = [
    ("unaffable", 9),
    ("(cat|dog|bird|horse)s?", 6),
    ("(un)?(help|do|tie)(ful|ing|s)?", 9),
    ("[a-z]{1,2}", 2),
    ("[xyz][a-z]", 2),
    ("[0-9]{3}", 3),
    ("(19|20)[0-9][0-9]", 4),
    ("a+", 12),
    ("(ab)*c", 9),
    ("[aeiou]{2,4}", 4),
    ("(new|york|city)+", 12),
    ("[^a-z0-9]", 1),
    ("re(play|run|do)(s|ed|ing)?", 10),
    ("qu[a-z]", 3),
]


@pytest.mark.parametrize("pattern, bound", BERT_PATTERNS)
def test_promotion_equals_brute_force_bert(pattern, bound):
    model, transducer = bert()
    check(pattern, model, bound, transducer)


def test_promotion_with_unk_bert():
    model, transducer = bert()
    check("[a-z]x[a-z]", model, 3, transducer, unk="token")
    dfa = check("(cat|q{1,3})", model, 3, transducer, unk="token")
    assert (model.unk_id,) not in set(enumerate_strings(dfa, 2)) or model.max_match("qqq") is None


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789#éü中"), min_size=1, max_size=30))
def test_transducer_equals_reference_bert(word):
    model, transducer = bert()
    assert transducer.match(word) == model.max_match(word)
    assert transducer.encode_word(word) == model.encode_word(word)


def test_transducer_adversarial_bert():
    model, transducer = bert()
    for word in ["a" * 100, "a" * 101, "ab" * 50, "x" * 99 + "q", "##" * 40, "1" * 100]:
        assert transducer.encode_word(word) == model.encode_word(word)
    assert len(transducer.match("a" * 200_000)) >= 1  # linear: a fraction of a second


def test_transducer_on_shared_words_bert():
    import lzma

    model, transducer = bert()
    text = lzma.open(require_shared() / "corpora" / "fortunes.txt.xz").read(300_000).decode("utf-8", errors="ignore")
    for word in set(model.pre_tokenize(text)):
        assert transducer.encode_word(word) == model.encode_word(word), word
