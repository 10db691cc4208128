"""Strings within edit distance one of a word list (the input automaton of Table 1).

Seed 000 (Sec. 6.4, Table 1) promotes an automaton that "accepts strings
that are within edit-distance-one of any of 100 words drawn from the
WikiText-2 training corpus and has 2.4k states and 46k transitions".

:func:`edit_distance_one` is the general construction over integer symbols.
Its language is the set of strings obtained from some word by **at most one**
edit:

* insert one symbol of ``insertable`` anywhere (before, between or after the
  word's symbols);
* delete one of the word's symbols;
* substitute one of the word's symbols ``a`` by a symbol ``b != a`` that
  shares a *substitution class* with ``a`` (a symbol in no class cannot be
  substituted).

It is built as a Levenshtein NFA over the trie of the words -- states
``(trie node, edits used)`` with ``edits used`` in {0, 1}; a deletion is an
epsilon arc -- then determinized and minimized.

:func:`table1_automaton` applies it to the character-level WikiText
tokenizers: each word is spelled with the end-of-word marker ``▁`` on its
last character (``"dim"`` is ``d i m▁``), and the edit symbols are the 52
ASCII letters, plain or carrying the marker (104 symbols).

**Which substitutions?**  The counts of the reference implementation (2,381
states and 46,202 arcs for the 100 words of ``table1_words.txt`` and the 4k
tokenizer; the paper also says the automaton encodes "nearly 90k unique
sequences") are reproduced exactly, with 89,829 strings, only by this rule
(``substitution="paper"``, the default):

* insertion: any of the 104 symbols, anywhere -- so a marked letter may be
  inserted in the middle of a word or after its marked last letter;
* deletion: any one symbol, including the marked last one (``d i`` is within
  distance one of ``d i m▁``);
* substitution: **only of the marked last letter, by another marked letter**.

The last rule is what the reference edit transducer does in effect: after
substituting an unmarked letter it lets only unmarked letters follow, so no
word, which always ends with a marked letter, survives such a substitution.
The other readings are available for comparison:

============================  ======  ======  =======
``substitution=``              states   arcs   strings
============================  ======  ======  =======
``"paper"`` (default)           2,381  46,202   89,829
``"marking"`` (plain<->plain,   4,535  57,493  121,078
marked<->marked)
``"any"`` (any of the 104)      4,529  57,580  158,154
============================  ======  ======  =======

(All three are minimal trim DFAs; restricting edits to lowercase letters, or
inserting only unmarked letters, gives none of the reported sizes either.)
"""

from __future__ import annotations

import string
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from ..automata import DFA, NFA, determinize, minimize
from ..errors import BpefstError

if TYPE_CHECKING:
    from ..tokenizer.model import BPEModel

SUBSTITUTION_MODES = ("paper", "marking", "any")
ASCII_LETTERS = string.ascii_letters


def edit_distance_one(
    words: Iterable[Sequence[int]],
    insertable: Iterable[int],
    substitution_classes: Iterable[Iterable[int]] = (),
    *,
    max_states: int | None = None,
) -> DFA:
    """Minimal DFA of the strings within one edit of some word (see the module docstring)."""
    insert_symbols = sorted(set(insertable))
    partners: dict[int, set[int]] = {}
    for cls in substitution_classes:
        members = set(cls)
        for a in members:
            partners.setdefault(a, set()).update(members)
    for a, others in partners.items():
        others.discard(a)

    # trie of the words
    children: list[dict[int, int]] = [{}]
    word_end = [False]
    for word in words:
        node = 0
        for symbol in word:
            if not isinstance(symbol, int) or symbol < 0:
                raise BpefstError(f"word symbols must be non-negative ints, got {symbol!r}")
            nxt = children[node].get(symbol)
            if nxt is None:
                nxt = children[node][symbol] = len(children)
                children.append({})
                word_end.append(False)
            node = nxt
        word_end[node] = True

    # Levenshtein NFA: state 2*node + used
    n = len(children)
    arcs: list[list[tuple[int, int]]] = [[] for _ in range(2 * n)]
    eps: list[list[int]] = [[] for _ in range(2 * n)]
    finals = set()
    for node in range(n):
        exact, edited = 2 * node, 2 * node + 1
        row_exact, row_edited = arcs[exact], arcs[edited]
        row_exact.extend((x, edited) for x in insert_symbols)  # insertion
        for a, child in children[node].items():
            row_exact.append((a, 2 * child))  # copy, no edit yet
            row_edited.append((a, 2 * child + 1))  # copy after the edit
            eps[exact].append(2 * child + 1)  # deletion
            for b in sorted(partners.get(a, ())):  # substitution
                row_exact.append((b, 2 * child + 1))
        if word_end[node]:
            finals.update((exact, edited))
    nfa = NFA(arcs, eps, 0, frozenset(finals), check=False)
    return minimize(determinize(nfa, max_states))


def letter_symbols(symbol_ids: Mapping[str, int], suffix: str) -> tuple[list[int], list[int]]:
    """Ids of the ASCII letters without and with the end-of-word ``suffix`` (those that exist)."""
    plain = [symbol_ids[c] for c in ASCII_LETTERS if c in symbol_ids]
    marked = [symbol_ids[c + suffix] for c in ASCII_LETTERS if c + suffix in symbol_ids]
    return plain, marked


def spell_marked(word: str, symbol_ids: Mapping[str, int], suffix: str) -> list[int]:
    """The ids spelling ``word`` with ``suffix`` on its last character; BpefstError if impossible."""
    if not word:
        raise BpefstError("an empty word cannot carry the end-of-word marker")
    pieces = [*word[:-1], word[-1] + suffix]
    missing = [p for p in pieces if p not in symbol_ids]
    if missing:
        raise BpefstError(f"word {word!r} cannot be spelled: no symbol {missing[0]!r} in the vocabulary")
    return [symbol_ids[p] for p in pieces]


def table1_automaton(
    model_or_vocab: "BPEModel | Mapping[str, int]",
    words: Iterable[str],
    *,
    substitution: str = "paper",
    end_of_word_suffix: str | None = None,
    max_states: int | None = None,
) -> DFA:
    """The Table 1 input automaton over a character-level model's symbol ids.

    ``model_or_vocab`` is a character-level :class:`~bpefst.tokenizer.model.BPEModel`
    or a mapping token text -> id; the suffix defaults to the model's
    end-of-word suffix, else ``"▁"``.  ``substitution`` is ``"paper"``,
    ``"marking"`` or ``"any"`` (module docstring).
    """
    if substitution not in SUBSTITUTION_MODES:
        raise BpefstError(f"unknown substitution mode {substitution!r} (expected one of {', '.join(SUBSTITUTION_MODES)})")
    if isinstance(model_or_vocab, Mapping):
        symbol_ids = dict(model_or_vocab)
        suffix = end_of_word_suffix or "▁"
    else:
        model = model_or_vocab
        if model.level != "char":
            raise BpefstError("the Table 1 automaton needs a character-level tokenizer")
        symbol_ids = {token: i for i, token in model.vocab.items() if isinstance(token, str)}
        suffix = end_of_word_suffix or model.end_of_word_suffix or "▁"
    plain, marked = letter_symbols(symbol_ids, suffix)
    spelled = [spell_marked(w, symbol_ids, suffix) for w in words]
    if substitution == "paper":
        classes = [marked]
    elif substitution == "marking":
        classes = [plain, marked]
    else:
        classes = [plain + marked]
    return edit_distance_one(spelled, plain + marked, classes, max_states=max_states)
