"""JSON Schema -> a regular expression for the JSON text of valid documents.

Structured generation mostly starts from a JSON Schema; bpefst constrains
decoding with regular languages, so a schema is translated into a pattern in
the syntax :func:`bpefst.regex.compile_regex` compiles.  The translation is
*sound*: every string the pattern matches is a JSON document that ``json.loads``
reads and that is valid under the schema (``strict=False`` gives that up for
the keywords it names in its warning).  It is a chosen subset of the valid
documents, the one a generator should produce:

* objects list their properties in the schema's order, each at most once,
  then the extra members (``member_order="schema"``, the default: what a
  generator should write, each listed member at most once in one fixed
  place).  ``member_order="any"``, for
  checking documents others wrote: an object with at most one required
  member takes its members in any order, the required one once, the
  optional listed ones and the extra ones any number of times before and
  after it (an optional member may so come twice: ``json.loads`` keeps the
  last, and each value is valid; a decoder could loop through them).
  Objects with more required members keep the schema's order (any order of
  ``r`` required members needs a state per subset of them; on
  JSONSchemaBench, gaps around two or three required members made automata
  larger and translation slower for no more documents accepted).  Extra
  members: unless ``additionalProperties`` is ``false``, any number,
  their names differing from the listed ones and constrained by
  ``propertyNames`` and ``patternProperties``, their values by the schema
  that governs them (``additionalProperties``, the matching patterns, or any
  JSON value up to ``max_depth`` when the schema says nothing): JSON Schema's
  reading of an object.  ``open_objects=False`` closes an object that has
  ``properties`` but no ``additionalProperties`` (listed members only: a
  model then never invents members); one that says nothing of its members
  stays open.  ``schema_to_dfa`` also takes the cuts of :data:`OPENNESS`
  between the two (extra values one level deep or scalars, only the
  outermost object open), which ``bpefst.promote`` falls back to;
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
  spellings name the same member), and so are strings with a ``pattern``
  (which may then match any character, ``"`` and controls too); a ``format``
  generates the common spelling of its format (below); in patterns ``\\d``
  and ``\\w`` are ASCII, as in ECMA-262, and an anchor binds to its own
  top-level alternative (``^a|b$``: starts with a, or ends with b);
* numbers with bounds have no exponent (an unbounded exponent cannot be
  compared with a bound by a finite automaton); with ``multipleOf``, integer
  numerals only;
* a sub-schema no document is valid under (an ``enum`` outside its
  ``type``, a required property that is forbidden) is the empty language
  there: an optional member is then never written, an ``anyOf`` branch never
  taken; only at the root is it refused.

Keywords: ``type`` (one or a list; without it, the types its keywords imply),
``enum``, ``const``; object: ``properties``, ``required``,
``additionalProperties``, ``patternProperties``, ``propertyNames``,
``minProperties`` up to 1, ``maxProperties`` on an object of extra members
only, ``dependencies``, ``dependentRequired``,
``dependentSchemas`` (an object lacks the member, or has it and what it
needs); string: ``minLength``, ``maxLength``, ``pattern``, ``format``
(date, date-time, time, duration, email, uuid, ipv4, ipv6, uri, uri-reference, hostname; a
format JSON Schema does not define is an annotation), in any combination
(their automata intersected); integer and number: ``minimum``, ``maximum``,
``exclusiveMinimum``, ``exclusiveMaximum`` (draft-04 booleans too; decimal
bounds for numbers, up to 12 decimals), ``multipleOf`` when whole; array:
``prefixItems``, ``items`` (a schema, false, or draft-04's list with
``additionalItems``), ``minItems``, ``maxItems``; ``anyOf``; ``oneOf`` when
its branches cannot both hold (:func:`_exclusive`: different types or enum
values, scalar branches whose automata do not meet, a required property with
disjoint schemas) or in two forms rewritten exactly (branches that only say
``required``; closed objects without common names); ``not`` of ``not``,
``required``, ``type``, scalar schemas, and beside an ``enum``
(:meth:`_Translator.negated`); ``allOf`` and keywords beside
``$ref``/``anyOf``/``oneOf``, merged (:mod:`.json_schema_merge`); ``$ref``
to any ``#/...`` pointer of the schema.  Annotations (``title``,
``description``, ...) change nothing; keywords JSON Schema does not define
are ignored as it prescribes, with a :class:`SchemaWarning`.  The keywords
that constrain but that a finite automaton cannot honour here
(``uniqueItems: true``, a fractional ``multipleOf``, other ``not`` forms,
``if``, ``contains``, ``maxProperties``, other formats, ...) raise :class:`SchemaError` naming the JSON pointer of the keyword; with
``strict=False`` they are dropped instead, and the warning names them.

Some of these (escaped characters in patterns, lengths beside patterns,
``multipleOf``, ``not`` of scalars) are built on the automaton and have no
short regex text: :func:`schema_to_regex` refuses them, naming the keyword,
and :func:`schema_to_dfa` (what ``bpefst.promote`` uses) builds them.

Integer ranges become digit-by-digit alternations (the classic construction:
split ``[lo, hi]`` at powers of ten, then at each digit position take the
prefix equal to the bound and range over the rest).
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal

from ..automata import minimize
from ..automata.errors import ArcLimitExceeded, StateLimitExceeded
from ..automata.trimming import trim
from ..errors import BpefstError
from .alphabets import Alphabet, ByteAlphabet
from .json_schema_automaton import BuildLimit, build_dfa, leaf_dfa, raw_dfa
from .json_schema_expr import NOTHING as NO_DOCUMENT
from .json_schema_expr import NOTHING_TEXT, Built, Leaf, Lit, Members, Node, Rep, TooLong, alt, render, seq
from .json_schema_merge import NoDocument, merge_all, pattern_matches, required_only_oneof
from .json_schema_names import NAME_CHAR, json_spelled, other_names, other_names_dfa
from .json_schema_words import (ANNOTATIONS, FORBIDDEN, VOCABULARY, SchemaError, SchemaWarning, at_pointer, json_type,
                                pointer_to, same_json, warn_about)

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
# The cuts bpefst.promote tries, in this order, when open objects (those listing properties without
# additionalProperties) make the language too large: (how deep the unconstrained values of their extra members
# nest, None for max_depth; whether only the outermost object stays open, the others closed).
OPENNESS = {"values-1": (1, False), "scalar-values": (0, False), "outermost": (None, True),
            "outermost-scalar-values": (0, True)}
MEMBER_ORDERS = ("schema", "any")  # how an object's members may be ordered (schema_to_regex)
FREE_MAX_REQUIRED = 1  # member_order="any": objects with at most this many required members take any order
MAX_COUNTED = 16  # maxProperties counted on an object of extra members only
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
_IPV4 = rf"{_OCTET}(?:\.{_OCTET}){{3}}"
# RFC 3986 absolute URIs, spelled with unreserved/reserved characters and %XX escapes only (no spaces).
_URI_CHAR = r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})"
# RFC 4291's text forms of an IPv6 address, as RFC 3986 (Sec. 3.2.2) spells them: eight groups, one run of
# them written "::", the last two groups possibly an IPv4 address; no zone ("%eth0"), as the format excludes.
_H16 = r"[0-9A-Fa-f]{1,4}"
_LS32 = rf"(?:{_H16}:{_H16}|{_IPV4})"


def _groups(n: int) -> str:
    return rf"(?:{_H16}:){{{n}}}" if n else ""


def _before_gap(n: int) -> str:
    """Up to n + 1 groups before the "::" (n colons between them), or none."""
    return rf"(?:(?:{_H16}:){{0,{n}}}{_H16})?"


_IPV6 = "(?:" + "|".join(
    [rf"{_groups(6)}{_LS32}", rf"::{_groups(5)}{_LS32}"]  # no gap; a gap first
    + [rf"{_before_gap(k)}::{_groups(4 - k)}{_LS32}" for k in range(5)]  # k + 1 groups or none, the gap, the rest
    + [rf"{_before_gap(5)}::{_H16}", rf"{_before_gap(6)}::"]) + ")"
# RFC 3339 Appendix A's duration (JSON Schema's "duration"): P, then a date part (days; months and days; years,
# months and days, each level optional below the first) with an optional time part, or a time part, or weeks.
_DIGITS = "[0-9]+"
_DURATION_TIME = rf"T(?:{_DIGITS}H(?:{_DIGITS}M(?:{_DIGITS}S)?)?|{_DIGITS}M(?:{_DIGITS}S)?|{_DIGITS}S)"
_DURATION_DATE = rf"(?:{_DIGITS}D|{_DIGITS}M(?:{_DIGITS}D)?|{_DIGITS}Y(?:{_DIGITS}M(?:{_DIGITS}D)?)?)"
_DURATION = rf"P(?:{_DURATION_DATE}(?:{_DURATION_TIME})?|{_DURATION_TIME}|{_DIGITS}W)"
FORMATS = {
    "date": _DATE,
    "time": _TIME,
    "date-time": rf"{_DATE}T{_TIME}",
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "ipv4": _IPV4,
    "uri": rf"[A-Za-z][A-Za-z0-9+.\-]*:{_URI_CHAR}+",
    "uri-reference": rf"{_URI_CHAR}*",
    # up to three labels of up to 20 characters: well inside the 253 characters a host name may have
    "hostname": r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,18}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,18}[A-Za-z0-9])?){0,2}",
    "ipv6": _IPV6,
    "duration": _DURATION,
}
# The formats JSON Schema defines (2020-12 and earlier drafts); any other is an annotation, as the standard says.
DEFINED_FORMATS = frozenset({
    "date-time", "date", "time", "duration", "email", "idn-email", "hostname", "idn-hostname", "ipv4", "ipv6", "uri",
    "uri-reference", "iri", "iri-reference", "uuid", "uri-template", "json-pointer", "relative-json-pointer", "regex",
    "host-name", "ip-address", "color", "style", "phone", "utc-millisec",
})


def schema_to_regex(schema, whitespace: int = 0, *, max_depth: int = DEFAULT_MAX_DEPTH, strict: bool = True,
                    open_objects: bool = True, member_order: str = "schema") -> str:
    """The pattern matching the JSON text of the documents generated for ``schema`` (module docstring).

    ``whitespace``: 0 for compact JSON, ``k`` to allow up to ``k`` whitespace
    characters (space, tab, newline, carriage return) around each structural
    character.  ``max_depth``: how deep unconstrained values nest and how
    often a recursive ``$ref`` is followed inside itself.  ``strict=False``:
    drop the keywords that cannot be honoured instead of refusing the schema.
    ``open_objects`` (default): an object with ``properties`` but no
    ``additionalProperties`` also takes extra members after its listed ones,
    as JSON Schema reads it; ``False``: it takes its listed members only.
    ``member_order``: ``"schema"`` (default: the listed members in the
    schema's order, then the extra ones) or ``"any"`` (an object with at
    most one required member takes its members in any order, an optional one
    possibly twice; for checking documents, module docstring).
    Ignored and dropped keywords are named in one :class:`SchemaWarning`.
    """
    node = _translate(schema, whitespace, max_depth, strict, open_objects, member_order=member_order)
    try:
        return render(node, MAX_PATTERN)
    except TooLong:
        raise SchemaError("", f"the translated pattern grows past {MAX_PATTERN:,} characters; lower max_depth "
                              f"(now {max_depth}) or bound the schema") from None


def schema_to_dfa(schema, alphabet: Alphabet | None = None, whitespace: int = 0, *, max_depth: int = DEFAULT_MAX_DEPTH,
                  strict: bool = True, open_objects: bool | str = True, max_states: int | None = None,
                  closed: list | None = None, member_order: str = "schema"):
    """The minimal DFA over ``alphabet`` (default: bytes) of :func:`schema_to_regex`'s pattern, built directly.

    The same language as ``compile_regex(schema_to_regex(schema, ...), alphabet)``
    without writing and parsing the pattern (:mod:`.json_schema_automaton`).
    ``max_states`` bounds the states built (with an arc budget of
    :data:`~.json_schema_automaton.MAX_ARCS`, about 150 MB), checked while
    building: past it, :class:`SchemaError` names the schema being built.
    ``open_objects`` also takes the cuts of :data:`OPENNESS` (``bpefst.promote``'s
    fallbacks when open objects make the language too large); ``closed``, a list,
    receives the JSON pointers of the objects closed that JSON Schema leaves open.
    ``member_order``: as :func:`schema_to_regex`'s.
    """
    translator = _Translator(schema, whitespace, max_depth, bool(strict))
    if isinstance(open_objects, str):
        if open_objects not in OPENNESS:
            raise BpefstError(f"open_objects must be True, False or one of {', '.join(OPENNESS)}, not {open_objects!r}")
        translator.extra_depth, translator.outermost_only = OPENNESS[open_objects]
        open_objects = True
    node = _translate(schema, whitespace, max_depth, strict, open_objects, translator, member_order)
    if closed is not None:
        closed.extend(translator.closed_at)
    try:
        return build_dfa(node, alphabet if alphabet is not None else ByteAlphabet(), max_states, translator.where)
    except BuildLimit as exc:
        raise SchemaError(exc.pointer, f"{exc.error} here; lower max_depth "
                                       f"(now {max_depth}) or bound the schema") from None


def _translate(schema, whitespace: int, max_depth: int, strict: bool, open_objects: bool = True,
               translator: "_Translator | None" = None, member_order: str = "schema") -> Node:
    """The expression graph of the schema's documents, after checking the options; warns once."""
    if not isinstance(whitespace, int) or isinstance(whitespace, bool) or whitespace < 0:
        raise BpefstError(f"whitespace must be a non-negative integer, not {whitespace!r}")
    if not isinstance(max_depth, int) or isinstance(max_depth, bool) or not 0 <= max_depth <= 16:
        raise BpefstError(f"max_depth must be an integer from 0 to 16, not {max_depth!r}")
    if member_order not in MEMBER_ORDERS:
        raise BpefstError(f"member_order must be one of {', '.join(map(repr, MEMBER_ORDERS))}, not {member_order!r}")
    if translator is None:
        translator = _Translator(schema, whitespace, max_depth, bool(strict))
    translator.open_objects, translator.any_order = bool(open_objects), member_order == "any"
    node = translator.value(schema, "", ())
    if node is NO_DOCUMENT and schema is not False and translator.empty:
        where, why = next(iter(translator.empty.items()))
        raise SchemaError(where, why)
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
        self.roots = {id(root)}  # the root schema and what a merge made of it: a schema valid nowhere is refused there
        self.current: list = []  # the schemas being translated, innermost last
        self.empty: dict[str, str] = {}  # pointer -> why no document is valid there (the first few reasons)
        self.enum_rests: dict[tuple, tuple] = {}  # (id(rest), type) -> (rest, node), for allows()
        self.checked: dict[int, tuple] = {}  # id(node) -> (node, its byte DFA), for matches()
        self.compared: dict[int, tuple] = {}  # id(schema) -> (schema, its byte DFA), for oneOf's comparisons
        self.superset = False  # patterns read as the validators may read them at most (_string_pattern)
        self.names = False  # translating propertyNames: strings spelled one way only
        self.open_objects = True  # False: objects listing properties take no others unless additionalProperties says
        # the fallbacks of promote() (:data:`OPENNESS`): objects listing properties kept open only outermost, and how
        # deep their extra members' unconstrained values nest (None: max_depth)
        self.outermost_only = False
        self.extra_depth: int | None = None
        self.nesting = 0  # arrays/objects around the value being translated (memoized nodes keep their first)
        self.closed_at: dict[str, None] = {}  # pointers of objects closed although JSON Schema leaves them open
        self.any_order = False  # member_order="any": optional and extra members anywhere among the required ones

    def punct(self, char: str) -> Node:
        """A structural character with the allowed whitespace around it."""
        return seq(self.ws, Lit(char), self.ws)

    def nothing(self, pointer: str, message: str) -> Node:
        """A schema no document is valid under: the empty language inside the document (an optional member
        is then never written, an anyOf branch never taken); refused at the root, where it would be all."""
        if self.current and id(self.current[-1]) in self.roots:
            raise SchemaError(pointer, message)
        self.empty.setdefault(pointer, message)
        return NO_DOCUMENT

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
            self.current.append(schema)
            node = self._value(schema, pointer, refs)
        except (StateLimitExceeded, ArcLimitExceeded) as exc:  # a leaf (a pattern, a long string) too large to compile
            raise SchemaError(pointer, f"{exc}") from None
        finally:
            self.depth -= 1
            if self.current and self.current[-1] is schema:
                self.current.pop()
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
        if keys & {"dependencies", "dependentRequired", "dependentSchemas"}:
            return self.dependencies(schema, pointer, refs, keys)
        if "not" in keys:
            return self.negated(schema, pointer, refs)
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
        try:
            return at_pointer(self.root, ref), ref[1:]
        except LookupError:
            raise SchemaError(pointer, f"{ref!r} names no definition") from None

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

        try:
            combined = merge_all([(schema, pointer)], resolve, self.origin, self.keywords)
        except NoDocument as exc:
            return self.nothing(exc.pointer, str(exc).split(": ", 1)[1])
        if combined is False:
            return NO_DOCUMENT
        for name, where in combined.get(FORBIDDEN, []):
            if name in (combined.get("required") or []):
                raise SchemaError(where, f"required property {name!r} is forbidden by this additionalProperties: false")
        self.origin.setdefault(id(combined), (combined, pointer))
        if id(schema) in self.roots:
            self.roots.add(id(combined))
        return self.value(combined, pointer, refs + tuple(followed))

    def combinator(self, schema: dict, keyword: str, pointer: str, refs: tuple) -> Node:
        where = self.at(schema, _pointer(pointer, keyword))
        branches = schema[keyword]
        if not isinstance(branches, list) or not branches:
            raise SchemaError(where, "must be a non-empty list of schemas")
        if keyword == "oneOf":
            branches = _exclusive(branches, where, self)
        return alt(self.value(b, self.at(b, _pointer(where, i)), refs) for i, b in enumerate(branches))

    def rewritten(self, schema: dict, pointer: str, refs: tuple, parts: list) -> Node:
        """``schema`` (its keywords handled) with the schemas ``parts`` that must hold beside it: merged."""
        for part, where in parts:
            self.origin.setdefault(id(part), (part, where))
        if not parts:
            return self.value(schema, pointer, refs)
        combined = {"allOf": [schema] + [part for part, _ in parts]}
        self.origin.setdefault(id(combined), (combined, pointer))
        self.origin.setdefault(id(schema), (schema, pointer))
        if id(self.current[-1]) in self.roots:
            self.roots.update((id(combined), id(schema)))
        return self.value(combined, pointer, refs)

    def dependencies(self, schema: dict, pointer: str, refs: tuple, keys: set) -> Node:
        """``dependencies`` (draft 4-7), ``dependentRequired`` and ``dependentSchemas``, exactly: for each
        name, an object either lacks the member or has it and what it requires (the names, or the schema)."""
        parts = []
        for key in ("dependencies", "dependentRequired", "dependentSchemas"):
            if key not in keys:
                continue
            where = _pointer(pointer, key)
            entries = schema[key]
            if not isinstance(entries, dict):
                raise SchemaError(where, "must be an object")
            for name, needs in entries.items():
                at = _pointer(where, name)
                if isinstance(needs, list) and key != "dependentSchemas":
                    if not all(isinstance(n, str) for n in needs):
                        raise SchemaError(at, "must be a list of property names")
                    present = {"required": list(dict.fromkeys([name] + needs))}
                elif isinstance(needs, (dict, bool)) and key != "dependentRequired":
                    present = {"allOf": [{"required": [name]}, needs]}
                    self.origin.setdefault(id(needs), (needs, at))
                else:
                    raise SchemaError(at, "must be a list of property names" if key != "dependentSchemas" else
                                      "must be a schema")
                parts.append(({"anyOf": [{"properties": {name: False}}, present]}, at))
        rest = {k: v for k, v in schema.items() if k not in ("dependencies", "dependentRequired", "dependentSchemas")}
        return self.rewritten(rest, pointer, refs, parts)

    def negated(self, schema: dict, pointer: str, refs: tuple) -> Node:
        """``not``, for the forms a translation can complement exactly (else refused, or dropped with
        ``strict=False``).

        * ``not`` of ``not X``: ``X``; of ``false``: nothing; of ``true``/``{}``: no document;
        * ``not: {required: [...]}``: an object lacking one of the names (``properties: {name: false}``);
        * ``not: {type: ...}``: the other types;
        * ``not`` of a complete scalar schema (:func:`_complete`: types, bounds, lengths, patterns,
          enum/const of scalars): the translation of the rest, restricted to canonical spellings of
          its scalars (:data:`CANONICAL`), minus the negated schema's automaton, which holds the canonical
          spelling of every value valid under it;
        * beside ``enum``/``const``: the values the negated schema rejects, decided value by value
          (:func:`_decide`);
        * ``not: {anyOf: [...]}`` (also what several ``not`` merged become): each branch negated.
        """
        where = _pointer(pointer, "not")
        rest = {k: v for k, v in schema.items() if k != "not"}
        negated = schema["not"]
        branches = [negated]
        if isinstance(negated, dict) and {k for k in negated if k in VOCABULARY} == {"anyOf"} and isinstance(negated["anyOf"], list):
            branches = negated["anyOf"]
        parts, subtract = [], []
        for n in branches:
            if ("enum" in rest or "const" in rest) and not subtract:
                values = [rest["const"]] if "const" in rest else rest["enum"]
                if isinstance(values, list):
                    verdicts = [_decide(n, v, self) for v in values]
                    if None not in verdicts:
                        kept = [v for v, holds in zip(values, verdicts) if not holds]
                        if not kept:
                            return self.nothing(where, "every enum value is valid under not's schema: nothing is valid")
                        rest = {**{k: v for k, v in rest.items() if k not in ("enum", "const")}, "enum": kept}
                        continue
            plain = _plain(n, where, self)
            if plain is False:
                continue
            if plain is True or (isinstance(plain, dict) and not any(k in VOCABULARY for k in plain)):
                return self.nothing(where, "not of a schema every document is valid under: nothing is valid")
            if not isinstance(plain, dict):
                self.unsupported(where, "this not is not supported")
                continue
            plain = {k: v for k, v in plain.items() if k in VOCABULARY and not _says_nothing(k, v)}
            keys = set(plain)
            if not keys:
                return self.nothing(where, "not of a schema every document is valid under: nothing is valid")
            if keys == {"not"}:
                parts.append((plain["not"], where))
            elif keys == {"required"} and isinstance(plain["required"], list) and plain["required"]:
                names = list(dict.fromkeys(plain["required"]))
                absent = [{"properties": {name: False}} for name in names]
                parts.append(({"type": "object", **absent[0]} if len(absent) == 1 else
                              {"type": "object", "anyOf": absent}, where))
            elif keys == {"type"}:
                declared = _declared(plain)
                remaining = [t for t in TYPES if t not in declared and t != "integer"]
                if "integer" in declared and "number" not in declared:
                    self.unsupported(_pointer(where, "type"), "not of integer (numbers that are not whole) is not supported")
                    continue
                if not remaining:
                    return self.nothing(where, "not of every type: nothing is valid")
                parts.append(({"type": remaining}, where))
            elif _complete(plain):
                subtract.append(plain)
            else:
                self.unsupported(where, "not is supported for not, required, type, enum/const beside an enum, and "
                                        "scalar schemas (types, bounds, lengths, patterns, enum/const of scalars) only")
        node = self.rewritten(rest, pointer, refs, parts)
        if not subtract:
            return node
        return _difference(node, subtract, self, where)

    def enum(self, schema: dict, pointer: str, refs: tuple) -> Node:
        if "const" in schema:
            values, where = [schema["const"]], _pointer(pointer, "const")
            if "enum" in schema and not any(same_json(schema["const"], v) for v in schema["enum"] or []):
                return self.nothing(where, "the const is not among the enum values: nothing is valid")
        else:
            values, where = schema["enum"], _pointer(pointer, "enum")
            if not isinstance(values, list) or not values:
                raise SchemaError(where, "must be a non-empty list")
        rest = {k: v for k, v in schema.items() if k not in ("enum", "const") and k in VOCABULARY}
        if rest:  # keep the values the other keywords allow: a value's own text must match their pattern
            values = [v for v in values if self.allows(rest, v, pointer, refs)]
            if not values:
                return self.nothing(where, "no value is valid under the schema's other keywords")
        unique: dict[str, None] = {}
        for v in values:
            unique[json.dumps(v, separators=(",", ":"), ensure_ascii=False)] = None
        return alt(Lit(text) for text in unique)

    def allows(self, rest: dict, value, pointer: str, refs: tuple) -> bool:
        """Whether ``value`` is valid under the keywords ``rest`` (an enum's other keywords): its compact
        text in their translation (made once per type of value)."""
        kind = None
        if "type" not in rest:  # keywords apply to the values of their own type only
            kind = json_type(value)
            kind = "number" if kind == "integer" else kind
            if kind not in TYPES:
                return False
        found = self.enum_rests.get((id(rest), kind))
        if found is None:
            compact = _Translator(self.root, 0, self.max_depth, self.strict)
            compact.ignored, compact.relaxed, compact.origin = self.ignored, self.relaxed, self.origin
            compact.open_objects, compact.empty, compact.roots = self.open_objects, self.empty, set()
            compact.outermost_only, compact.extra_depth, compact.closed_at = self.outermost_only, self.extra_depth, self.closed_at
            compact.superset, compact.any_order = self.superset, self.any_order
            typed = rest if kind is None else {**rest, "type": kind}
            found = self.enum_rests[(id(rest), kind)] = (rest, compact.value(typed, pointer, refs))
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        return self.matches(found[1], text)

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
            texts, shown = [], None  # value-level patterns that must all match; the text of the spelled language
            if "format" in schema:
                texts.append(FORMATS[schema["format"]])
                shown = _leaf(FORMATS[schema["format"]])
            if "pattern" in schema:
                value_text, spelled = _string_pattern(schema["pattern"], _pointer(pointer, "pattern"), self.superset)
                texts.append(value_text)
                shown = _leaf(spelled) if spelled is not None and not shown else None
            bounds = (low, high) if low > 0 or high is not None else None
            if bounds is None and shown is not None:
                return seq(Lit('"'), shown, Lit('"'))  # one pattern of unescaped characters: a plain leaf
            where = (_pointer(pointer, "pattern") if "pattern" in schema and shown is None and len(texts) == 1 else
                     _pointer(pointer, "maxLength" if "maxLength" in schema else "minLength") if bounds else
                     _pointer(pointer, "pattern"))
            return seq(Lit('"'), _spelled_strings(tuple(texts), bounds, where), Lit('"'))
        if high is None:
            return seq(Lit('"'), _leaf(f"{char}{_repeat(low, high)}"), Lit('"'))
        # bounded: one cached character automaton repeated by the builder (a long bound compiled as regex text
        # would build every copy through an NFA first; here each copy is grafted, and the limits count them)
        return seq(Lit('"'), Rep(_leaf(char), low, high), Lit('"'))

    def type_integer(self, schema: dict, pointer: str, refs) -> Node:
        low, high = _bounds(_draft4_bounds(schema), pointer, integer=True)
        if low is not None and high is not None and low > high:
            raise SchemaError(pointer, f"no integer lies between the bounds {low} and {high}")
        text = INTEGER if low is None and high is None else _integer_range(low, high)
        return self.multiple_of(schema, pointer, text)

    def type_number(self, schema: dict, pointer: str, refs) -> Node:
        schema = _draft4_bounds(schema)
        if not any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            return self.multiple_of(schema, pointer, NUMBER)
        low, low_open, high, high_open = _number_bounds(schema, pointer)
        if low is not None and high is not None and (low > high or (low == high and (low_open or high_open))):
            raise SchemaError(pointer, "no number lies between the bounds")
        return self.multiple_of(schema, pointer, _number_range(low, low_open, high, high_open))

    def multiple_of(self, schema: dict, pointer: str, text: str) -> Node:
        """The numerals of ``text`` that are multiples of ``multipleOf`` as the validators decide it.

        Kept: integer numerals (no fraction, no exponent), which parse to
        Python ints, whose remainder is exact, of a whole ``multipleOf``.  A
        float one (``2.0``) is divided in floating point, exact for numerals
        of up to 15 digits, so those only; a fractional one (``0.01``) is
        refused: floating-point division makes 0.07 no multiple of 0.01.
        """
        if "multipleOf" not in schema:
            return _leaf(text)
        where = _pointer(pointer, "multipleOf")
        factor = schema["multipleOf"]
        if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not math.isfinite(factor) or factor <= 0:
            raise SchemaError(where, f"must be a positive number, not {factor!r}")
        if isinstance(factor, float) and not factor.is_integer():
            self.unsupported(where, "a fractional multipleOf is not supported (floating-point division decides it)")
            return _leaf(text)
        digits = 15 if isinstance(factor, float) else None
        factor = int(factor)
        if factor == 1 and digits is None and text == INTEGER:
            return _leaf(text)
        if factor > 10_000:
            self.unsupported(where, "a multipleOf above 10000 is not supported")
            return _leaf(text)
        from ..automata.product import intersect

        def make(alphabet):
            return minimize(intersect(leaf_dfa(text, alphabet), _multiples(factor, digits)))

        def graph():
            raise SchemaError(where, "schema_to_regex cannot write multipleOf as regex text; schema_to_dfa builds it")

        return Built(("multipleOf", text, factor, digits), make, graph, leaf_dfa(text, ByteAlphabet()).num_states * factor + 2)

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
        self.nesting += 1
        try:
            firsts = [self.value(sub, self.at(sub, _pointer(_pointer(pointer, prefix_key), i)), refs)
                      for i, sub in enumerate(prefix)]
            item = None if rest is False else self.value(rest, self.at(rest, _pointer(pointer, rest_key)), refs)
        finally:
            self.nesting -= 1
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
        listing = "properties" in schema or "patternProperties" in schema
        extra = schema.get("additionalProperties", self.kept_open(pointer) if listing else True)
        self.nesting += 1
        try:
            return self._object(schema, pointer, refs, properties, patterns, required, extra, listing)
        finally:
            self.nesting -= 1

    def kept_open(self, pointer: str) -> bool:
        """Whether an object listing properties without ``additionalProperties`` takes extra members here."""
        if self.open_objects and not (self.outermost_only and self.nesting > 0):
            return True
        self.closed_at[pointer] = None
        return False

    def _object(self, schema: dict, pointer: str, refs, properties, patterns, required, extra, listing: bool) -> Node:
        """:meth:`type_object` once its keywords are read."""
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
        more = self.extra_members(schema, pointer, refs, listed, patterns, extra, names, listing)
        minimum = _natural(schema, "minProperties", pointer, 0)
        maximum = _natural(schema, "maxProperties", pointer, None)
        needed = sum(1 for _, need in members if need)
        if minimum > max(needed, 1):
            self.unsupported(_pointer(pointer, "minProperties"), "minProperties above 1 (and above the required count) "
                                                                  "is not supported")
        if maximum is not None and not members and more is not None and minimum <= 1 and maximum <= MAX_COUNTED:
            # extra members only: counted (two extra members may share a name, which only lowers the count)
            if maximum == 0:
                return seq(self.punct("{"), self.punct("}"))
            items = seq(more, Rep(seq(comma, more), max(minimum - 1, 0), maximum - 1))
            return seq(self.punct("{"), items if minimum > 0 else Rep(items, 0, 1), self.punct("}"))
        if maximum is not None and (more is not None or maximum < len(members)):
            self.unsupported(_pointer(pointer, "maxProperties"), "maxProperties below the number of possible members "
                                                                  "is not supported")
        free = self.any_order and needed <= FREE_MAX_REQUIRED
        return seq(self.punct("{"), Members(members, more, comma, allow_empty=minimum < 1, free=free), self.punct("}"))

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
                self.nothing(self.at(schema.get("required"), _pointer(pointer, "required")),
                             f"required property {name!r} is not in properties and additionalProperties is false: "
                             "nothing is valid")
                return False
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
        return self.matches(self.name_pattern(names_schema, pointer, refs), json.dumps(name, ensure_ascii=False))

    def matches(self, node: Node, text: str) -> bool:
        """Whether ``node``'s language holds ``text`` (its byte automaton, made once per node and translation:
        some nodes are built on the automaton only, without regex text)."""
        found = self.checked.get(id(node))
        if found is None or found[0] is not node:
            found = self.checked[id(node)] = (node, raw_dfa(node, ByteAlphabet()))
        return found[1].accepts(text.encode("utf-8", "surrogatepass"))

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
                      names, listing: bool = False) -> Node | None:
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
            value_text, spelled = _string_pattern(p, _pointer(where, p))
            body = _leaf(spelled) if spelled is not None else _spelled_strings((value_text,), None, _pointer(where, p))
            name = seq(Lit('"'), body, Lit('"'))
            shared = [patterns[q] for q in patterns if q == p or _may_share_names(p, q)]
            value = shared[0] if len(shared) == 1 else {"allOf": shared}
            branches.append(seq(name, colon, self.value(value, self.at(value, _pointer(where, p)), refs)))
        if extra is not False and not patterns:
            if names is None:
                name = self.other_names(listed)
            else:
                name = self.name_pattern(names, _pointer(pointer, "propertyNames"), refs)
                if any(self.matches(name, json.dumps(n, ensure_ascii=False)) for n in listed):
                    name = None
            if name is not None:
                if listing and self.extra_depth is not None and (extra is True or extra == {}):
                    value = self.any_value(min(self.extra_depth, self.max_depth))  # a fallback of promote()
                else:
                    value = self.value(extra, self.at(extra, _pointer(pointer, "additionalProperties")), refs)
                branches.append(seq(name, colon, value))
        return alt(branches) if branches else None


def _multiples(factor: int, digits: int | None):
    """The DFA of integer numerals (``-?(0|[1-9][0-9]*)``, at most ``digits`` digits) divisible by ``factor``:
    the remainder of the digits read so far, one state each (per count of digits when they are bounded)."""
    from ..automata import DFA

    rows: list[dict[int, int]] = []
    index: dict = {}
    finals = set()

    def state(key) -> int:
        found = index.get(key)
        if found is None:
            found = index[key] = len(rows)
            rows.append({})
            todo.append(key)
        return found

    todo: list = []
    start = state(("start",))
    state(("sign",))
    while todo:
        key = todo.pop()
        here = index[key]
        if key[0] in ("start", "sign"):
            if key[0] == "start":
                rows[here][ord("-")] = index[("sign",)]
                rows[here][ord("0")] = state(("zero",))
            for d in range(1, 10):
                rows[here][ord("0") + d] = state(("r", d % factor, 1))
        elif key[0] == "zero":
            finals.add(here)
        else:
            _, r, n = key
            if r == 0:
                finals.add(here)
            if digits is None or n < digits:
                for d in range(10):
                    rows[here][ord("0") + d] = state(("r", (10 * r + d) % factor, n + 1 if digits is not None else 1))
    return minimize(DFA(rows, start, frozenset(finals), check=False))


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
        a, b = (leaf_dfa(_string_pattern(x, "")[0], ByteAlphabet()) for x in (p, q))
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
ANY_CHAR = r"[\x00-\U0010FFFF]"  # one character of a string's value (a JSON spelling escapes some)


def _string_pattern(pattern, pointer: str, superset: bool = False) -> tuple[str, str | None]:
    """A string's ``pattern`` as ``(value_text, spelled_text)``: the pattern of the strings' values (their
    characters), and, when the pattern cannot match a character JSON escapes, the pattern of their JSON
    text between the quotes (else None: :func:`_spelled_strings` spells the escapes on the automaton).

    JSON Schema patterns search (``^``/``$`` anchor them); an unanchored side
    may be extended by any characters.  ``superset``: as Python's ``re`` (the
    validators') may read it at most: ``\\d``/``\\w`` over the compiler's
    Unicode (newer than Python's, so larger), and a final ``$`` also before a
    final newline; for :func:`_complete` schemas only (no other class escapes).
    """
    if not isinstance(pattern, str):
        raise SchemaError(pointer, "must be a string")
    branches = []  # (body, anchored at the start, anchored at the end), per top-level alternative
    for branch in _top_level_split(pattern):
        body, head, tail = branch, False, False
        if body.startswith("^"):
            body, head = body[1:], True
        if body.endswith("$") and not _escaped_at_end(body):
            body, tail = body[:-1], True
            if superset:
                body = f"(?:{body})\\n?"
        branches.append((body if superset else _ascii_classes(body), head, tail))
    if len(branches) > 1 and not any(head or tail for _, head, tail in branches):
        whole = "|".join(_top_level_split(pattern))  # one search: as written
        branches = [(whole if superset else _ascii_classes(whole), False, False)]
    escaped = set(range(0x20)) | {ord('"'), ord("\\")}
    spells = True
    for body, _, _ in branches:
        try:
            dfa = leaf_dfa(body, ByteAlphabet())  # cached: the translation compiles the same leaf again
        except BpefstError as exc:
            raise SchemaError(pointer, f"{exc}") from None
        spells = spells and not any(symbol in escaped for row in dfa.transitions for symbol in row)

    def text(free: str) -> str:
        parts = [("" if head else free) + f"(?:{body})" + ("" if tail else free) for body, head, tail in branches]
        return parts[0] if len(parts) == 1 else "|".join(f"(?:{p})" for p in parts)

    return text(ANY_CHAR + "*"), text(NAME_CHAR + "*") if spells else None  # free: any characters, json.dumps-spelled


def _spelled_strings(texts: tuple, bounds, pointer: str) -> Built:
    """The JSON text (between the quotes, spelled as json.dumps spells it) of the strings whose value
    matches every pattern of ``texts`` and has ``bounds = (low, high)`` characters (None: any number).

    Built on the automaton: the patterns' DFAs intersected, the length
    counted on it (:func:`_count_chars`), then escapes spelled
    (:func:`~.json_schema_names.json_spelled`).  As regex text it has no
    short form, so :func:`schema_to_regex` refuses it (:func:`schema_to_dfa` builds it).
    """
    from ..automata.product import intersect

    def make(alphabet):
        dfa = None
        for text in texts:
            one = leaf_dfa(text, alphabet)
            dfa = one if dfa is None else minimize(intersect(dfa, one))
        if bounds is not None:
            dfa = _count_chars(dfa, bounds[0], bounds[1], isinstance(alphabet, ByteAlphabet))
        return json_spelled(dfa)

    def graph():
        raise SchemaError(pointer, "schema_to_regex cannot write this string's pattern, format or length as regex text "
                                   "(escaped characters, or a length beside a pattern); schema_to_dfa builds it")

    size = sum(leaf_dfa(t, ByteAlphabet()).num_states for t in texts) * (1 + (bounds[1] or bounds[0]) if bounds else 2)
    return Built(("strings", texts, bounds), make, graph, size + 2)


def _count_chars(dfa, low: int, high: int | None, utf8: bool):
    """``dfa`` (reading a string's characters) restricted to strings of ``low`` to ``high`` characters: the
    product with a counter, which counts a character at each symbol that starts one (every symbol, or in
    UTF-8 every byte but a continuation byte); ``high`` None: at least ``low``."""
    from ..automata import DFA

    top = high if high is not None else low
    index = {(dfa.start, 0): 0}
    rows: list[dict[int, int]] = [{}]
    finals = set()
    todo = [(dfa.start, 0)]
    while todo:
        q, n = todo.pop()
        here = index[(q, n)]
        if q in dfa.finals and n >= low:
            finals.add(here)
        row = rows[here]
        for symbol, target in dfa.transitions[q].items():
            m = n + (0 if utf8 and 0x80 <= symbol < 0xC0 else 1)
            if m > top:
                if high is not None:
                    continue
                m = top
            key = (target, m)
            found = index.get(key)
            if found is None:
                found = index[key] = len(rows)
                rows.append({})
                todo.append(key)
            row[symbol] = found
    return minimize(trim(DFA(rows, 0, frozenset(finals), check=False)))


_ASCII_CLASSES = {"d": "0-9", "w": "0-9A-Za-z_"}


def _ascii_classes(text: str) -> str:
    """``\\d`` and ``\\w`` as ECMA-262 (JSON Schema's regex dialect) reads them: ASCII digits and word
    characters.  Python's ``re`` (the validators') and the compiler read them over Unicode, from different
    Unicode versions, so a digit of the newer one only would be accepted and then rejected; the ASCII
    sets are inside both.  Left alone inside a negated class, where the larger set is the safe side."""
    out, i, in_class, negated = [], 0, False, False
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in _ASCII_CLASSES and not (in_class and negated):
                out.append(_ASCII_CLASSES[nxt] if in_class else f"[{_ASCII_CLASSES[nxt]}]")
            else:
                out.append(text[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "[":
                return text  # a nested class (set operations): left as written
            if c == "]":
                in_class = False
        elif c == "[":
            in_class, negated = True, text[i + 1:i + 2] == "^"
            start = i + 1 + negated
            out.append(text[i:start])
            i = start
            if text[i:i + 1] == "]":  # a ']' first in a class is a literal
                out.append("]")
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _top_level_split(text: str) -> list[str]:
    """``text`` split at its ``|`` outside groups and classes (an anchor binds to its own alternative)."""
    parts, depth, i, in_class, start = [], 0, 0, False, 0
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
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _escaped_at_end(text: str) -> bool:
    backslashes = len(text) - 1 - len(text[:-1].rstrip("\\"))
    return backslashes % 2 == 1



# -- oneOf ----------------------------------------------------------------------------------------
# Canonical spellings of scalars (strings as json.dumps spells them, numbers in their shortest plain decimal,
# without "-0"), and anything that starts as an array or object: what a subtraction for ``not`` keeps.
CANONICAL = (r'[ \t\n\r]*(?:null|true|false|0(?:\.[0-9]*[1-9])?|-0\.[0-9]*[1-9]|-?[1-9][0-9]*(?:\.[0-9]*[1-9])?'
             r'|"' + NAME_CHAR + r'*"|[\[{][\x00-\U0010FFFF]*)')


def _difference(node: Node, subtract: list, translator: _Translator, where: str) -> Built:
    """``node``'s documents in :data:`CANONICAL` spelling, minus those of the complete scalar schemas ``subtract``."""
    from ..automata.product import difference, intersect
    schemas = list(subtract)

    def make(alphabet):
        dfa = minimize(intersect(raw_dfa(node, alphabet), leaf_dfa(CANONICAL, alphabet)))
        for schema in schemas:
            dfa = minimize(difference(dfa, _scalar_dfa(schema, translator, alphabet, where)))
        return dfa

    def graph():
        raise SchemaError(where, "schema_to_regex cannot write this not as regex text; schema_to_dfa builds it")

    return Built(("not", id(node), tuple(id(s) for s in schemas)), make, graph, 2 * node.size + 2)


def _says_nothing(key: str, value) -> bool:
    """Whether a keyword constrains nothing by its value (``properties`` whose schemas are all ``{}``/true, ...)."""
    if key == "properties":
        return isinstance(value, dict) and all(v is True or v == {} for v in value.values())
    if key == "required" and value == []:
        return True
    return key in ("additionalProperties", "items") and (value is True or value == {})


def _decide(schema, value, translator: _Translator, depth: int = 0):
    """Whether ``value`` (a Python value from json.loads) is valid under ``schema``: True, False, or None
    where this small evaluator does not know the keywords (type, enum, const, properties, required,
    additionalProperties, items as one schema, not, allOf, anyOf, oneOf, $ref, and boolean schemas)."""
    if depth > 32:
        return None
    if schema is True or schema is False:
        return schema
    if not isinstance(schema, dict):
        return None
    verdicts = []
    for key, arg in schema.items():
        if key not in VOCABULARY:
            continue
        if key == "$ref":
            try:
                target, _ = translator.resolve(arg, "")
            except SchemaError:
                return None
            verdicts.append(_decide(target, value, translator, depth + 1))
        elif key == "type":
            kind = json_type(value)
            types = arg if isinstance(arg, list) else [arg]
            if isinstance(value, float) and kind == "integer" and "integer" in types and "number" not in types:
                return None  # 1.0: an integer from draft 6 on, not in draft 4
            verdicts.append(kind in types or (kind == "integer" and "number" in types))
        elif key in ("enum", "const"):
            options = arg if key == "enum" else [arg]
            verdicts.append(isinstance(options, list) and any(same_json(value, o) for o in options))
        elif key == "required":
            if not isinstance(arg, list):
                return None
            verdicts.append(not isinstance(value, dict) or all(n in value for n in arg))
        elif key in ("properties", "additionalProperties"):
            if not isinstance(value, dict):
                continue
            properties = schema.get("properties", {}) if isinstance(schema.get("properties", {}), dict) else {}
            if schema.get("patternProperties"):
                return None
            if key == "properties":
                names = [n for n in value if n in properties]
                verdicts.extend(_decide(properties[n], value[n], translator, depth + 1) for n in names)
            else:
                verdicts.extend(_decide(arg, value[n], translator, depth + 1) for n in value if n not in properties)
        elif key == "items" and not isinstance(arg, list):
            if isinstance(value, list) and "prefixItems" not in schema:
                verdicts.extend(_decide(arg, item, translator, depth + 1) for item in value)
            elif isinstance(value, list):
                return None
        elif key == "not":
            inner = _decide(arg, value, translator, depth + 1)
            verdicts.append(None if inner is None else not inner)
        elif key in ("allOf", "anyOf", "oneOf"):
            if not isinstance(arg, list):
                return None
            inner = [_decide(b, value, translator, depth + 1) for b in arg]
            if None in inner:
                return None
            verdicts.append(all(inner) if key == "allOf" else any(inner) if key == "anyOf" else sum(inner) == 1)
        else:
            return None
    if None in verdicts:
        return None
    return all(verdicts)


def _exclusive(branches: list, where: str, translator: _Translator) -> list:
    """The branches of a ``oneOf``, as branches of an alternation that accepts the same documents.

    A oneOf is the alternation of its branches when no document is valid
    under two of them, checked pair by pair (:func:`_disjoint`).  Two forms
    whose branches do overlap are rewritten exactly instead: branches that
    only say ``required`` (:func:`~.json_schema_merge.required_only_oneof`),
    and closed objects (``additionalProperties: false``, no
    ``patternProperties``) whose properties share no name, where only ``{}``
    can be valid under two: it is taken out (``minProperties: 1``) when it
    is.  Otherwise the schema is refused, or with ``strict=False`` the oneOf
    is taken as an anyOf (documents valid under two branches accepted), with
    a warning.
    """
    exclusive = required_only_oneof(branches)
    if exclusive is not None:
        for i, branch in enumerate(exclusive):
            translator.origin.setdefault(id(branch), (branch, _pointer(where, i)))
        return exclusive
    followed = [_followed(b, _pointer(where, i), translator) for i, b in enumerate(branches)]
    clash = next(((j, i) for i in range(len(branches)) for j in range(i)
                  if not _disjoint(followed[j], followed[i], translator, 4)), None)
    if clash is None:
        return branches
    closed = _closed_names(followed)
    if closed is not None:
        empties = [i for i, b in enumerate(followed) if _may_be_empty(b)]
        if len(empties) < 2:
            return branches
        out = [({**b, "minProperties": 1} if i in empties else b) for i, b in enumerate(followed)]
        for i, branch in enumerate(out):
            translator.origin.setdefault(id(branch), (branch, _pointer(where, i)))
        return out
    j, i = clash
    translator.unsupported(_pointer(where, i), f"oneOf branches {j} and {i} may both hold, so an alternation would accept "
                                               "invalid documents; use anyOf or make them exclude each other")
    return branches


OBJECT_ONLY = {"type", "properties", "additionalProperties", "required", "minProperties", "maxProperties", "propertyNames"}
SCALAR_WORDS = {"type", "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                "maxLength", "pattern"}
SCALAR_TYPES = {"null", "boolean", "integer", "number", "string"}


def _closed_names(branches: list):
    """The property names of each branch when all are closed objects whose names are pairwise disjoint, else None."""
    seen: set = set()
    for b in branches:
        if not isinstance(b, dict) or _declared(b) != {"object"} or b.get("additionalProperties") is not False:
            return None
        if any(k in VOCABULARY and k not in OBJECT_ONLY for k in b) or not isinstance(b.get("properties", {}), dict):
            return None
        names = set(b.get("properties", {}))
        if names & seen:
            return None
        seen |= names
    return seen


def _may_be_empty(branch: dict) -> bool:
    """Whether ``{}`` is valid under a branch :func:`_closed_names` accepted."""
    return not branch.get("required") and not branch.get("minProperties")


def _declared(schema: dict) -> set | None:
    """The declared types (with integer inside number), or None when ``type`` is absent."""
    if "type" not in schema:
        return None
    declared = schema["type"]
    types = set(declared) if isinstance(declared, list) else {declared}
    return types | ({"integer"} if "number" in types else set())


def _plain(schema, pointer: str, translator: _Translator):
    """``schema`` with a lone ``$ref`` followed and ``allOf`` (and keywords beside ``anyOf``/``oneOf``)
    merged (None where that fails)."""
    schema = _followed(schema, pointer, translator)
    if isinstance(schema, dict) and ("allOf" in schema or "$ref" in schema or (
            ("anyOf" in schema or "oneOf" in schema) and len([k for k in schema if k in VOCABULARY]) > 1)):
        try:
            schema = merge_all([(schema, pointer)], lambda ref, at: translator.resolve(ref, at), {}, None)
        except NoDocument:
            return False
        except SchemaError:
            return None
    return schema


def _disjoint(a, b, translator: _Translator, budget: int) -> bool:
    """Whether no document can be valid under both schemas (sufficient conditions; False when unsure).

    * their types, or their ``enum``/``const`` values, do not meet (:func:`_overlap`);
    * both are *complete* scalars (:func:`_complete`) and their automata
      meet nowhere: every value valid under a complete schema has its
      canonical spelling in its automaton, so a value valid under both
      would be in both (a translation that leaves valid documents out, as
      objects do with the order of their members, cannot be used so);
    * one is an object schema only, and a property one of them requires has
      disjoint schemas in the two (recursively; ``false`` where forbidden);
    * one is an ``anyOf``/``oneOf`` each of whose branches is disjoint from the other.
    """
    a, b = _plain(a, "", translator), _plain(b, "", translator)
    if a is False or b is False:
        return True
    if not isinstance(a, dict) or not isinstance(b, dict):
        return False
    for one, other in ((a, b), (b, a)):
        for keyword in ("anyOf", "oneOf"):
            if {k for k in one if k in VOCABULARY} == {keyword} and isinstance(one[keyword], list) and budget > 0:
                return all(_disjoint(branch, other, translator, budget - 1) for branch in one[keyword])
    if any(k in a or k in b for k in ("anyOf", "oneOf")):
        return False
    ka, kb = _kind(a, "", translator), _kind(b, "", translator)
    if ka is not None and kb is not None and not _overlap(ka, kb):
        return True
    if _complete(a) and _complete(b):
        from ..automata.product import intersect
        try:
            da, db = _compared_dfa(a, translator), _compared_dfa(b, translator)
        except BpefstError:
            return False
        return not intersect(da, db).finals
    if budget <= 0 or not ({"object"} in (_declared(a), _declared(b))):
        return False
    for one, other in ((a, b), (b, a)):
        required = one.get("required") or []
        for name in required if isinstance(required, list) else []:
            if isinstance(name, str) and _disjoint(_member(one, name), _member(other, name), translator, budget - 1):
                return True
    return False


def _member(schema: dict, name: str):
    """The schema a member ``name`` of an object valid under ``schema`` is valid under (as far as
    ``properties``/``additionalProperties`` say; True when a pattern may apply too)."""
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    if schema.get("patternProperties"):
        return properties.get(name, True) if not any(pattern_matches(p, name) for p in schema["patternProperties"]) else True
    if name in properties:
        return properties[name]
    extra = schema.get("additionalProperties", True)
    return extra


def _forbids(schema: dict, name: str) -> bool:
    """Whether an object valid under ``schema`` cannot have the member ``name``."""
    return _member(schema, name) is False


def _complete(schema) -> bool:
    """Whether the translation of ``schema`` holds the canonical spelling of every value valid under it:
    scalar types with bounds, lengths and patterns (no ``format``: its automaton is a subset), or an
    ``enum``/``const`` of scalars whose JSON text is canonical (strings, integers, non-integral floats
    without exponent)."""
    if not isinstance(schema, dict) or any(k in VOCABULARY and k not in SCALAR_WORDS for k in schema):
        return False
    if "pattern" in schema and (not isinstance(schema["pattern"], str) or _UNSURE_CLASSES.search(schema["pattern"])):
        return False  # a class the two readings may disagree on either way (\\s, \\p{..}, a negated \\d, flags)
    if "enum" in schema or "const" in schema:
        values = [schema["const"]] if "const" in schema else schema["enum"]
        return isinstance(values, list) and all(_canonical(v) for v in values)
    types = _declared(schema)
    return types is not None and types <= SCALAR_TYPES


# Pattern parts whose sets Python's re and the compiler may read differently in both directions.
_UNSURE_CLASSES = re.compile(r"\\[DWSspPbBXN]|\(\?|\[\^[^\]]*\\[dw]")


def _canonical(value) -> bool:
    if value is None or isinstance(value, (bool, str, int)):
        return True
    return isinstance(value, float) and math.isfinite(value) and not value.is_integer() and "e" not in repr(value)


def _compared_dfa(schema: dict, translator: _Translator):
    """:func:`_scalar_dfa` over bytes, made once per schema in a translation (a oneOf compares pairs)."""
    found = translator.compared.get(id(schema))
    if found is None or found[0] is not schema:
        found = translator.compared[id(schema)] = (schema, _scalar_dfa(schema, translator))
    return found[1]


def _scalar_dfa(schema: dict, translator: _Translator, alphabet=None, pointer: str = ""):
    """The DFA of a complete scalar schema, compact and strict (a refusal raises), its patterns read as
    the validators may read them at most (``superset``): it holds the canonical spelling of every valid value."""
    one = _Translator(translator.root, 0, translator.max_depth, True)
    one.superset = True
    return raw_dfa(one.value(schema, pointer, ()), alphabet or ByteAlphabet())


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
