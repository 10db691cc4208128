"""A promoted pattern as one value: the token sequences that spell its matches, built once, with views.

``bpefst.promote(tokenizer, regex)`` returns a :class:`TokenLanguage`.  The
language reads its pattern when it is made (:mod:`.language_build`: the
chunked pattern), so a pattern the tokenizer's pre-tokenization cannot be
modelled for is refused by ``promote()`` itself; the product of its mode is
built then too, except the canonical lazy product (its lattice walked and its
liveness solved), which waits for the first view that reads it.  Every view
of a canonical language reads that one product.  Each view is built once, has
one type, and is kept:

* :meth:`TokenLanguage.guide` -- a :class:`~.guided.GuidedAutomaton` over the
  product (for ``canonical`` the lazy product, states expanded as a decoder
  reaches them), whatever was asked before;
* :meth:`TokenLanguage.on_demand` -- that lazy product itself (``canonical``);
* :meth:`TokenLanguage.shared_rows` -- every state enumerated, each row
  stored once, a :class:`~bpefst.automata.shared_rows.SharedRowDFA` (for
  ``canonical`` over the product's live lattice);
* :meth:`TokenLanguage.dfa` -- written out and minimized (for ``canonical``
  from the shared rows, which count their arcs while built), what ``bpefst
  promote -o`` saves (refused past ``max_arcs``: e-mail or JSON patterns over
  large vocabularies are refused here, and only here).

All views accept the same language (tested).  ``built`` counts what the
language has built, by stage, and ``timings`` says how long each took.  The
tokenizer's trie and A_BPE come from a :class:`~.parts.PartsCache` (bounded);
a ``cache_dir`` keeps them on disk for the next process, and the canonical
product's set-up too (:mod:`.guide_cache`).  :meth:`save` writes the ``token-automaton``
artifact (the written-out view) or, for a canonical language, the ``token-guide`` artifact (the lazy
product's set-up, for languages too large to write out), and :meth:`load` reads either back (a
``token-automaton`` has only its written-out view; a ``token-guide``, read with its tokenizer, has them all).
"""

from __future__ import annotations

import os
import time
from collections import Counter, OrderedDict
from typing import Sequence

from .. import native
from ..automata import DFA
from ..automata.errors import ArcLimitExceeded
from ..automata.shared_rows import SharedRowDFA
from ..errors import BpefstError
from ..regex.compiler import minimal_of_dfa
from ..tokenizer import BPEModel
from . import guide_cache
from .agnostic import LATTICE
from .guided import GuidedAutomaton
from .language_build import MODES, Limits, build_product, check_mode, source_automaton
from .parts import DEFAULT_PARTS, PartsCache, TokenizerParts, collector_paused
from .pretokenized import shared_canonical_subsets
from .on_demand import OnDemandCanonical
from .token_automaton_io import load_token_automaton, save_token_automaton
from .token_guide_io import read_token_guide, save_token_guide

GUIDES_KEPT = 4  # guides per language, one per stop-id set asked for (least recently used dropped)
STOP_TOKENS = ("<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "</s>", "<eos>")


def _smaller(a: int | None, b: int | None) -> int | None:
    """The smaller of two limits (None: no limit)."""
    return b if a is None else a if b is None else min(a, b)


def default_stop_ids(model: BPEModel) -> list[int]:
    """The model's end-of-text special tokens, by their usual names."""
    return [model.specials[name] for name in STOP_TOKENS if name in model.specials]


class TokenLanguage:
    """The token sequences a tokenizer may produce for the matches of ``pattern`` (see the module docstring).

    ``automaton``: the tokenizer's A_BPE when the caller already has it (a
    ``bpefst compile`` artifact); ``parts``: the cache of tokenizer parts to
    use (default :data:`~.parts.DEFAULT_PARTS`); ``source``: the regex text,
    which names the language in ``cache_dir`` (needed only there);
    ``declared`` (canonical): a sublanguage of ``pattern`` a decoder is expected
    to stay in, solved first and the rest when a decoder leaves it
    (:mod:`.declared`: a JSON Schema translated with its objects closed), the
    same language either way; a DFA, or a function returning one or None,
    called only when the lattice is large enough to be solved in two parts.
    """

    def __init__(self, pattern: DFA, model: BPEModel, mode: str = "canonical", pretokenize: bool = True, *,
                 limits: Limits = Limits(), automaton=None, parts: PartsCache | None = None, source: str | None = None,
                 cache_dir: str | os.PathLike | None = None, declared=None):
        check_mode(mode)
        if native.core is not None:  # what a large earlier language freed (once dropped) goes back before this builds
            native.core.release_freed()
        self.pattern, self.model, self.mode, self.pretokenize = pattern, model, mode, pretokenize
        self.limits, self.source, self.fingerprint = limits, source, model.fingerprint
        self._declared = declared
        self.built: Counter[str] = Counter()
        self.timings: dict[str, float] = {}
        self._views: dict[str, object] = {}
        self._guides: OrderedDict[tuple, GuidedAutomaton] = OrderedDict()
        self._parts_cache = None if automaton is not None else (parts if parts is not None else DEFAULT_PARTS)
        self.parts = self._stage("parts", lambda: _parts_for(model, automaton, self._parts_cache, cache_dir))
        self._source = None
        self._product = self._read_cache(cache_dir) if cache_dir is not None else None
        if self._product is None:
            self._source_automaton()  # what can refuse the pattern, refuses now
            if mode != "canonical" or cache_dir is not None:  # the canonical product waits for a view that reads it
                self._the_product()
            self._write_cache(cache_dir)

    def __repr__(self) -> str:
        return f"<bpefst.TokenLanguage {self.mode} (built: {', '.join(sorted(self.built)) or 'nothing'})>"

    def _stage(self, name: str, build):
        """Run one stage of the build, counted in ``built`` and timed in ``timings``."""
        started = time.perf_counter()
        with collector_paused():
            result = build()
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - started
        self.built[name] += 1
        return result

    def _source_automaton(self) -> DFA:
        """The (chunked) pattern the constructions read; built once (:func:`.language_build.source_automaton`)."""
        if self._source is None:
            name = "chunked pattern" if self.pretokenize and self.mode != "agnostic" and self.model.pattern else "pattern"
            pretokenizer = self.model.pattern if self.pretokenize else None
            limits = self.limits
            trie = self.parts.trie if self.mode == "canonical" else None  # (the canonical product walks it next)
            self._source, _ = self._stage(name, lambda: source_automaton(self.pattern, self.model, self.mode, pretokenizer,
                                                                           limits.max_states, limits.max_lattice_arcs,
                                                                           limits.lattice_per_arc, trie))
        return self._source

    def _the_product(self):
        """The product every view reads (:func:`.language_build.build_product`), built once."""
        if self._product is None:
            self._product = self._view("product", lambda: build_product(self._source_automaton(), self.model, self.mode,
                                                                        self.parts, self.limits, self._declared))
            self._declared = None  # (read once)
        return self._product

    # -- views ---------------------------------------------------------------------------
    def _only_written_out(self) -> bool:
        """Whether this language was loaded from a ``token-automaton`` artifact: no pattern, no product."""
        return self.pattern is None and self._product is None

    def _view(self, name: str, build):
        if name not in self._views:
            if self._only_written_out():
                raise BpefstError(f"this token language was loaded from a file and has only its written-out form; "
                                  f"its {name.replace('_', ' ')} view needs the pattern and tokenizer (bpefst.promote)")
            self._views[name] = self._stage(name, build)
        return self._views[name]

    def on_demand(self):
        """The canonical language as a lazy product: states built as they are reached (``canonical`` only)."""
        if self.mode != "canonical":
            raise BpefstError(f"the on-demand form exists for mode='canonical', not {self.mode!r}")
        return self._the_product()

    def dfa(self) -> DFA:
        """The minimal DFA, written out (ArcLimitExceeded past ``max_arcs`` arcs)."""
        if self.mode == "canonical":
            if "dfa" not in self._views and "shared_rows" not in self._views and not self._only_written_out():
                # built with the write-out limit, so that a language too large is refused while it is built
                self._views["shared_rows"] = self._stage("shared_rows", lambda: self._shared_rows(self.limits.max_arcs))
            return self._view("dfa", self._written_out)
        if self.mode == "agnostic":
            return self._view("dfa", lambda: minimal_of_dfa(self._the_product()))
        return self._view("dfa", self._the_product)  # Algorithm 2 gives the minimal DFA

    def shared_rows(self) -> SharedRowDFA:
        """Every state enumerated, each lattice row stored once."""
        if self.mode != "canonical":
            return self._view("shared_rows", lambda: _one_part_per_state(self._the_product()))
        return self._view("shared_rows", self._shared_rows)

    def _shared_rows(self, max_arcs: int | None = None) -> SharedRowDFA:
        """The canonical subsets over the product's live lattice, rows shared
        (:func:`.pretokenized.shared_canonical_subsets`); ``max_arcs`` refuses them while they are built when
        writing them out would pass it.  The lattice is written out as rows for them, so it is bounded by
        ``max_arcs`` too."""
        product = self._the_product()
        lattice_limit = _smaller(self.limits.max_lattice_arcs, self.limits.max_arcs)
        if lattice_limit is not None and product.lattice_arcs > lattice_limit:
            raise ArcLimitExceeded(LATTICE, lattice_limit)
        return shared_canonical_subsets(product, self.limits.max_states, max_arcs=max_arcs)

    def _written_out(self) -> DFA:
        """The shared-row view written out and minimized.  Written out from the shared rows, not the lazy
        product: they are near-minimal and count their arcs while built, so a language too large to write
        out (e-mail over GPT-2: 200M arcs) is refused in seconds."""
        limit, shared = self.limits.max_arcs, self._views["shared_rows"]
        if limit is not None and (arcs := shared.num_arcs) > limit:
            raise ArcLimitExceeded("the canonical automaton", limit, arcs)
        return minimal_of_dfa(shared.to_dfa())

    def guide(self, stop_ids: int | Sequence[int] | None = None, cache_dir: str | os.PathLike | None = None) -> GuidedAutomaton:
        """The decoding interface over the product (a DFA for a language loaded from a file).

        ``stop_ids`` (default: the tokenizer's end-of-text specials, such as
        ``<|endoftext|>``) are allowed exactly in accepting states, so a decoder
        that samples one has produced a whole match (see :mod:`bpefst.decoding`).
        ``cache_dir`` writes the canonical product's set-up there for the next
        process, unless it is there already, and the tokenizer's parts beside
        it (``bpefst.promote(cache_dir=)`` reads both).
        """
        if cache_dir is not None:
            if self._parts_cache is not None and self.model is not None:
                self._parts_cache.get(self.model, cache_dir)
            self._write_cache(cache_dir)
        if stop_ids is None:
            stop_ids = default_stop_ids(self.model) if self.model is not None else ()
        key = tuple(sorted([stop_ids] if isinstance(stop_ids, int) else stop_ids))
        guided = self._guides.get(key)
        if guided is None:
            form = self.dfa() if self._only_written_out() else self._the_product()
            guided = self._guides[key] = GuidedAutomaton(form, stop_ids=key)
            while len(self._guides) > GUIDES_KEPT:
                self._guides.popitem(last=False)
        self._guides.move_to_end(key)
        return guided

    # -- the on-disk cache of the canonical set-up ----------------------------------------------
    def _cache_key(self) -> str:
        """What names this language in a cache directory: the regex, and whether pre-tokenization is followed."""
        if self.source is None:
            raise BpefstError("cache_dir needs a language promoted from a regex or a JSON Schema (bpefst.promote)")
        follows = self.pretokenize or self.model.pattern is None
        return self.source if follows else f"{self.source}\0whole-match"

    def _read_cache(self, cache_dir):
        if self.mode != "canonical":
            return None
        path = guide_cache.cache_path(cache_dir, self.fingerprint, self._cache_key())
        found = guide_cache.load(path, self.parts.automaton, self.fingerprint, self._cache_key(), self.limits.max_states)
        if found is not None:
            self.built["product from cache"] += 1
        return found

    def _write_cache(self, cache_dir) -> None:
        if cache_dir is None or self.mode != "canonical" or self.pattern is None:
            return
        path = guide_cache.cache_path(cache_dir, self.fingerprint, self._cache_key())
        if not path.exists():
            guide_cache.save(path, self._the_product(), self.fingerprint, self._cache_key())

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
    def save(self, path: str | os.PathLike, form: str = "dfa") -> None:
        """Write the language to ``path``: ``form="dfa"``, the ``token-automaton`` artifact (the minimal DFA,
        refused past ``max_arcs``; what ``bpefst promote -o`` writes); ``form="guide"`` (canonical), the
        ``token-guide`` artifact (the on-demand product's set-up, whatever its size; ``--form guide``), which
        :meth:`load` reads back with the tokenizer."""
        if form == "dfa":
            save_token_automaton(path, self.dfa(), self.mode, self.fingerprint)
        elif form == "guide":
            save_token_guide(path, self.on_demand(), self.fingerprint, self.source, self.pretokenize)
        else:
            raise BpefstError(f"form= must be 'dfa' or 'guide', not {form!r}")

    @classmethod
    def load(cls, path: str | os.PathLike, expected_fingerprint: str | None = None, *, tokenizer=None,
             parts: PartsCache | None = None) -> "TokenLanguage":
        """A ``token-automaton`` artifact, or a ``token-guide`` artifact with the ``tokenizer`` it was built
        for (a :class:`~bpefst.Tokenizer` or its model; its trie and A_BPE from ``parts``, default
        :data:`~.parts.DEFAULT_PARTS`); with ``expected_fingerprint`` or a ``tokenizer``, insist it was built
        for that tokenizer."""
        from ..artifact import peek_kind, read_header_and_body

        model = None if tokenizer is None else getattr(tokenizer, "model", tokenizer)
        if model is not None:
            if not isinstance(model, BPEModel):
                raise BpefstError(f"tokenizer= takes a bpefst.Tokenizer (bpefst.load) or its model, not {type(tokenizer).__name__}")
            if expected_fingerprint is not None and expected_fingerprint != model.fingerprint:
                raise BpefstError(f"expected_fingerprint {expected_fingerprint[:16]} is not the given tokenizer's "
                                  f"({model.fingerprint[:16]})")
            expected_fingerprint = model.fingerprint
        if peek_kind(path) == "token-guide":
            if model is None:
                raise BpefstError(f"{path} is a token guide: load it with the tokenizer it was built for "
                                  f"(TokenLanguage.load(path, tokenizer=bpefst.load(...)))")
            return cls._from_guide(path, model, parts if parts is not None else DEFAULT_PARTS)
        mode, dfa = load_token_automaton(path, expected_fingerprint)
        language = cls._bare(mode, read_header_and_body(path)["fingerprint"], None, False)  # maxmatch keeps its own mode name
        language._views["dfa"] = dfa
        return language

    @classmethod
    def _from_guide(cls, path, model: BPEModel, parts: PartsCache) -> "TokenLanguage":
        """The language a ``token-guide`` artifact holds, over ``model``'s parts, with every view."""
        language = cls._bare("canonical", model.fingerprint, model, False)
        body, liveness = language._stage("read", lambda: read_token_guide(path, model.fingerprint, model.max_id + 1))
        language.source, language.pretokenize, language._parts_cache = body["source"] or None, body["pretokenize"], parts
        language.parts = language._stage("parts", lambda: parts.get(model))
        language._product = language._stage("product from file", lambda: OnDemandCanonical.from_liveness(
            liveness, language.parts.automaton, language.limits.max_states))
        return language

    @classmethod
    def _bare(cls, mode: str, fingerprint: str, model: BPEModel | None, pretokenize: bool) -> "TokenLanguage":
        """A language with no pattern, product or view yet (what :meth:`load` fills in)."""
        language = cls.__new__(cls)
        language.pattern = language.source = language._product = language._source = None
        language.model, language.mode, language.pretokenize, language.limits = model, mode, pretokenize, Limits()
        language.fingerprint = fingerprint
        language.built, language.timings, language.parts, language._parts_cache = Counter(), {}, None, None
        language._views, language._guides = {}, OrderedDict()
        return language


def _parts_for(model: BPEModel, automaton, cache: PartsCache | None, cache_dir=None) -> TokenizerParts:
    """The tokenizer's parts from ``cache`` (kept in ``cache_dir`` too, when given: :mod:`.parts`); with the
    caller's own A_BPE (one promotion per process, as ``bpefst promote`` makes; ``cache`` None), the trie is
    built beside it and nothing is cached."""
    if automaton is not None:
        return TokenizerParts.build(model, automaton, warm=False)
    return cache.get(model, cache_dir)


def _one_part_per_state(dfa: DFA) -> SharedRowDFA:
    """``dfa`` as a SharedRowDFA whose every state is its own row (agnostic and direct products share none)."""
    n = len(dfa.transitions)
    return SharedRowDFA(dfa.transitions, [((q, frozenset()),) for q in range(n)], [None] * n, dfa.start, frozenset(dfa.finals))
