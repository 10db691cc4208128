"""Serialization (msgpack artifacts) and Graphviz output of bpefst.automata."""

from __future__ import annotations

import random
import re

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bpefst.artifact import pack_ints, repack, write_artifact
from bpefst.automata import DFA, NFA, StateLimitExceeded, determinize, from_bytes, load, save, thompson, to_bytes, to_dot
from bpefst.automata.serialize import to_body
from bpefst.errors import ArtifactError


@st.composite
def dfas(draw):
    n = draw(st.integers(1, 8))
    symbols = draw(st.sampled_from([(0, 1), (0, 1, 2), (5, 70000, 2**32 - 1)]))
    rows = [{a: t for a in symbols if (t := draw(st.integers(-1, n - 1))) >= 0} for _ in range(n)]
    return DFA(rows, draw(st.integers(0, n - 1)), draw(st.sets(st.integers(0, n - 1))))


@settings(max_examples=100, deadline=None)
@given(dfas(), st.text(max_size=8))
def test_round_trip_bytes(d, fingerprint):
    data = to_bytes(d, fingerprint)
    assert from_bytes(data) == d
    assert from_bytes(data, fingerprint=fingerprint) == d


def test_round_trip_file_and_header_checks(tmp_path):
    d = determinize(thompson.concat(thompson.symbols(range(256)).star(), thompson.literal(b"abc")))
    path = tmp_path / "a.automaton"
    save(d, path, fingerprint="abc123")
    assert load(path) == d and load(path, fingerprint="abc123") == d
    with pytest.raises(ArtifactError, match="built from tokenizer"):
        load(path, fingerprint="other")
    write_artifact(tmp_path / "t", "tokenizer", 1, "", {})
    with pytest.raises(ArtifactError, match="expected a automaton artifact"):
        load(tmp_path / "t")
    write_artifact(tmp_path / "s", "automaton", 99, "", to_body(d))
    with pytest.raises(ArtifactError, match="schema version 99"):
        load(tmp_path / "s")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_packed_arrays_are_compact():
    rng = random.Random(0)
    d = DFA([{a: rng.randrange(1000) for a in range(50)} for _ in range(1000)], 0, range(0, 1000, 3))
    data = to_bytes(d)
    assert len(data) < 8 * d.num_arcs + 16 * d.num_states  # two uint32 per arc, plus offsets/finals


def _document(d):
    return {"format": "bpefst", "kind": "automaton", "schema": 1, "fingerprint": "", "body": to_body(d)}


SAMPLE = DFA([{0: 1, 1: 2}, {0: 2}, {1: 0}], 0, {2})


def _corrupt(**changes):
    doc = _document(SAMPLE)
    doc["body"].update(changes)
    return repack(doc)


@pytest.mark.parametrize(
    "data, message",
    [
        (_corrupt(type="nfa"), "not a DFA"),
        (_corrupt(num_states="3"), "num_states"),
        (_corrupt(num_states=0), "num_states"),
        (_corrupt(start=3), "start state"),
        (_corrupt(start=True), "start"),
        (_corrupt(finals=pack_ints([7])), "final state 7"),
        (_corrupt(finals=pack_ints([2, 2])), "twice"),
        (_corrupt(finals=b"\x01\x00"), "multiple of 4"),
        (_corrupt(offsets=pack_ints([0, 2, 3])), "offsets for 3 states"),
        (_corrupt(offsets=pack_ints([0, 3, 2, 4])), "not monotone"),
        (_corrupt(offsets=pack_ints([1, 2, 3, 4])), "offsets run from"),
        (_corrupt(offsets=pack_ints([0, 2, 3, 9])), "offsets run from"),
        (_corrupt(targets=pack_ints([1, 2, 9, 0])), "target 9"),
        (_corrupt(targets=pack_ints([1, 2, 2])), "3 targets"),
        (_corrupt(symbols=pack_ints([0, 0, 0, 1])), "two arcs on one symbol"),
        (_corrupt(symbols=[0, 1, 0, 1]), "'symbols'"),
        (msgpack.packb({"format": "bpefst", "kind": "automaton", "schema": 1, "fingerprint": "", "body": []}),
         "header"),
        (b"", "not a bpefst artifact"),
        (b"\x93\x01", "not a bpefst artifact"),
    ],
)
def test_corrupted_artifacts_raise_artifact_error(data, message):
    with pytest.raises(ArtifactError, match=re.escape(message)) as info:
        from_bytes(data)
    assert "\n" not in str(info.value)


def test_every_truncation_and_bit_flip_is_caught_or_harmless():
    d = determinize(thompson.concat(thompson.literal([1, 2, 3]), thompson.symbols([4, 5, 6]).star()))
    data = to_bytes(d)
    for cut in range(len(data)):
        with pytest.raises(ArtifactError):
            from_bytes(data[:cut])
    rng = random.Random(0)
    for _ in range(3000):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        try:
            loaded = from_bytes(bytes(mutated))
        except ArtifactError:
            continue
        # Whatever loads must be a valid DFA: re-checked by the validating constructor.
        DFA(loaded.transitions, loaded.start, loaded.finals)


def test_dot_output():
    d = DFA([{97: 1, 98: 1, 99: 1, 100: 1, 120: 2}, {}, {0: 2}], 0, {1, 2})
    text = to_dot(d)
    assert text.startswith('digraph "automaton" {') and text.rstrip().endswith("}")
    assert "0 -> 1 [label=\"97-100\"];" in text
    assert "0 -> 2 [label=\"120\"];" in text and "2 -> 2 [label=\"0\"];" in text
    assert "1 [shape=doublecircle];" in text and "0 [shape=circle];" in text
    assert "__start -> 0;" in text
    labelled = to_dot(d, label=lambda a: chr(a) if a > 32 else f"\\x{a:02x}", name='my "dfa"')
    assert 'label="a-d"' in labelled and 'label="x"' in labelled and 'digraph "my \\"dfa\\""' in labelled
    assert 'label="\\\\x00"' in labelled  # backslashes escaped
    edges = re.findall(r"^  (\d+) -> (\d+) \[", text, re.M)
    assert sorted(edges) == [("0", "1"), ("0", "2"), ("2", "2")]
    nfa = NFA([[(1, 1)], []], [[1], []], 0, {1})
    nfa_text = to_dot(nfa)
    assert '0 -> 1 [label="1"];' in nfa_text and '0 -> 1 [label="ε", style=dashed];' in nfa_text
    with pytest.raises(StateLimitExceeded):
        to_dot(DFA([{}] * 20, 0, ()), max_states=10)
    assert to_dot(DFA([{}] * 20, 0, ()), max_states=None).count("shape=circle") == 20
