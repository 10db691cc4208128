"""The compiled spelling-trie builder (``src/core/trie_build.h``, ``bpefst.native.spelling_trie``) against its pure
twins, which are the specification: :meth:`SpellingTrie.from_model` (its loop), :meth:`SpellingTrie.steps` and
:func:`bpefst.native.trie_walker_tables`.  The same nodes, numbered alike, each dict's entries in the same order,
the same packed walker tables; None where the core cannot take the trie; hostile arguments raise, never crash."""

from __future__ import annotations

from array import array

import pytest

from bpefst import native
from bpefst.promotion.agnostic import SpellingTrie
from bpefst.tokenizer import load_tokenizer
from conftest import require_shared
from small_models import random_byte_model, random_char_model

pytestmark = pytest.mark.skipif(native.core is None, reason="the compiled core is not in use (BPEFST_PURE_PYTHON, or no compiler)")


def pure_trie(model, tokens=None) -> tuple[SpellingTrie, tuple]:
    """The trie, steps and walker tables made by the Python loops alone."""
    saved, native.spelling_trie = native.spelling_trie, lambda *args: None
    try:
        trie = SpellingTrie.from_model(model, tokens)
    finally:
        native.spelling_trie = saved
    return trie, native.trie_walker_tables(trie.children, trie.tokens, trie.steps())


def ordered(rows: list[dict]) -> list[list[tuple]]:
    return [list(row.items()) for row in rows]  # (dict equality ignores the order the walks rely on)


def assert_same_trie(model, tokens=None) -> None:
    trie = SpellingTrie.from_model(model, tokens)
    pure, tables = pure_trie(model, tokens)
    assert trie._steps is not None and trie._walker is not None, "the compiled builder did not run"
    assert ordered(trie.children) == ordered(pure.children)
    assert trie.tokens == pure.tokens and all(type(ends) is tuple for ends in trie.tokens)
    assert ordered(trie.steps()) == ordered(pure.steps())
    assert trie.spellings == pure.spellings
    kept = sorted(model.spellings if tokens is None else set(tokens))
    packed = native.core.spelling_trie(model.spellings, kept)[3]
    assert tuple(array("i", table) for table in packed[:-1]) + (packed[-1],) == tables


@pytest.mark.parametrize("seed", range(6))
def test_small_byte_and_character_models(seed: int) -> None:
    assert_same_trie(random_byte_model(seed, alphabet=b"ab1 \xc3\xa9", num_merges=30))
    assert_same_trie(random_char_model(seed, alphabet="abcd", num_merges=25, suffix=None))
    model = random_byte_model(seed, num_merges=20)
    assert_same_trie(model, tokens=[t for t in model.spellings if t % 3])  # a subset of the tokens


def test_gpt2() -> None:
    assert_same_trie(load_tokenizer(require_shared() / "gpt2" / "vocab.json"))


def test_symbols_or_tokens_past_the_core_are_left_to_python() -> None:
    assert native.core.spelling_trie({0: (1,), 1: (-1, 2)}, [0, 1]) is None
    assert native.core.spelling_trie({0: (1,), 1: (1 << 40,)}, [0, 1]) is None
    assert native.core.spelling_trie({-5: (1,)}, [-5]) is None
    assert native.spelling_trie({0: (1,), 1: (-1, 2)}, [0, 1]) is None


def test_empty_spellings_end_at_the_root() -> None:
    children, tokens, steps, tables = native.core.spelling_trie({3: (), 4: (7,), 5: (7,)}, [3, 4, 5])
    assert children == [{7: 1}, {}] and tokens == [(3,), (4, 5)] and steps == [{7: (-3, 0)}, {}]


@pytest.mark.parametrize("spellings, order, error", [
    ({0: [1]}, [0], TypeError),          # a spelling that is not a tuple
    ({0: (1, "a")}, [0], TypeError),     # a symbol that is not an int
    ({0: (1,)}, ["0"], TypeError),       # a token that is not an int
    ({0: (1,), 1: (2,)}, [1, 0], ValueError),  # not ascending
    ({0: (1,), 1: (2,)}, [0, 0], ValueError),  # repeated
    ({0: (1,)}, [0, 1], KeyError),       # a token without a spelling
])
def test_hostile_arguments_raise(spellings, order, error) -> None:
    with pytest.raises(error):
        native.core.spelling_trie(spellings, order)


def test_wrong_argument_types_raise() -> None:
    with pytest.raises(TypeError):
        native.core.spelling_trie([(1,)], [0])
    with pytest.raises(TypeError):
        native.core.spelling_trie({0: (1,)}, (0,))
