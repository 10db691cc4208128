"""``allOf``: several schemas that must all hold, merged into the one schema they amount to.

A finite automaton for ``allOf`` would be the product of its branches'
automata; for the keywords people combine (a ``$ref`` to a base plus a few
more properties, ``required`` or bounds) the product is again a plain schema,
built keyword by keyword:

* ``type`` and ``enum``/``const``: the intersection;
* lower bounds (``minimum``, ``minLength``, ...) the largest, upper bounds the
  smallest; ``required`` the union; ``uniqueItems`` the or;
* ``properties``: the union, a property listed in several branches (or
  listed in one and governed by another's ``patternProperties`` or
  ``additionalProperties``) gets ``allOf`` of its schemas; a property some
  branch forbids (``additionalProperties: false`` there) is dropped, and is a
  conflict when required;
* ``items``/``prefixItems``: position by position;
* ``anyOf``/``oneOf`` inside a branch distribute over the rest
  (``A and (B or C)`` is ``(A and B) or (A and C)``; for ``oneOf`` the
  branches stay mutually exclusive, so it stays a ``oneOf``);
* any other keyword must have the same value in every branch that has it.

What does not combine raises :class:`SchemaError` with the pointer of the
keyword that conflicts.
"""

from __future__ import annotations

import regex

from .json_schema_words import FORBIDDEN, VOCABULARY, SchemaError, pointer_to, same_json

MAX_BRANCHES = 64  # anyOf/oneOf branches after distributing them over an allOf
MAX_PARTS = 1000  # schemas one allOf may expand to through nested allOf and $ref

LOWER = ("minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains")
UPPER = ("maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains")
OBJECT_SHAPE = ("properties", "patternProperties", "additionalProperties")
ARRAY_SHAPE = ("prefixItems", "items")


class NoDocument(SchemaError):
    """The branches cannot all hold (their types or enum values have nothing in common): no document is valid.
    Inside an ``anyOf``/``oneOf`` distributed over the rest, that branch is dropped."""


def merge_all(parts: list[tuple[object, str]], resolve, origin: dict, scan=None) -> object:
    """The schema equivalent to all ``(schema, pointer)`` parts holding together.

    ``resolve(ref, pointer)`` follows a ``$ref`` to ``(schema, pointer)``;
    ``origin`` maps ``id(subschema)`` to ``(subschema, pointer)``, so that
    errors inside the merged schema still name the place in the document the
    user wrote; ``scan(schema, pointer)`` sees every part (for the warning
    about unknown keywords, which the merge drops).
    """
    flat = _flatten(parts, resolve)
    for schema, pointer in flat:
        if scan is not None and isinstance(schema, dict):
            scan(schema, pointer)
    if any(schema is False for schema, _ in flat):
        return False
    for i, (schema, pointer) in enumerate(flat):
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                return _distribute(flat, i, keyword, resolve, origin, scan)
    return _combine(flat, origin)


def _flatten(parts, resolve) -> list[tuple[object, str]]:
    """The parts with ``$ref`` followed and nested ``allOf`` spread out; ``True`` parts dropped."""
    out: list[tuple[object, str]] = []
    stack = list(reversed(parts))
    while stack:
        if len(out) + len(stack) > MAX_PARTS:
            raise SchemaError(stack[-1][1], f"allOf expands to more than {MAX_PARTS} schemas (a $ref loop through allOf?)")
        schema, pointer = stack.pop()
        if schema is True or schema is False:
            if schema is False:
                out.append((False, pointer))
            continue
        if not isinstance(schema, dict):
            raise SchemaError(pointer, f"a schema must be an object or a boolean, not {type(schema).__name__}")
        rest = {k: v for k, v in schema.items() if k not in ("$ref", "allOf")}
        inner = []
        if "$ref" in schema:
            inner.append(resolve(schema["$ref"], pointer_to(pointer, "$ref")))
        if "allOf" in schema:
            branches = schema["allOf"]
            where = pointer_to(pointer, "allOf")
            if not isinstance(branches, list) or not branches:
                raise SchemaError(where, "must be a non-empty list of schemas")
            inner.extend((branch, pointer_to(where, i)) for i, branch in enumerate(branches))
        if rest or not inner:
            out.append((rest, pointer))
        stack.extend(reversed(inner))
    return out


def _distribute(flat, i: int, keyword: str, resolve, origin, scan) -> dict:
    schema, pointer = flat[i]
    where = pointer_to(pointer, keyword)
    branches = schema[keyword]
    rest = {k: v for k, v in schema.items() if k != keyword}
    if keyword == "oneOf":
        exclusive = required_only_oneof(branches)
        if exclusive is not None:  # the same documents as an anyOf of branches that exclude each other
            keyword, branches = "anyOf", exclusive
            for j, branch in enumerate(branches):
                note(origin, branch, pointer_to(where, j))
    if not isinstance(branches, list) or not branches:
        raise SchemaError(where, "must be a non-empty list of schemas")
    if len(branches) > MAX_BRANCHES:
        raise SchemaError(where, f"more than {MAX_BRANCHES} branches to combine with the rest of the allOf")
    others = flat[:i] + ([(rest, pointer)] if rest else []) + flat[i + 1:]
    merged = []
    for j, branch in enumerate(branches):
        try:
            one = merge_all(others + [(branch, pointer_to(where, j))], resolve, origin, scan)
        except NoDocument:
            one = False  # this branch cannot hold beside the rest: no document takes it
        if isinstance(one, dict) and keyword in one and len(one) == 1:
            merged.extend(one[keyword])  # nested distribution: flatten (or-of-ors is an or)
        elif one is not False:
            merged.append(one)
        if len(merged) > MAX_BRANCHES:
            raise SchemaError(where, f"more than {MAX_BRANCHES} branches after combining with the rest of the allOf")
    if not merged:
        return False
    result = {keyword: merged}
    note(origin, result, where)
    return result


def _combine(flat, origin) -> dict:
    """Plain schemas (no combinators, no $ref) combined keyword by keyword."""
    merged: dict = {}
    for schema, pointer in flat:
        for key, value in schema.items():
            if key not in VOCABULARY:
                continue  # annotations, and unknown keywords (scan warned about them)
            where = pointer_to(pointer, key)
            if key == "const":
                key, value = "enum", [value]
            if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                raise SchemaError(where, "draft-04 boolean exclusive bounds inside allOf are not supported; write the number")
            if key in OBJECT_SHAPE or key in ARRAY_SHAPE or key == "additionalItems":
                continue  # below, with the other branches' view of each member
            merged[key] = value if key not in merged else _join(key, merged[key], value, where)
            note(origin, merged[key], where)
    shaped = [(s, p) for s, p in flat if any(k in s for k in OBJECT_SHAPE)]
    if shaped:
        merged.update(_objects(shaped, origin))
    listed = [(s, p) for s, p in flat if any(k in s for k in ARRAY_SHAPE + ("additionalItems",))]
    if listed:
        merged.update(_arrays(listed, origin))
    if "enum" in merged and not merged["enum"]:
        raise NoDocument(flat[-1][1], "allOf: no value is in every branch's enum/const")
    return merged


def _join(key: str, old, new, where: str):
    if key == "type":
        kept = [t for t in _types(old) if t in _types(new) or (t == "integer" and "number" in _types(new))]
        kept += [t for t in _types(new) if t == "integer" and "number" in _types(old) and t not in kept]
        if not kept:
            raise NoDocument(where, f"allOf: the types {_types(old)} and {_types(new)} have nothing in common")
        return kept
    if key == "enum":
        return [v for v in old if any(same_json(v, w) for w in new)]
    if key == "required":
        return list(old) + [name for name in new if name not in old]
    if key in LOWER:
        return max(old, new)
    if key in UPPER:
        return min(old, new)
    if key == "uniqueItems":
        return bool(old) or bool(new)
    if key == "propertyNames":
        return {"allOf": [old, new]}
    if key == "not":  # neither holds: not (old or new)
        return {"anyOf": [old, new]}
    if same_json(old, new) or old == new:
        return old
    raise SchemaError(where, f"allOf: the branches give {key!r} different values, which cannot be merged")


def _types(value) -> list:
    return list(value) if isinstance(value, list) else [value]


def _objects(shaped, origin) -> dict:
    """properties / patternProperties / additionalProperties of several branches, as one branch would say them."""
    if len(shaped) == 1:
        schema, pointer = shaped[0]
        for key in OBJECT_SHAPE:
            if isinstance(schema.get(key), dict):
                note(origin, schema[key], pointer_to(pointer, key))
        return {k: schema[k] for k in OBJECT_SHAPE if k in schema}
    patterned = [p for s, p in shaped if s.get("patternProperties")]
    if patterned and len(shaped) > 1:
        raise SchemaError(pointer_to(patterned[0], "patternProperties"),
                          "allOf: patternProperties beside another branch's properties cannot be merged")
    names: list[str] = []
    for schema, pointer in shaped:
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise SchemaError(pointer_to(pointer, "properties"), "must be an object")
        names += [n for n in properties if n not in names]
    properties, forbidden = {}, []
    for name in names:
        constraints = []
        for schema, pointer in shaped:
            own = schema.get("properties", {})
            if name in own:
                note(origin, own[name], pointer_to(pointer_to(pointer, "properties"), name))
                constraints.append(own[name])
                continue
            extra = schema.get("additionalProperties", True)
            if extra is False:
                forbidden.append((name, pointer_to(pointer, "additionalProperties")))
                break
            if extra is not True:
                note(origin, extra, pointer_to(pointer, "additionalProperties"))
                constraints.append(extra)
        else:
            properties[name] = constraints[0] if len(constraints) == 1 else {"allOf": constraints}
    extras = [s.get("additionalProperties", True) for s, _ in shaped]
    result: dict = {"properties": properties}
    if forbidden:
        result[FORBIDDEN] = forbidden  # checked against required by the translator
    if any(e is False for e in extras):
        result["additionalProperties"] = False
    else:
        schemas = [e for e in extras if e is not True]
        if schemas:
            result["additionalProperties"] = schemas[0] if len(schemas) == 1 else {"allOf": schemas}
        elif all("additionalProperties" not in s for s, _ in shaped):
            pass  # absent everywhere: the translator's default for listed properties
        else:
            result["additionalProperties"] = True
    return result


def _arrays(listed, origin) -> dict:
    """prefixItems / items of several branches: position by position (an absent items allows anything)."""
    views = []
    for schema, pointer in listed:
        prefix, items = schema.get("prefixItems"), schema.get("items")
        if isinstance(items, list):  # draft-04 tuple form
            prefix, items = items, schema.get("additionalItems")
        if prefix is not None and not isinstance(prefix, list):
            raise SchemaError(pointer_to(pointer, "prefixItems"), "must be a list of schemas")
        views.append((prefix or [], items, pointer))
    if len(views) == 1:
        prefix, items, _ = views[0]
        out = {"prefixItems": prefix} if prefix else {}
        if items is not None:
            out["items"] = items
        return out
    length = max(len(p) for p, _, _ in views)
    prefix = []
    for i in range(length):
        at = [p[i] if i < len(p) else it for p, it, _ in views]
        at = [s for s in at if s is not None and s is not True]
        prefix.append(True if not at else at[0] if len(at) == 1 else {"allOf": at})
    tails = [it for _, it, _ in views if it is not None and it is not True]
    out = {"prefixItems": prefix} if prefix else {}
    if tails:
        out["items"] = tails[0] if len(tails) == 1 else {"allOf": tails}
    return out


def required_only_oneof(branches) -> list | None:
    """A ``oneOf`` whose branches only say ``required`` (``[{"required": ["user"]}, {"required": ["sub"]}]``)
    as the ``anyOf`` of branches that exclude each other, or None for any other ``oneOf``.

    A document is valid under branch ``i`` alone when it is an object (every
    other value is valid under all the branches) that has the names of
    ``i`` and, for every other branch ``j``, lacks one of ``j``'s names that
    ``i`` does not list: ``properties: {name: false}``, or the ``anyOf`` of
    those when several names could be the missing one.  A branch whose every
    other branch lists only names it lists too can never be alone: dropped.
    """
    if not isinstance(branches, list) or len(branches) < 2:
        return None
    names = []
    for branch in branches:
        if not isinstance(branch, dict) or {k for k in branch if k in VOCABULARY} != {"required"}:
            return None
        required = branch["required"]
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            return None
        names.append(list(dict.fromkeys(required)))
    out = []
    for i, mine in enumerate(names):
        absent, choices, possible = {}, [], True
        for j, theirs in enumerate(names):
            if j == i:
                continue
            missing = [n for n in theirs if n not in mine]
            if not missing:
                possible = False  # valid under i means valid under j too
                break
            if len(missing) == 1:
                absent[missing[0]] = False
            else:
                choices.append({"anyOf": [{"properties": {n: False}} for n in missing]})
        if not possible:
            continue
        branch = {"type": "object", "required": mine}
        if absent:
            branch["properties"] = absent
        if choices:
            branch["allOf"] = choices
        out.append(branch)
    return out or [False]


def note(origin: dict, schema, pointer: str) -> None:
    """Remember where ``schema`` was written (the first place wins); the entry keeps the object alive."""
    if isinstance(schema, (dict, list)):
        origin.setdefault(id(schema), (schema, pointer))


def pattern_matches(pattern: str, name: str) -> bool:
    """Whether a ``patternProperties`` key applies to ``name`` (a search, as JSON Schema says)."""
    try:
        return regex.search(pattern, name) is not None
    except regex.error:
        return False
