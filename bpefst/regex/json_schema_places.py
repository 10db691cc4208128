"""Where a JSON Schema's automaton is large: its states placed in the documents they read.

Promotion refuses a schema whose token lattice or chunked pattern passes its
limits, and the refusal should say which part of the schema to bound.  The
schema's automaton keeps no record of the sub-schemas its states came from
(minimization merges them), but every state is first reached, breadth-first,
by one shortest document prefix, and a JSON prefix says where it stands:
``{"tags":["`` is inside an element of ``tags``.  Each state's arcs are
counted at that place.  The token lattice gives each byte arc of a string's
content tens of thousands of token arcs, so the places of free text weigh
most here as they cost most there.

The heaviest place is named by the schema pointer that validates it:
``properties``, ``items``, ``additionalProperties`` and local ``$ref`` are
followed, and at ``anyOf`` / ``oneOf`` / ``allOf`` the first branch that
lists the member (or takes items).  A member no branch lists is an extra
member of an open object, named by the object's pointer.
"""

from __future__ import annotations

from collections import Counter, deque

import regex

from .json_schema_words import at_pointer, pointer_to


class _Items:
    """The path step into an array's elements (member names are strings)."""

    def __repr__(self) -> str:
        return "ITEMS"


ITEMS = _Items()
BRANCHES = ("anyOf", "oneOf", "allOf")

# parser modes: outside strings (after a value, or expecting one), expecting a member name, inside a
# member name or a string value (each with an escape pending or not)
_VALUE, _NAME_NEXT, _NAME, _NAME_ESCAPE, _STRING, _STRING_ESCAPE = range(6)


def heaviest_place(dfa, schema, symbol_chars: dict | None = None) -> tuple[str, float, str]:
    """``(schema pointer, share of the arcs, what is there)`` of the place in the documents whose states hold
    the most arcs of ``dfa`` (the schema's automaton; ``symbol_chars`` maps its symbols to characters, bytes
    given as ``chr(byte)``; None: the symbols are bytes)."""
    weights: Counter = Counter()  # (pointer, what) -> arcs: the places one sub-schema validates weigh together
    named: dict[tuple, tuple[str, str]] = {}
    for place, arcs in _placed_arcs(dfa, symbol_chars):
        found = named.get(place)
        if found is None:
            found = named[place] = schema_pointer(schema, tuple(map(_utf8_name, place)))
        weights[found] += arcs
    total = sum(weights.values())
    if not total:
        return "", 0.0, "the document"
    (pointer, what), arcs = max(weights.items(), key=lambda item: (item[1], -len(item[0][0])))
    return pointer, arcs / total, what


def _utf8_name(step):
    """A member name read byte by byte (as ``chr(byte)``) as the characters its UTF-8 bytes spell."""
    if step is ITEMS:
        return step
    try:
        return step.encode("latin-1").decode("utf-8")
    except UnicodeError:  # read character by character already
        return step


def _placed_arcs(dfa, symbol_chars):
    """``(place, arcs)`` per state of ``dfa``: a place is the path of member names and :data:`ITEMS` steps
    its first (breadth-first, symbols ascending) document prefix stands in."""
    rows = dfa.transitions
    state_of = {dfa.start: ((), _VALUE, None)}
    queue = deque([dfa.start])
    while queue:
        q = queue.popleft()
        parsed = state_of[q]
        yield _place(parsed), len(rows[q])
        for symbol in sorted(rows[q]):
            r = rows[q][symbol]
            if r not in state_of:
                char = chr(symbol) if symbol_chars is None else symbol_chars.get(symbol, "\x00")
                state_of[r] = _read(parsed, char if isinstance(char, str) else chr(char))
                queue.append(r)


def _read(parsed: tuple, char: str) -> tuple:
    """The parser state after one more character: ``(frames, mode, name read so far)``; a frame is
    ``(True, member name or None)`` for an object, ``(False, None)`` for an array."""
    frames, mode, name = parsed
    if mode in (_NAME_ESCAPE, _STRING_ESCAPE):
        return frames, mode - 1, (name + char if name is not None else None)
    if mode in (_NAME, _STRING):
        if char == "\\":
            return frames, mode + 1, name
        if char != '"':
            return frames, mode, (name + char if mode == _NAME else None)
        if mode == _NAME:  # the member this name opens
            return frames[:-1] + ((True, name),), _VALUE, None
        return frames, _VALUE, None
    if char == "{":
        return frames + ((True, None),), _NAME_NEXT, None
    if char == "[":
        return frames + ((False, None),), _VALUE, None
    if char in "}]":
        return frames[:-1], _VALUE, None
    if char == '"':
        return (frames, _NAME, "") if mode == _NAME_NEXT else (frames, _STRING, None)
    if char == "," and frames and frames[-1][0]:
        return frames[:-1] + ((True, None),), _NAME_NEXT, None
    return frames, mode, name


def _place(parsed: tuple) -> tuple:
    """The path of a parser state: an object's member (once its name is read), an array's elements."""
    return tuple(ITEMS if not is_object else name for is_object, name in parsed[0] if not is_object or name is not None)


def schema_pointer(schema, place: tuple) -> tuple[str, str]:
    """The pointer of the sub-schema that validates ``place`` in a document, and what is there (a few words
    and what would make it smaller)."""
    node, pointer = _resolved(schema, schema, "")
    for step in place:
        found = _step(schema, node, pointer, step)
        if found is None:
            if step is ITEMS:
                return pointer, "the array elements here: bound them with items"
            return pointer, ("the extra members of the object here: additionalProperties: false or a schema "
                             "for them bounds them")
        node, pointer = found
    return pointer, _what(node)


def _step(schema, node, pointer: str, step):
    """``(sub-schema, pointer)`` of ``step`` inside ``node``, or None."""
    if not isinstance(node, dict):
        return None
    if step is ITEMS:
        items = node.get("items", node.get("additionalItems"))
        if isinstance(items, (dict, bool)):
            key = "items" if "items" in node else "additionalItems"
            return _resolved(schema, items, f"{pointer}/{key}")
    else:
        properties = node.get("properties")
        if isinstance(properties, dict) and step in properties:
            return _resolved(schema, properties[step], pointer_to(f"{pointer}/properties", step))
        patterns = node.get("patternProperties")
        for pattern, sub in (patterns.items() if isinstance(patterns, dict) else ()):
            try:
                if regex.search(pattern, step):
                    return _resolved(schema, sub, pointer_to(f"{pointer}/patternProperties", pattern))
            except (regex.error, TypeError):
                continue
    for keyword in BRANCHES:  # the first branch that knows the step
        branches = node.get(keyword)
        for i, branch in enumerate(branches if isinstance(branches, list) else ()):
            inner, at = _resolved(schema, branch, f"{pointer}/{keyword}/{i}")
            found = _step(schema, inner, at, step)
            if found is not None:
                return found
    extra = node.get("additionalProperties")
    if step is not ITEMS and isinstance(extra, dict):
        return _resolved(schema, extra, f"{pointer}/additionalProperties")
    return None


def _resolved(schema, node, pointer: str):
    """``node`` with its local ``$ref`` followed (a few times at most: a chain of references)."""
    for _ in range(32):
        ref = node.get("$ref") if isinstance(node, dict) else None
        if not (isinstance(ref, str) and (ref == "#" or ref.startswith("#/"))):
            break
        try:
            node, pointer = at_pointer(schema, ref), ref[1:]
        except LookupError:
            break
    return node, pointer


def _what(node) -> str:
    """A few words on the values a sub-schema takes and what would make its automaton smaller."""
    if not isinstance(node, dict) or not any(k in node for k in ("type", "enum", "const", "properties", "items")):
        return "any JSON value here: a type, or a lower max_depth, bounds it"
    kind = node.get("type")
    if kind == "string" and "enum" not in node and "const" not in node:
        return "the string here: an enum, a pattern or a smaller maxLength bounds it"
    if kind == "object" or "properties" in node:
        return "the object here: fewer members, or additionalProperties: false, bounds it"
    if kind == "array" or "items" in node:
        return "the array here: its items' schema bounds it"
    return "the values here"
