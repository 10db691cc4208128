"""Layer 5 inputs: the edit-distance-one automaton (Table 1 of seed 000) and word lists.

The brute-force oracle is an independent weighted Levenshtein distance over
symbol strings (dynamic programming), with infinite cost for the
substitutions a mode does not allow.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.automata import count_strings, enumerate_strings, minimize
from bpefst.errors import BpefstError
from bpefst.regex.edit_distance import edit_distance_one, table1_automaton
from bpefst.regex.wordlists import read_words, words_automaton
from bpefst.regex import ByteAlphabet, CharAlphabet, compile_regex

INF = float("inf")


def distance(word, text, insertable, can_substitute):
    """Levenshtein distance with restricted insertions and substitutions."""
    n, m = len(word), len(text)
    d = [[INF] * (m + 1) for _ in range(n + 1)]
    d[0][0] = 0
    for i in range(n + 1):
        for j in range(m + 1):
            here = d[i][j]
            if here == INF:
                continue
            if i < n:
                d[i + 1][j] = min(d[i + 1][j], here + 1)  # delete word[i]
            if j < m and text[j] in insertable:
                d[i][j + 1] = min(d[i][j + 1], here + 1)  # insert text[j]
            if i < n and j < m:
                if word[i] == text[j]:
                    cost = 0
                elif can_substitute(word[i], text[j]):
                    cost = 1
                else:
                    cost = INF
                d[i + 1][j + 1] = min(d[i + 1][j + 1], here + cost)
    return d[n][m]


# A toy marker alphabet: letters a, b, c plain (0, 1, 2) and marked (10, 11, 12), plus a non-letter 20.
PLAIN, MARKED_IDS, OTHER = [0, 1, 2], [10, 11, 12], 20
SYMBOLS = PLAIN + MARKED_IDS + [OTHER]
MODES = {
    "paper": (lambda a, b: a in MARKED_IDS and b in MARKED_IDS, [MARKED_IDS]),
    "marking": (lambda a, b: (a in PLAIN) == (b in PLAIN) and a != OTHER and b != OTHER, [PLAIN, MARKED_IDS]),
    "any": (lambda a, b: OTHER not in (a, b), [PLAIN + MARKED_IDS]),
}


def spell(word: str) -> tuple[int, ...]:
    ids = {"a": 0, "b": 1, "c": 2, "x": OTHER}
    return tuple(ids[c] for c in word[:-1]) + (ids[word[-1]] + 10 if word[-1] != "x" else OTHER,)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("words", [["ab"], ["abc", "ca"], ["a", "bb", "cab"], ["axb", "b"]])
def test_brute_force(words, mode):
    can_substitute, classes = MODES[mode]
    spelled = [spell(w) for w in words]
    insertable = set(PLAIN + MARKED_IDS)
    dfa = edit_distance_one(spelled, insertable, classes)
    assert dfa == minimize(dfa)
    max_len = max(map(len, spelled)) + 1
    for n in range(max_len + 2):
        for text in itertools.product(SYMBOLS, repeat=n):
            expected = min(distance(w, text, insertable, can_substitute) for w in spelled) <= 1
            assert dfa.accepts(text) == expected, (words, mode, text)


@settings(max_examples=40, deadline=None)
@given(
    words=st.lists(st.lists(st.sampled_from(SYMBOLS), max_size=3).map(tuple), min_size=1, max_size=4),
    insertable=st.sets(st.sampled_from(SYMBOLS)),
    mode=st.sampled_from(sorted(MODES)),
)
def test_brute_force_random(words, insertable, mode):
    can_substitute, classes = MODES[mode]
    dfa = edit_distance_one(words, insertable, classes)
    accepted = set(enumerate_strings(dfa, 5))
    assert all(len(t) <= 4 for t in accepted)
    for n in range(5):
        for text in itertools.product(SYMBOLS, repeat=n):
            expected = min(distance(w, text, insertable, can_substitute) for w in words) <= 1
            assert (text in accepted) == expected, (words, insertable, mode, text)


def _toy_vocab():
    vocab = {}
    for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
        vocab[c] = len(vocab)
        vocab[c + "▁"] = len(vocab)
    vocab["."] = len(vocab)
    return vocab


def test_table1_automaton_on_a_toy_vocab():
    vocab = _toy_vocab()
    dfa = table1_automaton(vocab, ["dim", "Rim"])
    v = vocab
    assert dfa.accepts([v["d"], v["i"], v["m▁"]])
    assert dfa.accepts([v["d"], v["i"]])  # the marked last letter deleted
    assert dfa.accepts([v["d"], v["i"], v["m▁"], v["s▁"]])  # a marked letter inserted at the end
    assert dfa.accepts([v["d"], v["i"], v["n▁"]])  # the last letter substituted
    assert not dfa.accepts([v["t"], v["i"], v["m▁"]])  # "paper": no substitution of unmarked letters
    assert table1_automaton(vocab, ["dim", "Rim"], substitution="marking").accepts([v["t"], v["i"], v["m▁"]])
    assert not dfa.accepts([v["."], v["d"], v["i"], v["m▁"]])  # only letters are inserted
    with pytest.raises(BpefstError):
        table1_automaton(vocab, ["dim!"])
    with pytest.raises(BpefstError):
        table1_automaton(vocab, ["dim"], substitution="bogus")


def test_table1_counts(shared_data):
    """The reference implementation's input automaton: 2,381 states, 46,202 arcs (paper: 2.4k / 46k)."""
    from conftest import require_shared

    from bpefst.tokenizer import load_tokenizer

    data = require_shared()
    model = load_tokenizer(data / "wikitext-bpe" / "tokenizer_4000.json")
    words = read_words(open(data / "wikitext-bpe" / "table1_words.txt", encoding="utf-8"))
    assert len(words) == 100
    dfa = table1_automaton(model, words)
    assert (dfa.num_states, dfa.num_arcs) == (2381, 46202)
    assert count_strings(dfa, 30) == 89829  # "nearly 90k unique sequences"
    assert dfa.alphabet() <= model.base_ids
    marking = table1_automaton(model, words, substitution="marking")
    assert (marking.num_states, marking.num_arcs) == (4535, 57493)


# ----------------------------------------------------------------- word lists
def test_words_automaton_equals_the_alternation():
    words = ["cat", "cats", "dog", "日本", "é"]
    for alphabet in (ByteAlphabet(), CharAlphabet({c: ord(c) for c in "catsdog日本é"})):
        assert words_automaton(words, alphabet) == compile_regex("|".join(words), alphabet)


def test_words_automaton_with_end_of_word_suffix():
    vocab = _toy_vocab()
    alphabet = CharAlphabet(vocab, end_of_word_suffix="▁")
    dfa = words_automaton(["dim", "Rim"], alphabet)
    assert set(enumerate_strings(dfa, 5)) == {(vocab["d"], vocab["i"], vocab["m▁"]), (vocab["R"], vocab["i"], vocab["m▁"])}
    assert dfa == compile_regex("dim|Rim", alphabet)


def test_words_automaton_unspellable():
    alphabet = CharAlphabet({c: ord(c) for c in "abc"})
    with pytest.raises(BpefstError, match="'abd'"):
        words_automaton(["ab", "abd"], alphabet)
    assert words_automaton(["ab", "abd"], alphabet, strict=False) == words_automaton(["ab"], alphabet)


def test_read_words():
    assert read_words(["a\n", "\n", "bc\r\n", "d"]) == ["a", "bc", "d"]
