"""JSON Schema -> a regular expression for the JSON text of valid documents.

Structured generation mostly starts from a JSON Schema; bpefst constrains
decoding with regular languages, so a schema is translated into a pattern in
the syntax :func:`bpefst.regex.compile_regex` compiles.  The translation is
*sound*: every string the pattern matches is a JSON document that ``json.loads``
reads and that is valid under the schema (``strict=False`` gives that up for
the keywords it names in its warning).  It is a chosen subset of the valid
documents, the one a generator should produce:

* objects list their properties in the schema's order, each at most once;
  then, unless ``additionalProperties`` is ``false``, any number of extra
  members, their names differing from the listed ones and constrained by
  ``propertyNames`` and ``patternProperties``, their values by the schema
  that governs them (``additionalProperties``, the matching patterns, or any
  JSON value up to ``max_depth`` when the schema says nothing): JSON Schema's
  reading of an object.  ``open_objects=False`` closes an object that has
  ``properties`` but no ``additionalProperties`` (listed members only: a
  model then never invents members); one that says nothing of its members
  stays open;
* a value the schema does not constrain (``{}``, ``true``, no type and no
  keyword that implies one, an array without ``items``) is any JSON value
  nesting at most ``max_depth`` arrays/objects, and a recursive ``$ref`` is
  followed at most ``max_depth`` times inside itself: deeper documents are
  cut, so a regular language can describe them;
* whitespace is compact (``{"a":1,"b":[2,3]}``, as ``json.dumps(...,
  separators=(",", ":"))`` writes) unless ``whitespace=k`` allows up to ``k``
  whitespace characters around every structural character ``{ } [ ] : ,``;
* strings may use every JSON escape except ``\\u`` escapes of surrogates (so
  that a ``\\uXXXX`` is one character, as minLength/maxLength count); extra
  member names are spelled as ``json.dumps`` spells them (so that no two
  spellings name the same member); a ``format`` generates the common spelling
  of its format (below);
* numbers with bounds have no exponent (an unbounded exponent cannot be
  compared with a bound by a finite automaton).

Keywords: ``type`` (one or a list; without it, the types its keywords imply),
``enum``, ``const``; object: ``properties``, ``required``,
``additionalProperties``, ``patternProperties``, ``propertyNames``,
``minProperties`` up to 1; string: ``minLength``, ``maxLength``, ``pattern``,
``format`` (date, date-time, time, email, uuid, ipv4, uri, uri-reference,
hostname; a format JSON Schema does not define is an annotation); integer and
number: ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``
(draft-04 booleans too; decimal bounds for numbers, up to 12 decimals); array:
``prefixItems``, ``items`` (a schema, false, or draft-04's list with
``additionalItems``), ``minItems``, ``maxItems``; ``anyOf``; ``oneOf`` when
its branches cannot both hold (pairwise different types or enum values, or a
required property with disjoint ``const``/``enum`` values);
``allOf`` and keywords beside ``$ref``/``anyOf``/``oneOf``, merged
(:mod:`.json_schema_merge`); ``$ref`` to any ``#/...`` pointer of the schema.
Annotations (``title``, ``description``, ...) change nothing; keywords JSON
Schema does not define are ignored as it prescribes, with a
:class:`SchemaWarning`.  The keywords that constrain but that a finite
automaton cannot honour here (``uniqueItems: true``, ``multipleOf``, ``not``,
``if``, ``dependencies``, ``contains``, ``maxProperties``, other formats, ...)
raise :class:`SchemaError` naming the JSON pointer of the keyword; with
``strict=False`` they are dropped instead, and the warning names them.

Integer ranges become digit-by-digit alternations (the classic construction:
split ``[lo, hi]`` at powers of ten, then at each digit position take the
prefix equal to the bound and range over the rest).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal

import regex

from ..automata.errors import ArcLimitExceeded, StateLimitExceeded
from ..errors import BpefstError
from .alphabets import Alphabet, ByteAlphabet
from .json_schema_automaton import BuildLimit, build_dfa, leaf_dfa, raw_dfa
from .json_schema_expr import NOTHING as NO_DOCUMENT
from .json_schema_expr import NOTHING_TEXT, Built, Leaf, Lit, Members, Node, Rep, TooLong, alt, render, seq
from .json_schema_merge import merge_all, pattern_matches
from .json_schema_names import NAME_CHAR, other_names, other_names_dfa
from .json_schema_words import (ANNOTATIONS, FORBIDDEN, VOCABULARY, SchemaError, SchemaWarning, json_type, pointer_to,
                                same_json, warn_about)

__all__ = ["DEFAULT_MAX_DEPTH", "SchemaError", "SchemaWarning", "json_literal", "literal", "schema_to_dfa", "schema_to_regex"]

TYPES = ("null", "boolean", "number", "string", "array", "object", "integer")
# Keywords that imply a type when "type" is absent (a schema with "properties" describes objects).
TYPE_HINTS = {
    "object": {"properties", "required", "additionalProperties", "patternProperties", "propertyNames",
               "minProperties", "maxProperties", "dependencies", "dependentRequired", "dependentSchemas"},
    "array": {"items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains"},
    "string": {"minLength", "maxLength", "pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}
# Constraining keywords no finite automaton here honours: refused, or dropped with strict=False.
UNSUPPORTED = {
    "multipleOf": "multipleOf is not supported",
    "not": "not is not supported",
    "if": "if/then/else is not supported", "then": "if/then/else is not supported",
    "else": "if/then/else is not supported",
    "contains": "contains is not supported", "minContains": "contains is not supported",
    "maxContains": "contains is not supported",
    "dependencies": "dependencies are not supported", "dependentRequired": "dependentRequired is not supported",
    "dependentSchemas": "dependentSchemas are not supported",
    "unevaluatedItems": "unevaluatedItems is not supported",
    "unevaluatedProperties": "unevaluatedProperties is not supported",
    "$dynamicRef": "$dynamicRef is not supported", "$recursiveRef": "$recursiveRef is not supported",
}
DEFAULT_MAX_DEPTH = 2  # nesting of unconstrained values, and unrolling of recursive $ref
NOTHING = NOTHING_TEXT  # the pattern of no document (kept for importers)
MAX_DEPTH = 64  # nested schemas (hostile input must not reach Python's recursion limit)
MAX_PATTERN = 1_000_000  # characters of translated pattern text before refusing
MAX_SIZE = 50_000_000  # bound on the states the graph describes, checked before anything is built (the builder
                       # then counts the states and arcs it makes, json_schema_automaton.MAX_ARCS and max_states)

# One character of a JSON string: anything but '"', '\' and controls, or an escape;
# \u escapes of surrogates are left out (a pair would be two escapes but one character).
STRING_CHAR = r'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u(?:[0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}))'
INTEGER = r"(?:0|-?[1-9][0-9]*)"  # no "-0": an integer generator writes 0
NUMBER = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"

_YEAR = r"(?:000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_LEAP_YEAR = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)"
# A calendar date: days per month, and 29 February in leap years only (as date.fromisoformat checks).
_DATE = (rf"(?:{_YEAR}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"
         rf"|02-(?:0[1-9]|1[0-9]|2[0-8]))|{_LEAP_YEAR}-02-29)")
_TIME = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
# RFC 3986 absolute URIs, spelled with unreserved/reserved characters and %XX escapes only (no spaces).
_URI_CHAR = r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})"
FORMATS = {
    "date": _DATE,
    "time": _TIME,
    "date-time": rf"{_DATE}T{_TIME}",
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "ipv4": rf"{_OCTET}(?:\.{_OCTET}){{3}}",
    "uri": rf"[A-Za-z][A-Za-z0-9+.\-]*:{_URI_CHAR}+",
    "uri-reference": rf"{_URI_CHAR}*",
    # up to three labels of up to 20 characters: well inside the 253 characters a host name may have
    "hostname": r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,18}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,18}[A-Za-z0-9])?){0,2}",
}
# The formats JSON Schema defines (2020-12 and earlier drafts); any other is an annotation, as the standard says.
DEFINED_FORMATS = frozenset({
    "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6", "uri",
    "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex",
    "host-name", "ip-address", "color", "style", "phone", "utc-millisec",
})


def schema_to_regex(schema, whitespace: int = 0, *, max_depth: int = DEFAULT_MAX_DEPTH, strict: bool = True,
                    open_objects: bool = True) -> str:
    """The pattern matching the JSON text of the documents generated for ``schema`` (module docstring).

    ``whitespace``: 0 for compact JSON, ``k`` to allow up to ``k`` whitespace
    characters (space, tab, newline, carriage return) around each structural
    character.  ``max_depth``: how deep unconstrained values nest and how
    often a recursive ``$ref`` is followed inside itself.  ``strict=False``:
    drop the keywords that cannot be honoured instead of refusing the schema.
    ``open_objects`` (default): an object with ``properties`` but no
    ``additionalProperties`` also takes extra members after its listed ones,
    as JSON Schema reads it; ``False``: it takes its listed members only.
    Ignored and dropped keywords are named in one :class:`SchemaWarning`.
    """
    node = _translate(schema, whitespace, max_depth, strict, open_objects)
    try:
        return render(node, MAX_PATTERN)
    except TooLong:
        raise SchemaError("", f"the translated pattern grows past {MAX_PATTERN:,} characters; lower max_depth "
                              f"(now {max_depth}) or bound the schema") from None


def schema_to_dfa(schema, alphabet: Alphabet | None = None, whitespace: int = 0, *, max_depth: int = DEFAULT_MAX_DEPTH,
                  strict: bool = True, open_objects: bool = True, max_states: int | None = None):
    """The minimal DFA over ``alphabet`` (default: bytes) of :func:`schema_to_regex`'s pattern, built directly.

    The same language as ``compile_regex(schema_to_regex(schema, ...), alphabet)``
    without writing and parsing the pattern (:mod:`.json_schema_automaton`).
    ``max_states`` bounds the states built (with an arc budget of
    :data:`~.json_schema_automaton.MAX_ARCS`, about 150 MB), checked while
    building: past it, :class:`SchemaError` names the schema being built.
    """
    translator = _Translator(schema, whitespace, max_depth, bool(strict))
    node = _translate(schema, whitespace, max_depth, strict, open_objects, translator)
    try:
        return build_dfa(node, alphabet if alphabet is not None else ByteAlphabet(), max_states, translator.where)
    except BuildLimit as exc:
        raise SchemaError(exc.pointer, f"{exc.error} here; lower max_depth "
                                       f"(now {max_depth}) or bound the schema") from None


def _translate(schema, whitespace: int, max_depth: int, strict: bool, open_objects: bool = True,
               translator: "_Translator | None" = None) -> Node:
    """The expression graph of the schema's documents, after checking the options; warns once."""
    if not isinstance(whitespace, int) or isinstance(whitespace, bool) or whitespace < 0:
        raise BpefstError(f"whitespace must be a non-negative integer, not {whitespace!r}")
    if not isinstance(max_depth, int) or isinstance(max_depth, bool) or not 0 <= max_depth <= 16:
        raise BpefstError(f"max_depth must be an integer from 0 to 16, not {max_depth!r}")
    if translator is None:
        translator = _Translator(schema, whitespace, max_depth, bool(strict))
    translator.open_objects = bool(open_objects)
    node = translator.value(schema, "", ())
    warn_about(list(translator.ignored), list(translator.relaxed), stacklevel=4)
    return node


def literal(text: str) -> str:
    """``text`` as a pattern matching exactly it."""
    return re.escape(text)


def json_literal(value) -> str:
    """The compact JSON text of ``value`` as a pattern."""
    return literal(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


_pointer = pointer_to


class _Translator:
    def __init__(self, root, whitespace: int, max_depth: int, strict: bool):
        self.root = root
        self.depth = 0
        self.whitespace = whitespace
        self.max_depth = max_depth
        self.strict = strict
        self.ws = _leaf(f"[ \\t\\n\\r]{{0,{whitespace}}}") if whitespace else Lit("")
        self.ignored: dict[str, None] = {}  # pointers of unknown keywords, in order, once each
        self.relaxed: dict[str, None] = {}  # pointers of keywords strict=False dropped
        self.origin: dict[int, tuple] = {}  # id(subschema) -> (subschema, its pointer), for schemas a merge moved
        self.memo: dict[tuple, tuple] = {}  # (id(schema), refs, names) -> (schema, node): translated once
        self.anys: dict[int, Node] = {}
        self.where: dict[int, str] = {}  # id(node) -> the pointer of the schema it was translated from (first one)
        self.names = False  # translating propertyNames: strings spelled one way only
        self.open_objects = True  # False: objects listing properties take no others unless additionalProperties says

    def punct(self, char: str) -> Node:
        """A structural character with the allowed whitespace around it."""
        return seq(self.ws, Lit(char), self.ws)

    def unsupported(self, pointer: str, message: str) -> None:
        """Refuse a keyword that constrains documents but cannot be honoured, unless strict=False."""
        if self.strict:
            raise SchemaError(pointer, f"{message} (strict=False drops it, with a warning)")
        self.relaxed[pointer] = None

    def at(self, schema, default: str) -> str:
        """The pointer of ``schema``: where a merge took it from, else ``default``."""
        entry = self.origin.get(id(schema))
        return entry[1] if entry is not None and entry[0] is schema else default

    # -- dispatch ----------------------------------------------------------------------------
    def value(self, schema, pointer: str, refs: tuple) -> Node:
        key = (id(schema), refs, self.names)
        found = self.memo.get(key)
        if found is not None and found[0] is schema:
            return found[1]
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise SchemaError(pointer, f"schemas nest more than {MAX_DEPTH} deep")
            node = self._value(schema, pointer, refs)
        except (StateLimitExceeded, ArcLimitExceeded) as exc:  # a leaf (a pattern, a long string) too large to compile
            raise SchemaError(pointer, f"{exc}") from None
        finally:
            self.depth -= 1
        if node.size > MAX_SIZE:
            raise SchemaError(pointer, f"the translated automaton grows past {MAX_SIZE:,} states; lower max_depth "
                                       f"(now {self.max_depth}) or bound the schema")
        if isinstance(schema, (dict, list)):
            self.memo[key] = (schema, node)
            self.where.setdefault(id(node), pointer)
            for part in getattr(node, "parts", ()):  # a sequence's parts may be spliced into the parent's sequence
                self.where.setdefault(id(part), pointer)
        return node

    def _value(self, schema, pointer: str, refs: tuple) -> Node:
        if schema is True:
            return self.any_value(self.max_depth)
        if schema is False:
            return NO_DOCUMENT
        if not isinstance(schema, dict):
            raise SchemaError(pointer, f"a schema must be an object or a boolean, not {type(schema).__name__}")
        keys = self.keywords(schema, pointer)
        if keys == {"$ref"}:
            return self.ref(schema["$ref"], pointer, refs)
        if "$ref" in keys or "allOf" in keys or (keys & {"anyOf", "oneOf"} and len(keys) > 1):
            return self.merged(schema, pointer, refs)
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                return self.combinator(schema, keyword, pointer, refs)
        for key in keys & UNSUPPORTED.keys():
            self.unsupported(_pointer(pointer, key), UNSUPPORTED[key])
        if "enum" in schema or "const" in schema:
            return self.enum(schema, pointer, refs)
        types = self.types(schema, pointer, keys)
        if types is None:
            return self.any_value(self.max_depth)
        return alt(self.typed(t, schema, pointer, refs) for t in types)

    def keywords(self, schema: dict, pointer: str) -> set:
        """The constraining keywords of ``schema``; unknown ones are noted for the warning and skipped."""
        keys = set()
        for key in schema:
            if key in VOCABULARY:
                keys.add(key)
            elif key not in ANNOTATIONS and key != FORBIDDEN:
                self.ignored[_pointer(pointer, key)] = None
        return keys

    def types(self, schema: dict, pointer: str, keys: set) -> list[str] | None:
        """The declared types, else the types the keywords imply; None for any JSON value."""
        if "type" not in schema:
            implied = [t for t, hints in TYPE_HINTS.items() if keys & hints]
            return implied or None
        declared = schema["type"]
        types = declared if isinstance(declared, list) else [declared]
        if not types:
            raise SchemaError(_pointer(pointer, "type"), "an empty list of types accepts nothing")
        for i, t in enumerate(types):
            if not isinstance(t, str) or t not in TYPES:
                where = _pointer(pointer, "type") if not isinstance(declared, list) else _pointer(_pointer(pointer, "type"), i)
                raise SchemaError(where, f"unknown type {t!r} (expected one of {', '.join(TYPES)})")
        if "integer" in types and "number" in types:
            types = [t for t in types if t != "integer"]  # every integer is a number
        return list(dict.fromkeys(types))

    def typed(self, type_: str, schema: dict, pointer: str, refs: tuple) -> Node:
        return getattr(self, "type_" + type_)(schema, pointer, refs)

    def any_value(self, depth: int) -> Node:
        """Any JSON value nesting at most ``depth`` arrays/objects (its automaton made once per depth and
        whitespace, and kept between translations)."""
        found = self.anys.get(depth)
        if found is None:
            scalar = _leaf(f'null|true|false|{NUMBER}|"{STRING_CHAR}*"')
            if depth <= 0:
                graph = scalar
            else:
                inner = self.any_value(depth - 1)
                comma, colon = self.punct(","), self.punct(":")
                member = seq(_leaf(f'"{STRING_CHAR}*"'), colon, inner)
                array = seq(self.punct("["), Rep(seq(inner, Rep(seq(comma, inner), 0, None)), 0, 1), self.punct("]"))
                obj = seq(self.punct("{"), Rep(seq(member, Rep(seq(comma, member), 0, None)), 0, 1), self.punct("}"))
                graph = alt([scalar, array, obj])
            found = Built(("any", depth, self.whitespace), lambda alphabet, g=graph: raw_dfa(g, alphabet), graph,
                          graph.size)
            self.anys[depth] = found
        return found

    def other_names(self, listed: list[str]) -> Node:
        """A quoted member name other than the ``listed`` ones, spelled as json.dumps spells it."""
        names = tuple(listed)
        return Built(("names", names), lambda alphabet: other_names_dfa(list(names), alphabet, with_profiles=True),
                     lambda: Leaf(other_names(list(names)), size=0), 2 * sum(len(n) + 2 for n in names) + 16)

    # -- references and combinators ----------------------------------------------------------------
    def resolve(self, ref, pointer: str) -> tuple[object, str]:
        """The schema a ``$ref`` names (a JSON pointer into this schema) and its pointer."""
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            raise SchemaError(pointer, f"only references inside the schema (#/...) are supported, not {ref!r}")
        target = self.root
        for part in ref[2:].split("/") if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            elif isinstance(target, dict) and part in target:
                target = target[part]
            else:
                raise SchemaError(pointer, f"{ref!r} names no definition")
        return target, ref[1:]

    def ref(self, ref, pointer: str, refs: tuple) -> Node:
        where = _pointer(pointer, "$ref")
        target, target_pointer = self.resolve(ref, where)
        if refs.count(ref) >= self.max_depth:
            return NO_DOCUMENT  # recursion cut at max_depth
        return self.value(target, target_pointer, refs + (ref,))

    def merged(self, schema: dict, pointer: str, refs: tuple) -> Node:
        """allOf, and keywords beside $ref / anyOf / oneOf: merged into one schema (:mod:`.json_schema_merge`)."""
        followed: list[str] = []

        def resolve(ref, where):
            if (refs + tuple(followed)).count(ref) >= self.max_depth:
                return False, where  # recursion cut at max_depth
            followed.append(ref)
            return self.resolve(ref, where)

        combined = merge_all([(schema, pointer)], resolve, self.origin, self.keywords)
        if combined is False:
            return NO_DOCUMENT
        for name, where in combined.get(FORBIDDEN, []):
            if name in (combined.get("required") or []):
                raise SchemaError(where, f"required property {name!r} is forbidden by this additionalProperties: false")
        self.origin.setdefault(id(combined), (combined, pointer))
        return self.value(combined, pointer, refs + tuple(followed))

    def combinator(self, schema: dict, keyword: str, pointer: str, refs: tuple) -> Node:
        where = self.at(schema, _pointer(pointer, keyword))
        branches = schema[keyword]
        if not isinstance(branches, list) or not branches:
            raise SchemaError(where, "must be a non-empty list of schemas")
        if keyword == "oneOf":
            _check_exclusive(branches, where, self)
        return alt(self.value(b, self.at(b, _pointer(where, i)), refs) for i, b in enumerate(branches))

    def enum(self, schema: dict, pointer: str, refs: tuple) -> Node:
        if "const" in schema:
            values, where = [schema["const"]], _pointer(pointer, "const")
            if "enum" in schema and not any(same_json(schema["const"], v) for v in schema["enum"] or []):
                raise SchemaError(where, "the const is not among the enum values: nothing is valid")
        else:
            values, where = schema["enum"], _pointer(pointer, "enum")
            if not isinstance(values, list) or not values:
                raise SchemaError(where, "must be a non-empty list")
        rest = {k: v for k, v in schema.items() if k not in ("enum", "const") and k in VOCABULARY}
        if rest:  # keep the values the other keywords allow: a value's own text must match their pattern
            values = [v for v in values if self.allows(rest, v, pointer, refs)]
            if not values:
                raise SchemaError(where, "no value is valid under the schema's other keywords")
        unique: dict[str, None] = {}
        for v in values:
            unique[json.dumps(v, separators=(",", ":"), ensure_ascii=False)] = None
        return alt(Lit(text) for text in unique)

    def allows(self, rest: dict, value, pointer: str, refs: tuple) -> bool:
        """Whether ``value`` is valid under the keywords ``rest`` (an enum's other keywords)."""
        if "type" not in rest:  # keywords apply to the values of their own type only
            kind = json_type(value)
            rest = {**rest, "type": "number" if kind == "integer" else kind}
            if rest["type"] not in TYPES:
                return False
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        compact = _Translator(self.root, 0, self.max_depth, self.strict)
        compact.ignored, compact.relaxed, compact.origin = self.ignored, self.relaxed, self.origin
        compact.open_objects = self.open_objects
        return regex.fullmatch(render(compact.value(rest, pointer, refs)), text) is not None

    # -- types -------------------------------------------------------------------------------------
    def type_null(self, schema, pointer, refs) -> Node:
        return Lit("null")

    def type_boolean(self, schema, pointer, refs) -> Node:
        return alt([Lit("true"), Lit("false")])

    def type_string(self, schema: dict, pointer: str, refs) -> Node:
        low = _natural(schema, "minLength", pointer, 0)
        high = _natural(schema, "maxLength", pointer, None)
        if high is not None and high < low:
            raise SchemaError(_pointer(pointer, "maxLength"), f"maxLength {high} < minLength {low}: nothing is valid")
        char = NAME_CHAR if self.names else STRING_CHAR
        if "format" in schema:
            name = schema["format"]
            if name not in FORMATS:
                if name in DEFINED_FORMATS or not isinstance(name, str):
                    self.unsupported(_pointer(pointer, "format"), f"unsupported format {name!r} (supported: {', '.join(FORMATS)})")
                else:  # a format JSON Schema does not define constrains nothing
                    self.ignored[_pointer(pointer, "format")] = None
                schema = {k: v for k, v in schema.items() if k != "format"}
        if "format" in schema or "pattern" in schema:
            if "format" in schema and "pattern" in schema:
                self.unsupported(_pointer(pointer, "pattern"), "format and pattern together are not supported")
                schema = {k: v for k, v in schema.items() if k != "pattern"}
            for key in ("minLength", "maxLength"):
                if key in schema:
                    self.unsupported(_pointer(pointer, key), f"{key} with format or pattern is not supported")
            if "format" in schema:
                return seq(Lit('"'), _leaf(FORMATS[schema["format"]]), Lit('"'))
            return seq(Lit('"'), _leaf(_string_pattern(schema["pattern"], _pointer(pointer, "pattern"))), Lit('"'))
        if high is None:
            return seq(Lit('"'), _leaf(f"{char}{_repeat(low, high)}"), Lit('"'))
        # bounded: one cached character automaton repeated by the builder (a long bound compiled as regex text
        # would build every copy through an NFA first; here each copy is grafted, and the limits count them)
        return seq(Lit('"'), Rep(_leaf(char), low, high), Lit('"'))

    def type_integer(self, schema: dict, pointer: str, refs) -> Node:
        low, high = _bounds(_draft4_bounds(schema), pointer, integer=True)
        if low is None and high is None:
            return _leaf(INTEGER)
        if low is not None and high is not None and low > high:
            raise SchemaError(pointer, f"no integer lies between the bounds {low} and {high}")
        return _leaf(_integer_range(low, high))

    def type_number(self, schema: dict, pointer: str, refs) -> Node:
        schema = _draft4_bounds(schema)
        if not any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            return _leaf(NUMBER)
        low, low_open, high, high_open = _number_bounds(schema, pointer)
        if low is not None and high is not None and (low > high or (low == high and (low_open or high_open))):
            raise SchemaError(pointer, "no number lies between the bounds")
        return _leaf(_number_range(low, low_open, high, high_open))

    def type_array(self, schema: dict, pointer: str, refs) -> Node:
        """``[`` items ``]``: the ``prefixItems`` positions first (a tuple), then ``items`` for the rest."""
        low = _natural(schema, "minItems", pointer, 0)
        high = _natural(schema, "maxItems", pointer, None)
        if high is not None and high < low:
            raise SchemaError(_pointer(pointer, "maxItems"), f"maxItems {high} < minItems {low}: nothing is valid")
        if schema.get("uniqueItems", False) is not False and (high is None or high > 1):
            self.unsupported(_pointer(pointer, "uniqueItems"), "uniqueItems: true is not a regular constraint")
        prefix_key, rest_key = "prefixItems", "items"
        prefix, rest = schema.get("prefixItems", []), schema.get("items", True)
        if isinstance(rest, list):  # draft-04's tuple form: items is the prefix, additionalItems the rest
            prefix, rest, prefix_key, rest_key = rest, schema.get("additionalItems", True), "items", "additionalItems"
        if not isinstance(prefix, list):
            raise SchemaError(_pointer(pointer, prefix_key), "must be a list of schemas")
        firsts = [self.value(sub, self.at(sub, _pointer(_pointer(pointer, prefix_key), i)), refs)
                  for i, sub in enumerate(prefix)]
        item = None if rest is False else self.value(rest, self.at(rest, _pointer(pointer, rest_key)), refs)
        open_, close, comma = self.punct("["), self.punct("]"), self.punct(",")
        if not firsts:
            if high == 0 or item is None:
                if low > 0:
                    raise SchemaError(_pointer(pointer, "minItems"), "no item may be present, so minItems cannot hold")
                return seq(open_, close)
            items = seq(item, Rep(seq(comma, item), max(low - 1, 0), None if high is None else high - 1))
            return seq(open_, items if low > 0 else Rep(items, 0, 1), close)
        # lengths up to the prefix's: its first n schemas; longer ones: the whole prefix, then items
        lengths = []
        for n in range(low, len(firsts) + 1):
            if high is not None and n > high:
                break
            lengths.append(_joined(firsts[:n], comma))
        if item is not None and (high is None or high > len(firsts)):
            more = Rep(seq(comma, item), max(low - len(firsts), 1), None if high is None else high - len(firsts))
            lengths.append(seq(_joined(firsts, comma), more))
        if not lengths:
            raise SchemaError(_pointer(pointer, "minItems"), "more items are required than prefixItems and items allow")
        return seq(open_, alt(lengths), close)

    def type_object(self, schema: dict, pointer: str, refs) -> Node:
        """Listed properties in order, then any number of extra members (module docstring)."""
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise SchemaError(_pointer(pointer, "properties"), "must be an object")
        patterns = schema.get("patternProperties", {})
        if not isinstance(patterns, dict):
            raise SchemaError(_pointer(pointer, "patternProperties"), "must be an object")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError(_pointer(pointer, "required"), "must be a list of property names")
        # absent: open when the schema says nothing of its members (or open_objects), else closed (module docstring)
        extra = schema.get("additionalProperties",
                           self.open_objects or not ("properties" in schema or "patternProperties" in schema))
        names = schema.get("propertyNames")
        colon, comma = self.punct(":"), self.punct(",")
        members, listed = [], []
        for name in list(properties) + [r for r in required if r not in properties]:
            sub = self.member_schema(name, schema, pointer, properties, patterns, extra, names)
            if sub is None:
                continue
            listed.append(name)
            text = self.value(sub, self.at(sub, _pointer(_pointer(pointer, "properties"), name)), refs)
            members.append((seq(Lit(json.dumps(name, ensure_ascii=False)), colon, text), name in required))
        more = self.extra_members(schema, pointer, refs, listed, patterns, extra, names)
        minimum = _natural(schema, "minProperties", pointer, 0)
        maximum = _natural(schema, "maxProperties", pointer, None)
        needed = sum(1 for _, need in members if need)
        if minimum > max(needed, 1):
            self.unsupported(_pointer(pointer, "minProperties"), "minProperties above 1 (and above the required count) "
                                                                  "is not supported")
        if maximum is not None and (more is not None or maximum < len(members)):
            self.unsupported(_pointer(pointer, "maxProperties"), "maxProperties below the number of possible members "
                                                                  "is not supported")
        return seq(self.punct("{"), Members(members, more, comma, allow_empty=minimum < 1), self.punct("}"))

    def member_schema(self, name: str, schema: dict, pointer: str, properties, patterns, extra, names):
        """The schema of a listed member's value (its property's, the matching patterns', or additionalProperties');
        None when the member may not be present (an error when it is required)."""
        required = name in (schema.get("required") or [])
        where = _pointer(_pointer(pointer, "properties"), name)
        if names is not None and not self.name_allowed(name, names, _pointer(pointer, "propertyNames"), ()):
            if required:
                raise SchemaError(_pointer(pointer, "propertyNames"), f"required property {name!r} is not a valid name")
            return None
        constraints = [properties[name]] if name in properties else []
        constraints += [sub for p, sub in patterns.items() if pattern_matches(p, name)]
        if name not in properties and len(constraints) == 0:
            if extra is False:
                raise SchemaError(self.at(schema.get("required"), _pointer(pointer, "required")),
                                  f"required property {name!r} is not in properties and "
                                                                  "additionalProperties is false: nothing is valid")
            if extra is not True:
                constraints.append(extra)
        if not constraints:
            return True
        if len(constraints) == 1:
            return constraints[0]
        merged = {"allOf": constraints}
        self.origin[id(merged)] = (merged, where)
        return merged

    def name_allowed(self, name: str, names_schema, pointer: str, refs: tuple) -> bool:
        """Whether ``name`` is valid under ``propertyNames`` (its pattern, spelled one way, matches the name)."""
        return regex.fullmatch(render(self.name_pattern(names_schema, pointer, refs)), json.dumps(name, ensure_ascii=False)) is not None

    def name_pattern(self, names_schema, pointer: str, refs: tuple) -> Node:
        """``propertyNames`` as the pattern of a member name (a JSON string, spelled as json.dumps does)."""
        if isinstance(names_schema, dict) and "type" not in names_schema and not names_schema.keys() & {"enum", "const", "$ref", "anyOf", "oneOf", "allOf"}:
            names_schema = {**names_schema, "type": "string"}
        self.names, outer = True, self.names
        try:
            return self.value(names_schema, pointer, refs)
        finally:
            self.names = outer

    def extra_members(self, schema: dict, pointer: str, refs: tuple, listed: list[str], patterns: dict, extra,
                      names) -> Node | None:
        """One extra member (name, colon, value) as a pattern, None when the schema allows none.

        Generated: for each pattern of ``patternProperties`` no listed name
        matches, names matching it with values valid under every pattern that
        may match the same name; without patterns, names other than the listed
        ones (and valid under ``propertyNames``), with values under
        ``additionalProperties``.  Left out, since a regular expression cannot
        subtract one pattern from another: a pattern's names when a listed name
        or ``propertyNames`` constrains them too, and the additional names
        beside patterns.
        """
        colon, branches = self.punct(":"), []
        where = _pointer(pointer, "patternProperties")
        for p, sub in patterns.items():
            if names is not None or any(pattern_matches(p, n) for n in listed):
                continue
            name = seq(Lit('"'), _leaf(_string_pattern(p, _pointer(where, p))), Lit('"'))
            shared = [patterns[q] for q in patterns if q == p or _may_share_names(p, q)]
            value = shared[0] if len(shared) == 1 else {"allOf": shared}
            branches.append(seq(name, colon, self.value(value, self.at(value, _pointer(where, p)), refs)))
        if extra is not False and not patterns:
            if names is None:
                name = self.other_names(listed)
            else:
                name = self.name_pattern(names, _pointer(pointer, "propertyNames"), refs)
                text = render(name)
                if any(regex.fullmatch(text, json.dumps(n, ensure_ascii=False)) for n in listed):
                    name = None
            if name is not None:
                value = self.value(extra, self.at(extra, _pointer(pointer, "additionalProperties")), refs)
                branches.append(seq(name, colon, value))
        return alt(branches) if branches else None


def _leaf(text: str) -> Leaf:
    """A leaf sized by its compiled DFA (bytes; cached, and needed again to build the automaton)."""
    return Leaf(text, leaf_dfa(text, ByteAlphabet()).num_states + 1)


def _joined(parts: list[Node], comma: Node) -> Node:
    """``parts`` separated by ``comma``."""
    out: list[Node] = []
    for i, part in enumerate(parts):
        out.extend([comma, part] if i else [part])
    return seq(*out)


def _draft4_bounds(schema: dict) -> dict:
    """Draft-04's ``exclusiveMinimum: true`` (a flag on ``minimum``) as the later numeric form."""
    if not any(isinstance(schema.get(k), bool) for k in ("exclusiveMinimum", "exclusiveMaximum")):
        return schema
    out = dict(schema)
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(flag), bool):
            if out.pop(flag) and bound in out:
                out[flag] = out.pop(bound)
    return out


def _may_share_names(p: str, q: str) -> bool:
    """Whether two ``patternProperties`` patterns can both match one name (their name automata intersect)."""
    from ..automata.product import intersect
    try:
        a, b = (leaf_dfa(_string_pattern(x, ""), ByteAlphabet()) for x in (p, q))
    except BpefstError:
        return True
    return bool(intersect(a, b).finals)


def _repeat(low: int, high: int | None) -> str:
    if high is None:
        return "*" if low == 0 else ("+" if low == 1 else f"{{{low},}}")
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _natural(schema: dict, key: str, pointer: str, default):
    value = schema.get(key, default)
    if value is default:
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise SchemaError(_pointer(pointer, key), f"must be a non-negative integer, not {value!r}")
    return value


def _bound(schema: dict, key: str, pointer: str):
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SchemaError(_pointer(pointer, key), f"must be a finite number, not {value!r}")
    return value


def _bounds(schema: dict, pointer: str, integer: bool) -> tuple[int | None, int | None]:
    """Inclusive integer bounds from minimum/maximum/exclusive*; the tighter of each pair."""
    low = high = None
    for key, inclusive in (("minimum", True), ("exclusiveMinimum", False)):
        value = _bound(schema, key, pointer)
        if value is not None:
            edge = math.ceil(value) if inclusive else math.floor(value) + 1
            low = edge if low is None else max(low, edge)
    for key, inclusive in (("maximum", True), ("exclusiveMaximum", False)):
        value = _bound(schema, key, pointer)
        if value is not None:
            edge = math.floor(value) if inclusive else math.ceil(value) - 1
            high = edge if high is None else min(high, edge)
    return low, high


def _number_bounds(schema: dict, pointer: str):
    """``(low, low_open, high, high_open)`` as exact decimals, the tighter bound of each side."""
    low = high = None
    low_open = high_open = False
    for key, is_open in (("minimum", False), ("exclusiveMinimum", True), ("maximum", False), ("exclusiveMaximum", True)):
        value = _bound(schema, key, pointer)
        if value is None:
            continue
        value = Decimal(str(value))  # the bound's own digits (str of a float is its shortest repr)
        if _decimals(value) > MAX_DECIMALS:
            raise SchemaError(_pointer(pointer, key), f"a bound with more than {MAX_DECIMALS} decimals is not supported")
        if key.endswith("inimum"):
            if low is None or value > low or (value == low and is_open):
                low, low_open = value, is_open
        elif high is None or value < high or (value == high and is_open):
            high, high_open = value, is_open
    return low, low_open, high, high_open


def _decimals(value) -> int:
    """The decimals of a bound (0 for an integer)."""
    exponent = Decimal(value).normalize().as_tuple().exponent
    return max(0, -exponent)


# -- integer ranges --------------------------------------------------------------------------------
def _digits_range(low: str, high: str) -> str:
    """Digit strings of one length between ``low`` and ``high`` (inclusive), as a pattern."""
    if not low:
        return ""
    if low == high:
        return low
    if low.count("0") == len(low) and high.count("9") == len(high):  # every digit string: no recursion
        return "[0-9]" + (f"{{{len(low)}}}" if len(low) > 1 else "")
    a, b = low[0], high[0]
    if a == b:
        return a + _digits_range(low[1:], high[1:])
    rest = len(low) - 1
    parts = [a + _digits_range(low[1:], "9" * rest)]
    if int(b) - int(a) > 1:
        middle = f"[{int(a) + 1}-{int(b) - 1}]" if int(b) - int(a) > 2 else str(int(a) + 1)
        parts.append(middle + ("[0-9]" + _repeat(rest, rest) if rest else ""))
    parts.append(b + _digits_range("0" * rest, high[1:]))
    return "(?:" + "|".join(parts) + ")"


def _natural_range(low: int, high: int | None) -> str:
    """Decimal numerals (no leading zeros) of the integers in ``[low, high]``, ``high`` None for no bound."""
    parts = []
    digits = len(str(low))
    top = len(str(high)) if high is not None else digits
    for n in range(digits, top + 1):
        start = max(low, 10 ** (n - 1) if n > 1 else 0)
        end = min(high, 10 ** n - 1) if high is not None else 10 ** n - 1
        if start <= end:
            parts.append(_digits_range(str(start), str(end)))
    if high is None:
        parts.append(f"[1-9][0-9]{{{digits},}}")
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _integer_range(low: int | None, high: int | None) -> str:
    """JSON integers in ``[low, high]`` (either may be None): a non-negative part and a negative part."""
    parts = []
    if high is None or high >= 0:
        parts.append(_natural_range(max(low, 0) if low is not None else 0, high))
    if low is None or low < 0:
        magnitude_high = None if low is None else -low
        magnitude_low = 1 if high is None or high >= 0 else -high
        parts.append("-" + _natural_range(magnitude_low, magnitude_high))
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


# -- number ranges -------------------------------------------------------------------------------
MAX_DECIMALS = 12
NONZERO_FRACTION = r"\.[0-9]*[1-9][0-9]*"
ZERO_FRACTION = r"(?:\.0+)?"


def _scaled(low: int, high: int | None, k: int) -> str | None:
    """Numerals with exactly ``k`` decimals (``k = 0``: none) of the values ``M / 10**k``, ``low <= M <= high``."""
    if high is not None and low > high:
        return None
    if k == 0:
        return _natural_range(low, high)
    unit = 10 ** k

    def fraction(a: int, b: int) -> str:
        return _digits_range(str(a).zfill(k), str(b).zfill(k))

    first, first_f = divmod(low, unit)
    if high is not None and high // unit == first:
        return f"{_natural_range(first, first)}\\.{fraction(first_f, high % unit)}"
    parts = [f"{_natural_range(first, first)}\\.{fraction(first_f, unit - 1)}"]
    last = None if high is None else high // unit - 1
    if last is None or first + 1 <= last:
        parts.append(f"{_natural_range(first + 1, last)}\\.[0-9]{{{k}}}")
    if high is not None:
        parts.append(f"{_natural_range(high // unit, high // unit)}\\.{fraction(0, high % unit)}")
    return "(?:" + "|".join(parts) + ")"


def _magnitude_range(low: Decimal, low_open: bool, high: Decimal | None, high_open: bool) -> str | None:
    """Unsigned decimals ``I(.F)?`` (no exponent) with value ``low <(=) x <(=) high``; None if there are none.

    With ``d`` the most decimals of a bound, scale by ``10**d``: a numeral with
    ``k < d`` decimals is the integer ``M = x * 10**k``, bounded by the scaled
    bounds rounded inwards; one with ``d`` or more is ``M`` (its first ``d``
    decimals) plus a tail ``T`` of further digits, and ``M + 0.T`` compares
    with an integer bound as ``M`` does, except at the bound itself (``T``
    non-zero above an open lower bound, all zeros at a closed upper one).
    """
    d = max(_decimals(low), _decimals(high) if high is not None else 0)
    parts = []
    for k in range(d):  # exactly k decimals
        scale = 10 ** k
        first = math.floor(low * scale) + 1 if low_open else math.ceil(low * scale)
        last = None if high is None else (math.ceil(high * scale) - 1 if high_open else math.floor(high * scale))
        parts.append(_scaled(first, last, k))
    scale = 10 ** d
    low_s, high_s = int(low * scale), None if high is None else int(high * scale)
    tail_any, tail_nonzero, tail_zero = ((r"(?:\.[0-9]+)?", NONZERO_FRACTION, ZERO_FRACTION) if d == 0
                                         else ("[0-9]*", "[0-9]*[1-9][0-9]*", "0*"))
    middle = _scaled(low_s + 1 if low_open else low_s, None if high_s is None else high_s - 1, d)
    parts.append(middle + tail_any if middle else None)
    if low_open and (high_s is None or low_s < high_s):
        parts.append(_scaled(low_s, low_s, d) + tail_nonzero)
    if high_s is not None and not high_open and (high_s > low_s or not low_open):
        parts.append(_scaled(high_s, high_s, d) + tail_zero)
    parts = [p for p in parts if p]
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _number_range(low: int | None, low_open: bool, high: int | None, high_open: bool) -> str:
    """JSON numbers without exponent in the interval; signs split as for integers, -0 counts as 0."""
    parts = []
    if high is None or high > 0 or (high == 0 and not high_open):
        start, start_open = (max(low, 0), low_open and low >= 0) if low is not None else (0, False)
        part = _magnitude_range(start, start_open, high, high_open)
        if part:
            parts.append(part)
    if low is None or low < 0 or (low == 0 and not low_open):
        # -m for magnitudes m in (max(-high, 0), -low): the bounds swap and flip
        if high is None or high > 0:
            start, start_open = 0, False  # "-0", "-0.0": zero, written as json.dumps(-0.0) does
        else:
            start, start_open = -high, high_open
        part = _magnitude_range(start, start_open, None if low is None else -low, low_open)
        if part:
            parts.append("-" + part)
    if not parts:
        raise SchemaError("", "no number lies between the bounds")
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


# -- strings -------------------------------------------------------------------------------------
def _string_pattern(pattern, pointer: str) -> str:
    """A string's ``pattern`` as the pattern of its JSON text (unescaped characters only).

    JSON Schema patterns search (``^``/``$`` anchor them); an unanchored side
    may be extended by any characters.  The pattern must not be able to match
    characters that JSON escapes (``"``, ``\\``, controls), checked on its DFA.
    """
    if not isinstance(pattern, str):
        raise SchemaError(pointer, "must be a string")
    body, head, tail = pattern, False, False
    if body.startswith("^"):
        body, head = body[1:], True
    if body.endswith("$") and not _escaped_at_end(body):
        body, tail = body[:-1], True
    if (head or tail) and _top_level_bar(body):
        raise SchemaError(pointer, "an anchor beside a top-level | binds to one branch only; group the branches: ^(a|b)$")
    free = r'[^"\\\x00-\x1f]*'
    text = ("" if head else free) + f"(?:{body})" + ("" if tail else free)
    try:
        dfa = leaf_dfa(body, ByteAlphabet())  # cached: the translation compiles the same leaf again
    except BpefstError as exc:
        raise SchemaError(pointer, f"{exc}") from None
    escaped = set(range(0x20)) | {ord('"'), ord("\\")}
    if any(symbol in escaped for row in dfa.transitions for symbol in row):
        raise SchemaError(pointer, "the pattern can match characters JSON must escape (quote, backslash, controls)")
    return text


def _top_level_bar(text: str) -> bool:
    """Whether ``text`` has a ``|`` outside groups and classes."""
    depth, i, in_class = 0, 0, False
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if text[i + 1:i + 2] == "]" or text[i + 1:i + 3] == "^]":
                i += 2 if text[i + 1] == "]" else 3
                continue
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            return True
        i += 1
    return False


def _escaped_at_end(text: str) -> bool:
    backslashes = len(text) - 1 - len(text[:-1].rstrip("\\"))
    return backslashes % 2 == 1



# -- oneOf ----------------------------------------------------------------------------------------
def _check_exclusive(branches: list, where: str, translator: _Translator) -> None:
    """oneOf is an alternation only when no document can be valid under two branches.

    Sufficient, checked pairwise: the branches (after following ``$ref``)
    declare different ``type`` (integer is a number) or disjoint
    ``enum``/``const`` values, or both describe objects whose values of a
    property both require have disjoint ``enum``/``const`` values (a
    discriminator, as in ``{"kind": {"const": "a"}}``).  A type only implied by
    keywords does not count: an untyped branch validates every value of the
    other types.  Otherwise the schema is refused, or with ``strict=False``
    the oneOf is taken as an anyOf (documents valid under two branches
    accepted), with a warning.
    """
    kinds = [_kind(branch, _pointer(where, i), translator) for i, branch in enumerate(branches)]
    for i in range(len(kinds)):
        if kinds[i] is None:
            translator.unsupported(_pointer(where, i), "oneOf branches need a type, enum or const to show they exclude "
                                                         "each other (or use anyOf)")
            return
        for j in range(i):
            if kinds[j] is not None and _overlap(kinds[i], kinds[j]):
                translator.unsupported(_pointer(where, i), f"oneOf branches {j} and {i} may both hold, so an alternation "
                                                             "would accept invalid documents; use anyOf or make their types differ")
                return


def _kind(branch, pointer: str, translator: _Translator):
    """``(types, values, discriminators)`` of a oneOf branch (None where it does not say), or None."""
    branch = _followed(branch, pointer, translator)
    if not isinstance(branch, dict):
        return None
    values = types = None
    if "enum" in branch or "const" in branch:
        values = [branch["const"]] if "const" in branch else list(branch["enum"] or [])
    if "type" in branch:
        types = set(branch["type"] if isinstance(branch["type"], list) else [branch["type"]])
        if "number" in types:
            types.add("integer")
    if values is None and types is None:
        return None
    discriminators = {}
    properties = branch.get("properties") if types == {"object"} else None
    if isinstance(properties, dict):
        for name in branch.get("required") or []:
            sub = _followed(properties.get(name), pointer, translator)
            if isinstance(sub, dict) and ("enum" in sub or "const" in sub):
                discriminators[name] = [sub["const"]] if "const" in sub else list(sub["enum"] or [])
    return types, values, discriminators


def _followed(schema, pointer: str, translator: _Translator):
    """``schema`` with a lone ``$ref`` followed (cycles stop)."""
    seen = set()
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
        seen.add(schema["$ref"])
        schema, _ = translator.resolve(schema["$ref"], _pointer(pointer, "$ref"))
    return schema


def _overlap(a, b) -> bool:
    """Whether a document may be valid under both branches described by ``_kind``."""
    (types_a, values_a, disc_a), (types_b, values_b, disc_b) = a, b
    if types_a is not None and types_b is not None and not types_a & types_b:
        return False
    for values, types in ((values_a, types_b), (values_b, types_a)):
        if values is not None and types is not None and not any(
                json_type(v) in types or (json_type(v) == "integer" and "number" in types) for v in values):
            return False
    if values_a is not None and values_b is not None and not any(same_json(u, v) for u in values_a for v in values_b):
        return False
    for name in disc_a.keys() & disc_b.keys():
        if not any(same_json(u, v) for u in disc_a[name] for v in disc_b[name]):
            return False
    return True
