"""A JSON Schema's token language with its objects open, or the least cut of them that fits the limits.

JSON Schema lets an object that lists ``properties`` without
``additionalProperties`` take extra members.  Over a 50k-100k token
vocabulary those extra members (free names, values of any type) make most
real-world schemas' token lattices pass the arc limit, so by default a schema
is promoted with its objects open when that fits, else with the first of a
few cuts (:data:`SCHEMA_CUTS`, least lost first) that fits, said in one
warning.  Shared by ``bpefst.promote(json_schema=...)`` and
``bpefst promote --json-schema``.
"""

from __future__ import annotations

from ..automata.errors import ArcLimitExceeded, StateLimitExceeded
from ..regex.json_schema import SchemaError
from ..regex.json_schema_places import heaviest_place
from .pretokenized import LATTICE_PER_CHUNKED_ARC  # (one number for every vocabulary only refuses less over cl100k)

# Pattern arcs -> token lattice arcs: the fewest lattice arcs per arc of the schema's automaton per token of the
# vocabulary seen on the JSONSchemaBench sample over GPT-2 (370 per arc over 50,257 tokens; most schemas make
# 450-1100).  A cut whose automaton times this passes max_arcs is too large, so it is not tried.
LATTICE_PER_ARC_AND_TOKEN = 370 / 50_257
SPREAD = 0.25  # below this share of the schema's automaton, the largest part is not what makes a refusal
SCHEMA_CUTS = ("values-1", "scalar-values", "outermost", "outermost-scalar-values", False)


def schema_fallback(translate, build, open_objects: bool | None, *, max_depth: int, max_arcs: int | None,
                    vocabulary: int, explain=None):
    """``(build(translate(openness, closed), openness, lattice_per_arc), message)``: the schema's language with its objects open
    (``message`` None), else, when open objects take it past a limit and ``open_objects`` is None, with the first
    cut of :data:`SCHEMA_CUTS` that fits (``message`` says which, for the one warning).

    Shared by ``bpefst.promote`` and ``bpefst promote --json-schema``.  The cuts, least lost first, apply only to
    objects that list ``properties`` (or ``patternProperties``) without ``additionalProperties``:

    * ``values-1``: their extra members' values, where the schema leaves them unconstrained, nest at most one
      array/object (instead of ``max_depth``);
    * ``scalar-values``: those values are scalars (null, booleans, numbers, strings);
    * ``outermost``: only the outermost object (the document itself, when it is one) keeps extra members, with
      values up to ``max_depth``; the nested ones take their listed members only;
    * ``outermost-scalar-values``: the same, the outermost object's extra values scalars;
    * ``False``: every such object closed (listed members only).

    A cut is not tried (each failed attempt costs up to seconds) when its automaton is the same as one tried,
    has at least the arcs of one that did not fit, or is too large by :data:`LATTICE_PER_ARC_AND_TOKEN`; and
    ``build`` is asked to refuse one whose chunked pattern is too large by :data:`LATTICE_PER_CHUNKED_ARC`
    (``lattice_per_arc``, :class:`~.language_build.Limits`) before walking its lattice.  The last one is
    always tried with the exact limits, and its refusal is the caller's, said where the schema's automaton is
    largest when ``explain`` (:func:`explained`) is given.
    """
    if open_objects is not None:
        pattern = translate(open_objects, [])
        try:
            return build(pattern, open_objects, 1.0), None
        except (ArcLimitExceeded, StateLimitExceeded) as exc:
            raise explained(exc, pattern, explain) from None
    too_large, tried, failed_arcs = None, [], None
    for openness in (True,) + SCHEMA_CUTS:
        if (openness == "values-1" and max_depth <= 1) or (openness in ("scalar-values", "outermost-scalar-values")
                                                           and max_depth == 0):
            continue  # cuts nothing at this depth
        closed: list[str] = []
        last = openness is False
        pattern = None
        try:
            pattern = translate(openness, closed)
            skip = None if last else _why_skip(pattern, tried, failed_arcs, max_arcs, vocabulary)
            tried.append(pattern)
            if skip is not None:
                too_large = too_large or skip
                continue
            estimate = 1.0 if last else LATTICE_PER_CHUNKED_ARC
            return build(pattern, openness, estimate), (None if openness is True else
                                                        _cut_message(openness, closed, max_depth, too_large))
        except (ArcLimitExceeded, StateLimitExceeded, SchemaError) as exc:
            if last and not isinstance(exc, SchemaError):
                raise explained(exc, pattern, explain) from None
            if last or (isinstance(exc, SchemaError) and "limit exceeded" not in str(exc)):
                raise  # refused for what it says, not for its size: closing objects would not help
            too_large = too_large or str(exc)
            if not isinstance(exc, SchemaError):
                failed_arcs = min(failed_arcs or pattern.num_arcs, pattern.num_arcs)
    raise AssertionError("the last cut returns or raises")


def explainer(schema, model):
    """The ``explain`` of :func:`schema_fallback` for ``schema``'s automata over ``model``'s base symbols."""
    chars = {i: model.vocab[i][0] for i in model.base_ids}  # a byte (an int) or a character
    return lambda pattern: heaviest_place(pattern, schema, chars)


def explained(exc: Exception, pattern, explain) -> Exception:
    """``exc`` (a promotion limit) with the schema pointer where ``pattern``, the schema's automaton, is
    largest put in front of its message (``exc.pointer``), and what would bound it after; ``explain`` is
    ``pattern -> (pointer, share, what)`` (:func:`~bpefst.regex.json_schema_places.heaviest_place`)."""
    if explain is not None and pattern is not None:
        pointer, share, what = explain(pattern)
        explanation = f"{share:.0%} of the schema's automaton is {what}"
        if share < SPREAD:
            explanation = f"no part dominates, the schema is large as a whole (the largest: {explanation})"
        exc.pointer, exc.explanation = pointer, explanation  # type: ignore[attr-defined]
        exc.args = (f"JSON Schema {pointer or '/'}: {exc}; {exc.explanation}",)  # type: ignore[attr-defined]
    return exc


def _why_skip(pattern, tried: list, failed_arcs: int | None, max_arcs: int | None, vocabulary: int) -> str | None:
    """Why ``pattern`` is surely too large without promoting it ("" when no message is due), else None."""
    if any(pattern == before for before in tried):
        return ""  # the cut changed nothing here (no nested object to close, say)
    if failed_arcs is not None and pattern.num_arcs >= failed_arcs:
        return ""  # no smaller than a cut that did not fit (within a schema, lattice arcs grow with pattern arcs)
    if _hopeless(pattern, max_arcs, vocabulary):
        return f"estimated from its automaton's {pattern.num_arcs:,} arcs: a token lattice past {max_arcs:,} arcs"
    return None


def _hopeless(pattern, max_arcs: int | None, vocabulary: int) -> bool:
    """Whether the token lattice of ``pattern`` surely passes ``max_arcs`` (:data:`LATTICE_PER_ARC_AND_TOKEN`)."""
    return max_arcs is not None and pattern.num_arcs * LATTICE_PER_ARC_AND_TOKEN * vocabulary > max_arcs


def _cut_message(openness, closed: list[str], max_depth: int, too_large: str) -> str:
    """One line: what the cut took away, where, and why."""
    where = ", ".join(p or "(the document)" for p in closed[:5]) + (f" and {len(closed) - 5} more" if len(closed) > 5 else "")
    what = {"values-1": f"extra members' unconstrained values nest at most 1 array/object (not max_depth={max_depth})",
            "scalar-values": "extra members' unconstrained values are scalars only (no array or object)",
            "outermost": f"objects closed (no members beyond the listed ones) except the outermost: {where}",
            "outermost-scalar-values": f"objects closed (no members beyond the listed ones) except the outermost, whose "
                                       f"extra members' unconstrained values are scalars: {where}",
            False: f"objects closed (no members beyond the listed ones): {where}"}[openness]
    return (f"{what}; with extra members as JSON Schema allows them the language is too large ({too_large}); "
            f"open_objects=True refuses instead")
