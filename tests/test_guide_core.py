"""The compiled per-token calls of a guide (``bpefst._core.GuideCore``, src/core/guide.h) against their
Python definitions (``_fill_slow``, ``_step_missed``, ``_advance_slow``) and the automaton's own rows:
warm and cold, every bitmask shape and type, bounded memo, and arguments the memo does not cover."""

from __future__ import annotations

import random

import pytest

import bpefst
from bpefst import native
from bpefst.decoding import allocate_token_bitmask
from bpefst.errors import BpefstError
from bpefst.promotion import GuidedAutomaton
from bpefst.tokenizer import PRESETS
from small_models import random_byte_model

numpy = pytest.importorskip("numpy")
pytestmark = pytest.mark.skipif(native.core is None, reason=f"the compiled core is not in use here: {native.engine_description()}")

PATTERN = r"(ab|b1)+( a{1,3})?"


def unpacked(row) -> set[int]:
    bits = numpy.unpackbits(numpy.ascontiguousarray(row, dtype=numpy.int32).view(numpy.uint8), bitorder="little")
    return set(numpy.flatnonzero(bits).tolist())


def language(seed: int, masks_kept: int | None = None):
    model = random_byte_model(seed, alphabet=b"ab1 ", num_merges=15, pattern=PRESETS["gpt2"])
    stop = model.max_id + 1
    guided = bpefst.promote(model, PATTERN).guide(stop_ids=[stop])
    if masks_kept is not None:
        guided = GuidedAutomaton(guided.automaton, stop_ids=[stop], masks_kept=masks_kept)
    return guided, stop + 1


def every_state(guided: GuidedAutomaton) -> list[int]:
    states = [guided.start]
    for state in states:  # breadth first, through the Python definition of a step
        for token in guided.allowed(state):
            target = guided._step_missed(state, token)
            if target not in states:
                states.append(target)
    return states


def want(guided: GuidedAutomaton, state: int) -> set[int]:
    return set(guided.allowed(state)) | (set(guided.stop_ids) if guided.is_accepting(state) else set())


@pytest.mark.parametrize("seed", range(3))
def test_memo_answers_as_the_definitions_cold_and_warm(seed):
    guided, vocab = language(seed)
    assert isinstance(guided, native.core.GuideCore)
    states = every_state(guided)
    assert len(states) > 4
    tokens = sorted({t for s in states for t in guided.allowed(s)} | set(guided.stop_ids) | {0, vocab + 5})
    for _ in range(2):  # the first pass fills the memo, the second reads it
        for state in states:
            one = allocate_token_bitmask(1, vocab)[0]
            guided.fill_next_token_bitmask(state, one)
            assert unpacked(one) == want(guided, state)
            batch = allocate_token_bitmask(3, vocab)
            batch.fill(-1)
            guided.fill_next_token_bitmask(state, batch, index=2)
            assert unpacked(batch[2]) == want(guided, state) and (batch[:2] == -1).all()
            for token in tokens:
                assert guided.step(state, token) == guided._step_missed(state, token)
    rows, steps = guided._kept()
    assert rows == len(states) and steps == len(states) * len(tokens)


def test_advance_follows_step_and_stops_at_none():
    guided, _ = language(1)
    rng = random.Random(3)
    for _ in range(50):
        state, path = guided.start, []
        for _ in range(rng.randrange(8)):
            allowed = guided.allowed(state)
            if not allowed:
                break
            path.append(rng.choice(allowed))
            state = guided.step(state, path[-1])
        assert guided.advance(guided.start, path) == state
        assert guided.advance(guided.start, iter(path)) == guided._advance_slow(guided.start, path)
    leaving = guided.stop_ids and max(guided.stop_ids) + 1000
    assert guided.advance(guided.start, [leaving, 0, 1]) is None


def test_memo_is_bounded_and_rows_made_again_are_the_same():
    guided, vocab = language(0, masks_kept=2)
    states = every_state(guided)
    for _ in range(3):
        for state in states:
            row = allocate_token_bitmask(1, vocab)
            guided.fill_next_token_bitmask(state, row)
            assert unpacked(row[0]) == want(guided, state)
            assert guided._kept()[0] <= 2


def test_widths_change_and_the_memo_follows():
    """Narrow rows are copied; wide ones with few words set (a small language in a large vocabulary's
    bitmask) are cleared and their words written: stale bits never survive either way."""
    guided, vocab = language(2)
    for tokens in (vocab, vocab + 64, 1 << 17, vocab, 1 << 17):
        for _ in range(2):  # made, then read from the memo
            for state in every_state(guided):
                row = allocate_token_bitmask(2, tokens)
                row.fill(-1)
                guided.fill_next_token_bitmask(state, row, 1)
                assert unpacked(row[1]) == want(guided, state) and (row[0] == -1).all()


def test_what_the_memo_does_not_cover_goes_the_python_way():
    guided, vocab = language(0)
    state = guided.start
    expected = want(guided, state)
    wide = allocate_token_bitmask(2, vocab + 64)
    guided.fill_next_token_bitmask(state, wide[:, ::2], 1)  # not contiguous: numpy's own assignment
    assert unpacked(wide[1, ::2]) == expected
    guided.fill_next_token_bitmask(numpy.int64(state), allocate_token_bitmask(1, vocab), numpy.int64(0))
    with pytest.raises(IndexError):
        guided.fill_next_token_bitmask(state, allocate_token_bitmask(1, vocab), index=5)
    with pytest.raises(IndexError):
        guided.fill_next_token_bitmask(state, allocate_token_bitmask(1, vocab), -3)
    frozen = allocate_token_bitmask(1, vocab)
    frozen.flags.writeable = False
    with pytest.raises(ValueError):
        guided.fill_next_token_bitmask(state, frozen)
    with pytest.raises(BpefstError, match="size it for the whole vocabulary"):
        guided.fill_next_token_bitmask(state, allocate_token_bitmask(1, 1))
    with pytest.raises(BpefstError, match="no state to fill"):
        guided.fill_next_token_bitmask(None, allocate_token_bitmask(1, vocab))
    with pytest.raises(TypeError):
        guided.fill_next_token_bitmask(state)
    with pytest.raises(TypeError):
        guided.fill_next_token_bitmask(state, allocate_token_bitmask(1, vocab), colour=1)
    assert guided.step(state, 1 << 40) == guided._step_missed(state, 1 << 40)
    with pytest.raises(TypeError):
        guided.step(state)
    with pytest.raises(TypeError):
        guided.advance(state, 5)

    def failing():
        yield guided.allowed(state)[0]
        raise RuntimeError("the caller's tokens failed")

    with pytest.raises(RuntimeError, match="the caller's tokens failed"):
        guided.advance(state, failing())


def test_torch_bitmasks_take_the_python_way():
    torch = pytest.importorskip("torch")
    guided, vocab = language(1)
    for state in every_state(guided):
        bitmask = allocate_token_bitmask(2, vocab, "torch")
        guided.fill_next_token_bitmask(state, bitmask, 1)
        assert isinstance(bitmask, torch.Tensor) and unpacked(bitmask[1].numpy()) == want(guided, state)


def test_a_definition_that_lies_is_an_error_not_a_crash():
    guided, vocab = language(0)

    class Lying(GuidedAutomaton):
        def _packed_row(self, state, words):
            return b"\x00" * 3

        def _step_missed(self, state, token):
            return "elsewhere"

    lying = Lying(guided.automaton)
    with pytest.raises(RuntimeError, match="4 \\* words bytes"):
        lying.fill_next_token_bitmask(lying.start, allocate_token_bitmask(1, vocab))
    assert lying.step(lying.start, 0) == "elsewhere"  # returned as given, not kept
    assert lying._kept() == (0, 0)
