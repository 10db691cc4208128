"""A constraint (regex or JSON Schema) over a tokenizer -> the automaton a decoder steps through.

One call from what users write to a :class:`~.guided.GuidedAutomaton`:
the pattern (a regex, or :func:`bpefst.regex.json_schema.schema_to_regex` of
a schema) is compiled over the tokenizer's base alphabet and promoted:

* ``mode="canonical"`` (the default): the tokenizer's own encodings of the
  matches only, following its pre-tokenization, built on demand
  (:mod:`.on_demand`: states are expanded as a decoder reaches them);
* ``mode="agnostic"``: every token sequence spelling a match (what
  outlines-core, llguidance and xgrammar accept).

Everything built is kept for the next request: per tokenizer (by
fingerprint) the spelling trie and A_BPE, per (tokenizer, pattern, mode) the
guided automaton itself, with the states and masks earlier decodes expanded.
Its states never change once built, so requests can share it.  With
``cache_dir``, the canonical automaton's set-up (the lattice walk and liveness
solve) is also kept on disk for the next process (:mod:`.guide_cache`).
"""

from __future__ import annotations

from collections import OrderedDict

from ..bpe import MergeForest, build_canonical
from ..errors import BpefstError
from ..regex import alphabet_for, compile_regex
from ..regex.json_schema import DEFAULT_MAX_DEPTH, schema_to_regex
from ..tokenizer import BPEModel
from . import guide_cache
from .agnostic import SpellingTrie
from .guided import GuidedAutomaton
from .promote import promote

GUIDE_MODES = ("canonical", "agnostic")
STOP_TOKENS = ("<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "</s>", "<eos>")
CACHE_SIZE = 8  # guided automata kept (the least recently used goes first); each can hold 10s of MB of expanded states and masks
# the limits of `bpefst promote`, kept by the Python API
MAX_STATES = 1_000_000
MAX_ARCS = 20_000_000

_parts: dict[str, tuple[SpellingTrie, object]] = {}


class EmptyConstraint(BpefstError):
    """No token sequence of the tokenizer spells a match: nothing to decode."""

_guides: OrderedDict[tuple, GuidedAutomaton] = OrderedDict()


def constraint_pattern(regex: str | None = None, json_schema=None, whitespace: int = 0, max_depth: int = DEFAULT_MAX_DEPTH,
                       strict: bool = True) -> str:
    """The regex of a constraint given as exactly one of ``regex`` or ``json_schema`` (a dict).

    ``whitespace``, ``max_depth`` and ``strict`` apply to ``json_schema``
    (:func:`bpefst.regex.json_schema.schema_to_regex`).
    """
    if (regex is None) == (json_schema is None):
        raise BpefstError("give exactly one of regex and json_schema")
    if json_schema is not None:
        return schema_to_regex(json_schema, whitespace, max_depth=max_depth, strict=strict)
    if whitespace:
        raise BpefstError("whitespace applies to json_schema")
    return regex


def default_stop_ids(model: BPEModel) -> list[int]:
    """The model's end-of-text special tokens, by their usual names."""
    return [model.specials[name] for name in STOP_TOKENS if name in model.specials]


def model_parts(model: BPEModel):
    """The spelling trie (with its walk indexes) and A_BPE of ``model``, built once per tokenizer fingerprint."""
    parts = _parts.get(model.fingerprint)
    if parts is None:
        trie = SpellingTrie.from_model(model)
        trie.steps(), trie.chains(), trie.subtrees()  # what every walk reads: built now, since the trie is kept
        automaton = build_canonical(MergeForest.from_model(model))
        automaton.banned_mask(0)  # and the index of one token's banned set the on-demand steps use
        parts = _parts[model.fingerprint] = (trie, automaton)
    return parts


def promote_constraint(model: BPEModel, pattern: str, mode: str = "canonical", max_states: int | None = MAX_STATES,
                       max_arcs: int | None = MAX_ARCS, cache_dir=None):
    """The promoted automaton of ``pattern`` (what :class:`GuidedAutomaton` takes).

    ``cache_dir`` (canonical mode): read the set-up from there when an earlier
    run wrote it, else build it and write it there.
    """
    if mode not in GUIDE_MODES:
        raise BpefstError(f"unknown decoding mode {mode!r} (expected one of {', '.join(GUIDE_MODES)})")
    trie, automaton = model_parts(model)
    cached = None
    if cache_dir is not None and mode == "canonical":
        cached = guide_cache.cache_path(cache_dir, model.fingerprint, pattern)
        found = guide_cache.load(cached, automaton, model.fingerprint, pattern, max_states)
        if found is not None:
            return found
    dfa = compile_regex(pattern, alphabet_for(model), max_states=max_states)
    if mode == "agnostic":
        return promote(dfa, model, "agnostic", trie=trie, max_states=max_states, minimal=False, max_arcs=max_arcs).dfa
    lazy = promote(dfa, model, "canonical", automaton=automaton, trie=trie, max_states=max_states,
                   pretokenize=model.pattern is not None, on_demand=True, max_arcs=max_arcs).dfa
    if cached is not None:
        guide_cache.save(cached, lazy, model.fingerprint, pattern)
    return lazy


def guide(model: BPEModel, regex: str | None = None, *, json_schema=None, whitespace: int = 0, max_depth: int = DEFAULT_MAX_DEPTH,
          strict: bool = True, mode: str = "canonical",
          stop_ids=None, max_states: int | None = MAX_STATES, max_arcs: int | None = MAX_ARCS, cache_dir=None) -> GuidedAutomaton:
    """A :class:`GuidedAutomaton` for a regex or a JSON Schema over ``model`` (cached; module docstring).

    ``stop_ids``: the tokens that end generation, allowed exactly in accepting
    states; default: the model's end-of-text specials (:func:`default_stop_ids`).
    ``cache_dir``: a directory to keep the canonical set-up in across processes
    (:mod:`.guide_cache`).
    """
    import json

    pattern = constraint_pattern(regex, json_schema, whitespace, max_depth, strict)
    stops = tuple(sorted(default_stop_ids(model) if stop_ids is None else ([stop_ids] if isinstance(stop_ids, int) else stop_ids)))
    key = (model.fingerprint, pattern, mode, stops, max_states, max_arcs)
    found = _guides.get(key)
    if found is not None:
        _guides.move_to_end(key)
        return found
    guided = GuidedAutomaton(promote_constraint(model, pattern, mode, max_states, max_arcs, cache_dir), stop_ids=stops)
    if guided.start is None:
        what = "schema" if json_schema is not None else "pattern"
        shown = json.dumps(json_schema)[:80] if json_schema is not None else pattern[:80]
        raise EmptyConstraint(f"no token sequence of this tokenizer spells a match of the {what} {shown}")
    _guides[key] = guided
    if len(_guides) > CACHE_SIZE:
        _guides.popitem(last=False)
    return guided
