"""The functions that make things, for Python users: ``train``, ``compile``, ``promote``.

Each is a thin shell over its layer, taking and returning values (a
:class:`~bpefst.pipeline.encoder.Tokenizer`, a compiled automaton, a
:class:`~bpefst.promotion.token_language.TokenLanguage`), with the command
line's safety limits as defaults.  Loading lives in :mod:`bpefst.registry`.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import Counter
from pathlib import Path
from typing import Iterable, Sequence

from .errors import BpefstError
from .pipeline.encoder import Tokenizer
from .promotion.language_build import DEFAULT_MAX_ARCS, DEFAULT_MAX_LATTICE_ARCS, DEFAULT_MAX_STATES, Limits
from .promotion.parts import PartsCache
from .promotion.token_language import TokenLanguage

COMPILE_KINDS = ("dfa", "transducer")


def train(corpus, vocab_size: int, special_tokens: Sequence[str] = (), *, pattern: str | None = None, alphabet: str = "bytes",
          tie_break: str = "lexicographic", min_frequency: int = 0, end_of_word_suffix: str | None = None,
          jobs: int | None = None, name: str = "") -> Tokenizer:
    """Train BPE on ``corpus`` and return the tokenizer (its ``vocab`` and ``merges`` are bytes, CS336 shapes).

    ``corpus`` is a path (``str`` or ``Path``), a list of paths, or an iterable
    of texts (each one a document; a generator, or a list of strings none of
    which names a file).  A list mixing file names and other strings is
    refused rather than guessed.  ``vocab_size`` counts special tokens, the
    base alphabet and merges; ``pattern`` defaults to ``gpt2`` for bytes and
    ``whitespace`` for characters; ``tie_break`` is ``lexicographic`` (CS336)
    or ``hf`` (HF ``BpeTrainer``).
    """
    from . import training

    if isinstance(special_tokens, str):
        raise BpefstError(f"special_tokens= takes a list of strings, e.g. [{special_tokens!r}]")
    settings = dict(special_tokens=list(special_tokens), pattern=pattern, alphabet=alphabet, tie_break=tie_break,
                    min_frequency=min_frequency, end_of_word_suffix=end_of_word_suffix)
    paths, texts = _corpus_parts(corpus)
    if paths is not None:
        model = training.train_bpe(paths, vocab_size, jobs=jobs, progress=None, **settings)
    else:
        model = _train_on_texts(texts, vocab_size, settings)
    return Tokenizer(model, name=name)


def _corpus_parts(corpus) -> tuple[list[str] | None, Iterable[str] | None]:
    """``(paths, None)`` or ``(None, texts)`` (see :func:`train`)."""
    if isinstance(corpus, (str, os.PathLike)):
        return [os.fspath(corpus)], None
    if isinstance(corpus, (bytes, bytearray)):
        raise BpefstError("train() takes paths or texts (str), not bytes")
    if isinstance(corpus, (list, tuple)):
        if all(isinstance(c, os.PathLike) for c in corpus):
            return [os.fspath(c) for c in corpus], None
        if not all(isinstance(c, (str, os.PathLike)) for c in corpus):
            raise BpefstError("train() takes a list of paths or a list of texts (str)")
        files = [isinstance(c, os.PathLike) or ("\n" not in c and len(c) < 4096 and Path(c).is_file()) for c in corpus]
        if all(files):
            return [os.fspath(c) for c in corpus], None
        if any(files):
            first = next(c for c, is_file in zip(corpus, files) if not is_file)
            raise BpefstError(f"train() got a list mixing file names and texts ({first[:40]!r} names no file); pass "
                              f"only paths, or only texts")
        return None, corpus
    try:
        return None, iter(corpus)
    except TypeError:
        raise BpefstError(f"train() takes a path, a list of paths or an iterable of texts, not {type(corpus).__name__}") from None


def _train_on_texts(texts: Iterable[str], vocab_size: int, settings: dict):
    """Each text counted as one document, with the settings ``train_bpe`` counts files with."""
    from . import training
    from .training.counts import CountSettings

    counting = CountSettings.for_training(settings["pattern"], settings["special_tokens"], settings["alphabet"], settings["tie_break"])
    counter = counting.counter()
    counts: Counter = Counter()
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            raise BpefstError(f"train() text {k} is {type(text).__name__}, not str")
        counter.count_into(counts, text.encode("utf-8", "surrogatepass"), f"text {k}")
    if not counts:
        raise BpefstError("the corpus is empty: no text to train on")
    return training.train_from_counts(counts, vocab_size, **{**settings, "pattern": counting.pattern})


def compile(tokenizer: Tokenizer, kind: str = "dfa", *, encoding: str = "auto", budget: int | None = None):
    """The tokenizer's canonical DFA (``kind="dfa"``, A_BPE) or tokenizing transducer (``"transducer"``), as a value with ``save(path)``."""
    from .bpe.compiled import CanonicalDFA, CompiledTransducer

    model = _model_of(tokenizer)
    if kind == "dfa":
        return CanonicalDFA.build(model, encoding)
    if kind == "transducer":
        return CompiledTransducer.build(model, budget)
    raise BpefstError(f"kind= must be one of {', '.join(COMPILE_KINDS)}, not {kind!r}")


def promote(tokenizer: Tokenizer, regex: str | None = None, *, json_schema: dict | None = None, whitespace: int = 0,
            max_depth: int = 2, strict: bool = True, open_objects: bool | str | None = None,
            member_order: str = "schema", mode: str = "canonical", pretokenize: bool = True,
            max_states: int = DEFAULT_MAX_STATES, max_arcs: int = DEFAULT_MAX_ARCS,
            max_lattice_arcs: int = DEFAULT_MAX_LATTICE_ARCS,
            cache_dir: str | os.PathLike | None = None, parts: PartsCache | None = None) -> TokenLanguage:
    """The token sequences ``tokenizer`` may produce for full matches of ``regex`` (or documents valid under
    ``json_schema``, compact unless ``whitespace=k`` allows up to k whitespace characters around punctuation;
    values the schema leaves open nest at most ``max_depth`` arrays/objects and a recursive ``$ref`` is followed
    that often; ``strict=False`` drops the keywords an automaton cannot honour, with a warning, instead of refusing;
    an object without ``additionalProperties: false`` takes extra members after its listed ones, as JSON Schema
    reads it, unless ``open_objects=False`` closes it; objects list their members in the schema's order, or with
    ``member_order="any"`` an object with at most one required member takes them in any order, for checking
    documents others wrote: an optional member may then repeat, so a decoder could loop), as a
    :class:`TokenLanguage`.  With the default
    ``open_objects=None`` a schema whose open objects take the language past ``max_states`` or ``max_lattice_arcs``
    is promoted with the first cut of :func:`~bpefst.promotion.schema_fallback.schema_fallback` that fits
    (extra values one level deep, or scalars; then only the outermost object open; then every object closed), with one
    :class:`~bpefst.regex.json_schema.SchemaWarning` saying what was cut and where (extra members are what
    makes most real-world schemas too large over a 50k-100k vocabulary); ``open_objects=True`` refuses it
    instead.

    ``mode``: ``canonical`` (only the tokenizer's own encodings of each
    match, following its pre-tokenization unless ``pretokenize=False``),
    ``agnostic`` (every spelling) or ``canonical-direct`` (Algorithm 2).
    The pattern is read here, once (a pattern the tokenizer's
    pre-tokenization cannot be modelled for is refused here); each view is
    built once from it and kept: ``guide()`` (decoding), ``dfa()`` (written out),
    ``shared_rows()``, ``on_demand()``, or ``save(path)`` (the written-out DFA; ``form="guide"``: the
    decoding set-up, for a language too large to write out).  Limits
    (:class:`~bpefst.promotion.language_build.Limits`): ``max_lattice_arcs``
    bounds the token lattice the canonical product walks before its first
    mask (set-up time, about 40 ns an arc), ``max_arcs`` what is written out
    (``dfa()``, ``shared_rows()``, ``save()``, the agnostic lattice), ``max_states``
    the states numbered.  ``cache_dir``
    (canonical): read the build's set-up from there when an earlier process
    wrote it, else write it there.  ``parts``: the
    :class:`~bpefst.promotion.parts.PartsCache` holding the tokenizer's trie
    and A_BPE (default: one shared cache of two tokenizers).
    """
    from .promotion.constraints import constraint_pattern
    from .promotion.schema_fallback import explainer, schema_fallback
    from .regex import alphabet_for, compile_regex

    if regex is not None and not isinstance(regex, str):
        raise BpefstError(f"regex= takes a pattern string, not {type(regex).__name__}")
    model = _model_of(tokenizer)
    if json_schema is not None and regex is None:  # built directly from the schema, without pattern text
        from .regex.json_schema import schema_to_dfa

        def translate(openness, closed: list):
            return schema_to_dfa(json_schema, alphabet_for(model), whitespace, max_depth=max_depth, strict=strict,
                                 open_objects=openness, max_states=max_states, closed=closed, member_order=member_order)

        def build(pattern, openness, lattice_per_arc: float) -> TokenLanguage:
            # the schema and the options name the language in cache_dir, as a regex's text does
            source = "json-schema " + json.dumps([json_schema, whitespace, max_depth, strict, {True: "open", False: "closed"}
                                                  .get(openness, openness), member_order], sort_keys=True, default=str)
            built = TokenLanguage(pattern, model, mode, pretokenize, parts=parts, source=source, cache_dir=cache_dir,
                                  limits=Limits(max_states, max_arcs, lattice_per_arc, max_lattice_arcs),
                                  declared=declared_part(openness, pattern))
            if mode == "canonical":
                built.on_demand()  # its lattice's limits decide here (a cut, or the refusal), not at the first guide()
            return built

        closed_translation: list = []  # (made once, for whichever cut is built)

        def closed_schema():
            """The schema with its objects closed, translated the first time a lattice large enough to defer asks
            for it; None where no object was open, or it does not translate (a member required that only an
            extra one could give)."""
            if not closed_translation:
                with warnings.catch_warnings():  # (the open translation said what the schema's reading drops)
                    warnings.simplefilter("ignore")
                    closed: list = []
                    try:
                        pattern = translate(False, closed)
                    except BpefstError:
                        pattern = None
                closed_translation.append(pattern if closed else None)
            return closed_translation[0]

        def declared_part(openness, pattern):
            """What the language solves first (:mod:`bpefst.promotion.declared`: the listed members, extra ones
            when a decoder enters one); None where it is solved whole anyway (closed, written to a cache)."""
            if openness is False or mode != "canonical" or cache_dir is not None:
                return None
            return lambda: None if (closed := closed_schema()) is None or closed == pattern else closed

        lattice_limit = max_lattice_arcs if mode == "canonical" else max_arcs  # (agnostic and direct write theirs out)
        language, cut = schema_fallback(translate, build, open_objects, max_depth=max_depth, max_arcs=lattice_limit,
                                        vocabulary=model.max_id + 1, explain=explainer(json_schema, model))
        if cut:
            from .regex.json_schema import SchemaWarning

            warnings.warn(SchemaWarning(cut), stacklevel=2)
        return language
    text = constraint_pattern(regex, json_schema, whitespace, max_depth, strict, member_order)
    pattern = compile_regex(text, alphabet_for(model), max_states=max_states)
    return TokenLanguage(pattern, model, mode, pretokenize, limits=Limits(max_states, max_arcs, 1.0, max_lattice_arcs),
                         parts=parts, source=text, cache_dir=cache_dir)


def _model_of(tokenizer):
    if isinstance(tokenizer, Tokenizer):
        return tokenizer.model
    from .tokenizer import BPEModel

    if isinstance(tokenizer, BPEModel):
        return tokenizer
    raise BpefstError(f"expected a bpefst.Tokenizer (from bpefst.load or bpefst.get_encoding), not {type(tokenizer).__name__}")
