"""One entry point for the promotion routes, with the time each stage takes.

``pattern`` is a DFA over the tokenizer's base symbols (as their token ids, as
:mod:`bpefst.regex` produces with :func:`bpefst.regex.alphabet_for`).

* ``agnostic``: every token sequence spelling a match (Eq. 3 of seed 000);
* ``canonical``: the lattice intersected with the precomputed A_BPE (Eq. 5);
* ``canonical-direct``: Algorithm 2 of seed 001 applied to the pattern merge by
  merge (Eq. 4).

The two canonical routes accept the same language (a tested equivalence); both
results are trimmed and minimal.  Canonical here means BPE-canonical for the
whole matched text, i.e. as if the match were one pre-tokenization chunk.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..automata import DFA
from ..bpe import CanonicalAutomaton, MergeForest, build_canonical
from ..errors import BpefstError
from ..tokenizer import BPEModel
from .agnostic import SpellingTrie, promote_agnostic
from .canonical import intersect_canonical
from .direct import promote_direct

MODES = ("agnostic", "canonical", "canonical-direct")


@dataclass
class Promotion:
    dfa: DFA
    mode: str
    timings: dict[str, float] = field(default_factory=dict)


def promote(pattern: DFA, model: BPEModel, mode: str = "canonical", automaton: CanonicalAutomaton | None = None,
            trie: SpellingTrie | None = None, max_states: int | None = None) -> Promotion:
    """Promote a base-symbol DFA to a token DFA (see module docstring)."""
    if mode not in MODES:
        raise BpefstError(f"unknown promotion mode {mode!r} (expected one of {', '.join(MODES)})")
    timings: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = now - clock
        clock = now

    if mode == "canonical-direct":
        dfa = promote_direct(pattern, model)
        lap("merges")
        return Promotion(dfa, mode, timings)
    trie = trie or SpellingTrie.from_model(model)
    lap("trie")
    lattice = promote_agnostic(pattern, model, trie, minimal=(mode == "agnostic"))
    lap("lattice")
    if mode == "agnostic":
        return Promotion(lattice, mode, timings)
    if automaton is None:
        automaton = build_canonical(MergeForest.from_model(model))
        lap("a_bpe")
    dfa = intersect_canonical(lattice, automaton, max_states=max_states)
    lap("intersect")
    return Promotion(dfa, mode, timings)
