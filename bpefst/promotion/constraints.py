"""What users write as a constraint (a regex or a JSON Schema) -> the pattern text ``bpefst.promote`` compiles.

The one way to get a guide is ``bpefst.promote(tokenizer, regex or
json_schema=...).guide()`` (:class:`~.token_language.TokenLanguage`).
"""

from __future__ import annotations

from ..errors import BpefstError
from ..regex.json_schema import DEFAULT_MAX_DEPTH, schema_to_regex

__all__ = ["constraint_pattern"]


def constraint_pattern(regex: str | None = None, json_schema=None, whitespace: int = 0, max_depth: int = DEFAULT_MAX_DEPTH,
                       strict: bool = True, member_order: str = "schema") -> str:
    """The regex of a constraint given as exactly one of ``regex`` or ``json_schema`` (a dict).

    ``whitespace``, ``max_depth``, ``strict`` and ``member_order`` apply to ``json_schema``
    (:func:`bpefst.regex.json_schema.schema_to_regex`).
    """
    if (regex is None) == (json_schema is None):
        raise BpefstError("give exactly one of regex and json_schema")
    if json_schema is not None:
        return schema_to_regex(json_schema, whitespace, max_depth=max_depth, strict=strict, member_order=member_order)
    for name, value, default in (("whitespace", whitespace, 0), ("member_order", member_order, "schema")):
        if value != default:
            raise BpefstError(f"{name} applies to json_schema")
    return regex
