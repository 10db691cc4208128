"""The one build behind a :class:`~.token_language.TokenLanguage`, made when the language is.

Each mode has its own construction of the product every view is read from:

* ``canonical``: the lazy product of the pattern's token lattice with A_BPE
  (:class:`~.on_demand.OnDemandCanonical`: lattice and liveness up front,
  states when asked; Eq. 5 of seed 000 with the local pair check of
  Sec. 6.5), over the **chunked pattern** when the tokenizer's
  pre-tokenization cuts some match (:mod:`.pretokenized`), else over the
  pattern itself;
* ``agnostic``: the trimmed token lattice (Eq. 3);
* ``canonical-direct``: Algorithm 2 of seed 001 merge by merge (Eq. 4).

Everything that can refuse a pattern (a pre-tokenization the chunker cannot
model, ``canonical-direct`` over a pattern whose matches are cut) refuses
here, when the language is made, not at its first view.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..automata import DFA, trim
from ..automata.errors import ArcLimitExceeded
from ..errors import BpefstError
from ..regex.compiler import minimal_of_dfa
from ..tokenizer import BPEModel
from .agnostic import LATTICE, promote_agnostic
from .declared import reached_by_prefixes
from .direct import promote_direct
from .on_demand import OnDemandCanonical
from .parts import TokenizerParts
from .pretokenized import BOUNDARY, chunked_pattern, chunker_or_whole

MODES = ("agnostic", "canonical", "canonical-direct")
DEFAULT_MAX_STATES = 1_000_000
DEFAULT_MAX_ARCS = 20_000_000
# The canonical product walks its lattice without writing it out: equal token lists are held once
# (:func:`.agnostic.walk_groups`), so what bounds it is set-up time (about 40 ns an arc), not memory.
DEFAULT_MAX_LATTICE_ARCS = 40_000_000


@dataclass(frozen=True)
class Limits:
    """How far a build may go (ArcLimitExceeded, StateLimitExceeded); None is no limit.

    * ``max_states``: states numbered;
    * ``max_arcs``: arcs written out: the minimal DFA (``dfa()``, ``save()``), the shared rows when written
      out, and the agnostic lattice, whose rows are dicts (about 70 bytes an arc);
    * ``max_lattice_arcs``: arcs of the token lattice of the (chunked) pattern that the canonical product
      walks (``guide()``, ``on_demand()``) and the shared rows are built from: set-up time;
    * ``lattice_per_arc``: the token lattice arcs counted for each arc of the chunked pattern, to refuse a
      lattice past ``max_lattice_arcs`` before walking it.  1 (the default) is a proof: every arc on a base
      symbol is a one-symbol token's arc.  More refuses on an estimate (the cuts of open objects,
      :mod:`.schema_fallback`, where a refusal only means trying a smaller language).
    """

    max_states: int | None = DEFAULT_MAX_STATES
    max_arcs: int | None = DEFAULT_MAX_ARCS
    lattice_per_arc: float = 1.0
    max_lattice_arcs: int | None = DEFAULT_MAX_LATTICE_ARCS


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise BpefstError(f"mode= must be one of {', '.join(MODES)}, not {mode!r}")


def source_automaton(pattern: DFA, model: BPEModel, mode: str, pretokenizer: str | None,
                     max_states: int | None, max_lattice_arcs: int | None = None, lattice_per_arc: float = 1.0,
                     trie=None) -> tuple[DFA, bool]:
    """The automaton the canonical constructions read, and whether pre-tokenization cuts some match.

    With a ``pretokenizer`` (its pattern text; canonical modes only) the
    pattern is crossed with the preset's chunker
    (:func:`.pretokenized.chunked_pattern`); when no match is cut the chunked
    pattern is the pattern again, minimized, and the whole-match
    constructions apply.  ``canonical-direct`` does not model
    pre-tokenization and refuses a pattern whose matches are cut.
    ``max_lattice_arcs`` (the token lattice's limit) refuses a chunked pattern
    with more arcs than that, or, with ``lattice_per_arc`` above 1, whose arcs times that pass it
    (:class:`Limits`), both before its rows are made (:func:`.pretokenized.chunked_pattern`: a refused
    cut of a large schema costs no rows); with the exact limits
    and the tokenizer's ``trie``, a chunked pattern whose lattice is likely past the limit has it
    counted before its rows are made too.
    """
    chunker = chunker_or_whole(pattern, model, pretokenizer) if mode != "agnostic" else None
    if chunker is None:
        return trim(pattern), False
    estimated = lattice_per_arc > 1 and max_lattice_arcs is not None
    # an estimate is a limit on the chunked pattern's arcs, checked before its rows are made
    arcs_limit = int(max_lattice_arcs // lattice_per_arc) if estimated else max_lattice_arcs
    try:
        chunked = chunked_pattern(pattern, model, chunker, max_states, arcs_limit, None if estimated else trie)
    except ArcLimitExceeded:
        if not estimated:
            raise
        what = f"{LATTICE}, estimated at {lattice_per_arc:g} per arc of the chunked pattern's arcs (more than {arcs_limit:,}),"
        raise ArcLimitExceeded(what, max_lattice_arcs, written_out=False) from None
    if not _has_cuts(chunked.transitions):
        return minimal_of_dfa(chunked), False
    if mode == "canonical-direct":
        raise BpefstError(f"--mode canonical-direct does not model the {chunker.rules.preset} pre-tokenization, and "
                          f"the pattern has matches it cuts; use --mode canonical, or --no-pretokenize for whole-match "
                          f"canonicity (mode=, pretokenize=False in Python)")
    return chunked, True


def _has_cuts(rows) -> bool:
    """Whether some state has a BOUNDARY arc; a compiled chunked pattern's rows (``bpefst._core.PackedRows``)
    say it without making their dicts."""
    has_boundary = getattr(rows, "has_boundary", None)
    return has_boundary() if has_boundary is not None else any(BOUNDARY in row for row in rows)


def build_product(source: DFA, model: BPEModel, mode: str, parts: TokenizerParts, limits: Limits, declared=None):
    """The product of ``mode`` over ``source`` (module docstring): an OnDemandCanonical or a DFA.  ``declared``
    (canonical): a sublanguage of the pattern whose part of the lattice is solved first (:mod:`.declared`),
    or a function returning it or None (asked only when the product would solve its lattice whole)."""
    if mode == "canonical":
        def declared_states():
            part = declared() if callable(declared) else declared
            return None if part is None else reached_by_prefixes(source, trim(part))

        return OnDemandCanonical(source, parts.trie, parts.automaton, BOUNDARY, max_states=limits.max_states,
                                 max_lattice_arcs=limits.max_lattice_arcs,
                                 declared=declared_states if declared is not None else None)
    if mode == "agnostic":
        return promote_agnostic(source, model, parts.trie, minimal=False, max_arcs=limits.max_arcs)
    return promote_direct(source, model)
