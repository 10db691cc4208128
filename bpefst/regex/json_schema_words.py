"""The words of JSON Schema: which keywords validate, which only annotate, and the errors about them.

JSON Schema says a validator ignores the keywords it does not know: they are
annotations (``x-kubernetes-*``, ``javaType``, draft-04's ``id``, ...).  The
translator does the same, with a :class:`SchemaWarning` naming them, and
refuses only the keywords of the vocabulary below that constrain documents
and that it cannot honour.
"""

from __future__ import annotations

import warnings

from ..errors import BpefstError

# Keywords that never constrain a document: skipped silently.
ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$comment", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary",
    "title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions",
    "contentMediaType", "contentEncoding", "contentSchema",
})

# Keywords of drafts 4 to 2020-12 that constrain documents: honoured, or refused by name.
VOCABULARY = frozenset({
    "type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "format", "items", "additionalItems", "prefixItems", "maxItems",
    "minItems", "uniqueItems", "contains", "minContains", "maxContains", "maxProperties", "minProperties",
    "required", "properties", "patternProperties", "additionalProperties", "dependencies", "dependentRequired",
    "dependentSchemas", "propertyNames", "if", "then", "else", "allOf", "anyOf", "oneOf", "not", "$ref",
    "$dynamicRef", "$recursiveRef", "unevaluatedItems", "unevaluatedProperties",
})

FORBIDDEN = ("forbidden",)  # a merged schema's names another allOf branch forbids (no JSON key is a tuple)
MAX_NAMED = 8  # pointers a warning lists before "and N more"


class SchemaError(BpefstError):
    """A schema bpefst cannot translate; the message starts with the JSON pointer of the cause."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(f"JSON Schema {pointer or '/'}: {message}")
        self.pointer = pointer


class SchemaWarning(UserWarning):
    """Keywords the translation ignored (unknown ones) or relaxed (``strict=False``)."""


def at_pointer(root, ref: str):
    """The value a local reference (``#``, ``#/a/0/b``: RFC 6901 escapes) names inside ``root``; LookupError
    when it names nothing."""
    target = root
    for part in ref[2:].split("/") if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        elif isinstance(target, dict) and part in target:
            target = target[part]
        else:
            raise LookupError(ref)
    return target


def pointer_to(pointer: str, key) -> str:
    """The JSON pointer of ``key`` inside the value at ``pointer`` (RFC 6901 escapes)."""
    return f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"


def warn_about(ignored: list[str], relaxed: list[str], stacklevel: int = 3) -> None:
    """One warning line for everything the translation did not enforce."""
    parts = []
    if ignored:
        parts.append(f"ignored unknown keywords and formats (annotations) {_listed(ignored)}")
    if relaxed:
        parts.append(f"NOT enforced (strict=False) {_listed(relaxed)}")
    if parts:
        warnings.warn(SchemaWarning("JSON Schema: " + "; ".join(parts)), stacklevel=stacklevel)


def _listed(pointers: list[str]) -> str:
    shown = ", ".join(pointers[:MAX_NAMED])
    return shown + (f" and {len(pointers) - MAX_NAMED} more" if len(pointers) > MAX_NAMED else "")


_TYPE_OF = {bool: "boolean", type(None): "null", str: "string", dict: "object", list: "array"}


def json_type(value) -> str:
    """The JSON Schema type of a Python value from ``json.loads`` (integral floats are integers)."""
    if isinstance(value, bool) or value is None:
        return _TYPE_OF[type(value)]
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    return _TYPE_OF.get(type(value), "unknown")


def same_json(a, b) -> bool:
    """JSON equality (booleans are not numbers; objects and arrays compared member by member)."""
    if json_type(a) != json_type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return a == b
