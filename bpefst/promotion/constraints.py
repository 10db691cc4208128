"""What users write as a constraint (a regex or a JSON Schema) -> the pattern text, and the old entry points.

:func:`constraint_pattern` turns exactly one of a regex or a JSON Schema
(:func:`bpefst.regex.json_schema.schema_to_regex`) into the pattern text that
``bpefst.promote`` compiles.  The one way to get a guide is
``bpefst.promote(tokenizer, regex or json_schema=...).guide()``
(:class:`~.token_language.TokenLanguage`); :func:`guide`,
:func:`promote_constraint` and :func:`model_parts` are deprecated aliases
kept for callers written before it, thin shells over that value that keep
nothing themselves.
"""

from __future__ import annotations

import warnings

from ..errors import BpefstError
from ..regex import alphabet_for, compile_regex
from ..regex.json_schema import DEFAULT_MAX_DEPTH, schema_to_regex
from ..tokenizer import BPEModel
from .guided import GuidedAutomaton
from .language_build import DEFAULT_MAX_ARCS, DEFAULT_MAX_STATES, Limits
from .parts import DEFAULT_PARTS
from .token_language import STOP_TOKENS, TokenLanguage, default_stop_ids

GUIDE_MODES = ("canonical", "agnostic")
# the limits of `bpefst promote`, kept by the Python API
MAX_STATES = DEFAULT_MAX_STATES
MAX_ARCS = DEFAULT_MAX_ARCS
__all__ = ["GUIDE_MODES", "STOP_TOKENS", "EmptyConstraint", "constraint_pattern", "default_stop_ids", "guide", "model_parts",
           "promote_constraint"]


class EmptyConstraint(BpefstError):
    """No token sequence of the tokenizer spells a match: nothing to decode."""


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


def model_parts(model: BPEModel):
    """Deprecated: ``(trie, A_BPE)`` of ``model`` from :data:`~.parts.DEFAULT_PARTS`."""
    _deprecated("model_parts(model)", "bpefst.promotion.parts.DEFAULT_PARTS.get(model)")
    parts = DEFAULT_PARTS.get(model)
    return parts.trie, parts.automaton


def _language(model: BPEModel, pattern: str, mode: str, max_states, max_arcs, cache_dir) -> TokenLanguage:
    if mode not in GUIDE_MODES:
        raise BpefstError(f"unknown decoding mode {mode!r} (expected one of {', '.join(GUIDE_MODES)})")
    compiled = compile_regex(pattern, alphabet_for(model), max_states=max_states)
    return TokenLanguage(compiled, model, mode, pretokenize=True, limits=Limits(max_states, max_arcs), source=pattern,
                         cache_dir=cache_dir)


def promote_constraint(model: BPEModel, pattern: str, mode: str = "canonical", max_states: int | None = MAX_STATES,
                       max_arcs: int | None = MAX_ARCS, cache_dir=None):
    """Deprecated: the automaton under ``bpefst.promote(model, pattern, mode=mode).guide()``."""
    _deprecated("promote_constraint(...)", "bpefst.promote(...).guide().automaton")
    return _language(model, pattern, mode, max_states, max_arcs, cache_dir).guide().automaton


def guide(model: BPEModel, regex: str | None = None, *, json_schema=None, whitespace: int = 0, max_depth: int = DEFAULT_MAX_DEPTH,
          strict: bool = True, mode: str = "canonical",
          stop_ids=None, max_states: int | None = MAX_STATES, max_arcs: int | None = MAX_ARCS, cache_dir=None) -> GuidedAutomaton:
    """Deprecated: ``bpefst.promote(model, regex or json_schema=..., mode=mode).guide(stop_ids)``, refusing an empty language."""
    import json

    _deprecated("bpefst.promotion.guide(...)", "bpefst.promote(...).guide()")
    pattern = constraint_pattern(regex, json_schema, whitespace, max_depth, strict)
    guided = _language(model, pattern, mode, max_states, max_arcs, cache_dir).guide(stop_ids)
    if guided.start is None:
        what = "schema" if json_schema is not None else "pattern"
        shown = json.dumps(json_schema)[:80] if json_schema is not None else pattern[:80]
        raise EmptyConstraint(f"no token sequence of this tokenizer spells a match of the {what} {shown}")
    return guided


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: use {new}", DeprecationWarning, stacklevel=3)
