"""One entry point for the promotion routes, with the time each stage takes.

``pattern`` is a DFA over the tokenizer's base symbols (as their token ids, as
:mod:`bpefst.regex` produces with :func:`bpefst.regex.alphabet_for`).

* ``agnostic``: every token sequence spelling a match (Eq. 3 of seed 000);
* ``canonical``: the lattice intersected with the precomputed A_BPE (Eq. 5);
* ``canonical-direct``: Algorithm 2 of seed 001 applied to the pattern merge by
  merge (Eq. 4).

The two canonical routes accept the same language (a tested equivalence); both
results are trimmed and minimal.  With ``minimal=False`` the results are
trimmed only, and the pre-tokenization-aware canonical route returns its
:class:`~bpefst.automata.shared_rows.SharedRowDFA` as built, with no row
written out: the form for automata too large to write out (JSON or e-mail
patterns over cl100k).  With ``on_demand=True`` the canonical route builds
only the lattice and its liveness and returns an
:class:`~.on_demand.OnDemandCanonical` whose states are expanded as a decoder
reaches them: the same automaton, and the fastest route to guided generation.

Without ``pretokenize`` canonical means
BPE-canonical for the whole matched text, i.e. as if the match were one
pre-tokenization chunk.

With ``pretokenize`` (``True``: the model's pattern; or a preset name or
pattern text) ``canonical`` follows the real tokenizer: a sequence is accepted
iff its text matches, no token spans a chunk boundary of ``findall(R, text)``,
and inside each chunk every adjacent pair is canonical (pairs across a
boundary are exempt), i.e. the result accepts exactly
``{encode_ordinary(s) : s matches}`` (:mod:`.pretokenized`; gpt2 and cl100k
patterns, and ``whitespace`` when no match is cut).  When no match is cut
(the chunked pattern has no boundary) both canonical routes run the
whole-match construction on the pattern; otherwise ``canonical-direct``
refuses, as it does not model pre-tokenization.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..automata import DFA, minimize
from ..automata.errors import ArcLimitExceeded
from ..automata.shared_rows import SharedRowDFA
from ..bpe import CanonicalAutomaton, MergeForest, build_canonical
from ..errors import BpefstError
from ..tokenizer import BPEModel
from ..tokenizer.pretokenize import resolve_pattern
from .agnostic import SpellingTrie, promote_agnostic
from .canonical import intersect_canonical
from .direct import promote_direct
from .on_demand import OnDemandCanonical
from .language_build import MODES, check_mode, source_automaton
from .pretokenized import BOUNDARY, shared_canonical_subsets

@dataclass
class Promotion:
    dfa: DFA | SharedRowDFA | OnDemandCanonical
    mode: str
    timings: dict[str, float] = field(default_factory=dict)


def promote(pattern: DFA, model: BPEModel, mode: str = "canonical", automaton: CanonicalAutomaton | None = None,
            trie: SpellingTrie | None = None, max_states: int | None = None, pretokenize: bool | str = False,
            minimal: bool = True, max_arcs: int | None = None, on_demand: bool = False) -> Promotion:
    """Promote a base-symbol DFA to a token DFA (see module docstring).

    ``on_demand`` (``canonical`` only): return the result as an
    :class:`~.on_demand.OnDemandCanonical`, whose states are expanded when a
    decoder reaches them (the lattice and liveness are built now), instead of
    enumerating every state.

    ``max_states`` bounds the states built, ``max_arcs`` the arcs written out
    and those of the token lattice every mode starts from (StateLimitExceeded /
    ArcLimitExceeded); the shared-row form (``minimal=False``) writes no arcs.
    """
    check_mode(mode)
    started = time.perf_counter()
    pretokenizer = None
    if pretokenize is not False:
        pretokenizer = model.pattern if pretokenize is True else resolve_pattern(pretokenize)
    pattern, cut = source_automaton(pattern, model, mode, pretokenizer, max_states)
    chunked = pattern if cut else None
    timings: dict[str, float] = {}
    clock = time.perf_counter()
    if pretokenize is not False and mode != "agnostic":
        timings["chunks"] = clock - started

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        timings[name] = now - clock
        clock = now

    if on_demand:
        if mode != "canonical":
            raise BpefstError("on-demand promotion is for mode canonical")
        trie = trie or SpellingTrie.from_model(model)
        lap("trie")
        if automaton is None:
            automaton = build_canonical(MergeForest.from_model(model))
            lap("a_bpe")
        lazy = OnDemandCanonical(pattern, trie, automaton, BOUNDARY,
                                 max_states=max_states, max_lattice_arcs=max_arcs)
        lap("liveness")
        return Promotion(lazy, mode, timings)
    if mode == "canonical-direct":
        dfa = promote_direct(pattern, model)
        lap("merges")
        return Promotion(dfa, mode, timings)
    trie = trie or SpellingTrie.from_model(model)
    lap("trie")
    if chunked is not None:
        return _promote_chunked(chunked, model, automaton, trie, max_states, timings, lap, minimal, max_arcs)
    lattice = promote_agnostic(pattern, model, trie, minimal=(minimal and mode == "agnostic"), max_arcs=max_arcs)
    lap("lattice")
    if mode == "agnostic":
        return Promotion(lattice, mode, timings)
    if automaton is None:
        automaton = build_canonical(MergeForest.from_model(model))
        lap("a_bpe")
    dfa = intersect_canonical(lattice, automaton, max_states=max_states, minimal=minimal, max_arcs=max_arcs)
    lap("intersect")
    return Promotion(dfa, mode, timings)


def _promote_chunked(chunked, model, automaton, trie, max_states, timings, lap, minimal: bool, max_arcs: int | None) -> Promotion:
    """``canonical`` with pre-tokenization: canonical subsets over the chunked pattern (:mod:`.pretokenized`)."""
    if automaton is None:
        automaton = build_canonical(MergeForest.from_model(model))
        lap("a_bpe")
    shared = shared_canonical_subsets(chunked, trie, automaton, max_states, max_lattice_arcs=max_arcs,
                                      max_arcs=max_arcs if minimal else None)
    lap("subsets")
    if not minimal:
        return Promotion(shared, "canonical", timings)
    if max_arcs is not None and (arcs := shared.num_arcs) > max_arcs:
        raise ArcLimitExceeded("the canonical automaton", max_arcs, arcs)
    dfa = minimize(shared.to_dfa())
    lap("minimize")
    return Promotion(dfa, "canonical", timings)
