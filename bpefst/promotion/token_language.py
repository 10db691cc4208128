"""A promoted pattern as one value: the token sequences that spell its matches, with each route as a view.

``bpefst.promote(tokenizer, regex)`` returns a :class:`TokenLanguage`.  The
language is fixed when it is made (pattern, tokenizer, mode, pre-tokenization);
how it is represented is chosen by the caller when asking, and each form is
built on first use and kept:

* :meth:`TokenLanguage.guide` -- a :class:`~.guided.GuidedAutomaton` for
  decoding; for ``canonical`` the on-demand lazy product (:mod:`.on_demand`,
  states expanded as a decoder reaches them, the fastest route by far);
* :meth:`TokenLanguage.on_demand` -- that lazy product itself;
* :meth:`TokenLanguage.shared_rows` -- every state enumerated, rows stored once
  (:mod:`bpefst.automata.shared_rows`);
* :meth:`TokenLanguage.dfa` -- written out and minimized, what ``bpefst
  promote -o`` saves (bounded by ``max_arcs``: e-mail or JSON patterns over
  large vocabularies are refused here, and only here).

All views accept the same language (tested); :meth:`save` writes the
``token-automaton`` artifact and :meth:`load` reads one back (a loaded
language has only its written-out view).
"""

from __future__ import annotations

import os
from typing import Sequence

from ..automata import DFA
from ..errors import BpefstError
from ..tokenizer import BPEModel
from .constraints import EmptyConstraint
from .guided import GuidedAutomaton
from .promote import MODES, promote
from .token_automaton_io import load_token_automaton, save_token_automaton

DEFAULT_MAX_STATES = 1_000_000
DEFAULT_MAX_ARCS = 20_000_000


class TokenLanguage:
    """The token sequences a tokenizer may produce for the matches of ``pattern`` (see the module docstring)."""

    def __init__(self, pattern: DFA | None, model: BPEModel | None, mode: str = "canonical", pretokenize: bool = True,
                 automaton=None, max_states: int = DEFAULT_MAX_STATES, max_arcs: int = DEFAULT_MAX_ARCS,
                 fingerprint: str | None = None, source: str | None = None):
        if mode not in MODES:
            raise BpefstError(f"mode= must be one of {', '.join(MODES)}, not {mode!r}")
        self.pattern, self.model, self.mode, self.pretokenize = pattern, model, mode, pretokenize
        self.automaton = automaton  # A_BPE, when the caller already has it
        self.max_states, self.max_arcs = max_states, max_arcs
        self.source = source  # the regex text, when made from one: guides are then shared across languages (.constraints)
        self.fingerprint = fingerprint if fingerprint is not None else (model.fingerprint if model is not None else "")
        self._views: dict[str, object] = {}

    def __repr__(self) -> str:
        built = ", ".join(sorted({k if isinstance(k, str) else k[0] for k in self._views})) or "nothing built yet"
        return f"<bpefst.TokenLanguage {self.mode} ({built})>"

    # -- views ---------------------------------------------------------------------------

    def _view(self, name: str, build):
        if name not in self._views:
            if self.pattern is None:
                raise BpefstError(f"this token language was loaded from a file and has only its written-out form; "
                                  f"its {name.replace('_', ' ')} view needs the pattern and tokenizer (bpefst.promote)")
            self._views[name] = build()
        return self._views[name]

    def _promote(self, **options):
        from .constraints import model_parts

        trie, automaton = model_parts(self.model)  # kept per tokenizer: the next language over it starts from them
        return promote(self.pattern, self.model, self.mode, self.automaton or automaton, trie=trie, max_states=self.max_states,
                       pretokenize=self.pretokenize and self.mode != "agnostic", max_arcs=self.max_arcs, **options).dfa

    def dfa(self) -> DFA:
        """The minimal DFA, written out (may raise ArcLimitExceeded for very large languages)."""
        return self._view("dfa", self._promote)

    def shared_rows(self):
        """Every state enumerated, each lattice row stored once (canonical); the DFA for agnostic."""
        if self.mode == "agnostic":
            return self.dfa()
        return self._view("shared_rows", lambda: self._promote(minimal=False))

    def on_demand(self):
        """The canonical language as a lazy product: states built as they are reached (``canonical`` only)."""
        if self.mode != "canonical":
            raise BpefstError(f"the on-demand form exists for mode='canonical', not {self.mode!r}")
        return self._view("on_demand", lambda: self._promote(on_demand=True))

    def guide(self, stop_ids: int | Sequence[int] | None = None, cache_dir: str | os.PathLike | None = None) -> GuidedAutomaton:
        """The decoding interface over the cheapest form: on demand for ``canonical``, the DFA otherwise.

        ``stop_ids`` (default: the tokenizer's end-of-text specials, such as
        ``<|endoftext|>``) are allowed exactly in accepting states, so a decoder
        that samples one has produced a whole match (see :mod:`bpefst.decoding`).
        ``cache_dir`` keeps the canonical automaton's set-up on disk for the
        next process (:mod:`.guide_cache`).
        """
        if stop_ids is None:
            from .constraints import default_stop_ids

            stop_ids = default_stop_ids(self.model) if self.model is not None else ()
        stops = tuple(sorted([stop_ids] if isinstance(stop_ids, int) else stop_ids))
        key = ("guide", stops)
        if key not in self._views and self._shared_guide_applies():
            from .constraints import guide

            try:  # the same constraint over the same tokenizer reuses the states and masks earlier decodes expanded
                self._views[key] = guide(self.model, self.source, mode=self.mode, stop_ids=stops, max_states=self.max_states,
                                         max_arcs=self.max_arcs, cache_dir=cache_dir)
            except EmptyConstraint:
                pass  # an empty language: built below, with no start state
        if key not in self._views:
            if "dfa" in self._views or self.pattern is None or self.mode != "canonical":
                form = self.dfa()
            else:
                form = self.on_demand()
            self._views[key] = GuidedAutomaton(form, stop_ids=stops)
        return self._views[key]

    def _shared_guide_applies(self) -> bool:
        return (self.source is not None and self.mode in ("canonical", "agnostic") and "dfa" not in self._views
                and (self.pretokenize or self.mode == "agnostic" or self.model.pattern is None))

    # -- questions -------------------------------------------------------------------------

    def accepts(self, ids: Sequence[int]) -> bool:
        """Whether the token sequence ``ids`` is in the language."""
        guide = self.guide()
        state = guide.start
        for token in ids:
            if state is None:
                return False
            state = guide.step(state, token)
        return state is not None and guide.is_accepting(state)

    def is_empty(self) -> bool:
        guide = self.guide()
        if guide.start is None:
            return True
        form = guide.automaton
        return form.is_empty() if isinstance(form, DFA) else False

    # -- files -----------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> None:
        """Write the ``token-automaton`` artifact (the minimal DFA; what ``bpefst promote -o`` writes)."""
        save_token_automaton(path, self.dfa(), self.mode, self.fingerprint)

    @classmethod
    def load(cls, path: str | os.PathLike, expected_fingerprint: str | None = None) -> "TokenLanguage":
        """A ``token-automaton`` artifact; with ``expected_fingerprint``, insist it was built for that tokenizer."""
        from ..artifact import read_header_and_body

        mode, dfa = load_token_automaton(path, expected_fingerprint)
        language = cls(None, None, mode if mode in MODES else "canonical", fingerprint=read_header_and_body(path)["fingerprint"])
        language.mode = mode  # maxmatch artifacts keep their own mode name
        language._views["dfa"] = dfa
        return language
