"""JSON Schema -> a regular expression for the JSON text of valid documents.

Structured generation mostly starts from a JSON Schema; bpefst constrains
decoding with regular languages, so a schema is translated into a pattern in
the syntax :func:`bpefst.regex.compile_regex` compiles.  The translation is
*sound*: every string the pattern matches is a JSON document that ``json.loads``
reads and that is valid under the schema.  It is a chosen subset of the valid
documents, the one a generator should produce:

* objects list their properties in the schema's order, each property at most
  once, and no property the schema does not name (as if
  ``additionalProperties`` were false; ``false`` may be written);
* whitespace is compact (``{"a":1,"b":[2,3]}``, as ``json.dumps(...,
  separators=(",", ":"))`` writes) unless ``whitespace=k`` allows up to ``k``
  whitespace characters around every structural character ``{ } [ ] : ,``;
* strings may use every JSON escape except ``\\u`` escapes of surrogates (so
  that a ``\\uXXXX`` is one character, as minLength/maxLength count); a
  ``format`` generates the common spelling of its format (below);
* numbers with bounds have no exponent (an unbounded exponent cannot be
  compared with a bound by a finite automaton).

Supported keywords: ``type`` (one or a list), ``enum``, ``const``;
object: ``properties``, ``required``, ``additionalProperties: false``;
string: ``minLength``, ``maxLength``, ``pattern``, ``format`` (date,
date-time, time, email, uuid); integer and number: ``minimum``, ``maximum``,
``exclusiveMinimum``, ``exclusiveMaximum`` (decimal bounds for numbers, up to
12 decimals);
array: ``prefixItems``, ``items`` (a schema, or false after ``prefixItems``),
``minItems``, ``maxItems``, ``uniqueItems: false``; ``anyOf``; ``oneOf`` when its
branches cannot both hold (pairwise different types or enum values), so the
alternation is exact; ``$ref`` to ``#/$defs/...`` or ``#/definitions/...``.
Annotations (``title``, ``description``, ``default``, ``examples``, ...) are
allowed and change nothing.  Any other keyword, a recursive ``$ref``, or a
schema that would accept arbitrary JSON (``{}``, ``true``, an array without
``items``) raises :class:`SchemaError` naming the JSON pointer of the keyword:
a keyword is never ignored.

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

from ..errors import BpefstError

ANNOTATIONS = frozenset({
    "$schema", "$id", "$comment", "$anchor", "title", "description", "default", "examples", "deprecated",
    "readOnly", "writeOnly", "$defs", "definitions",
})
KEYWORDS = {
    "object": {"properties", "required", "additionalProperties"},
    "string": {"minLength", "maxLength", "pattern", "format"},
    "integer": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"},
    "array": {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"},
    "boolean": set(),
    "null": set(),
}
COMBINATORS = ("anyOf", "oneOf")
MAX_DEPTH = 64  # nested schemas (hostile input must not reach Python's recursion limit)
TYPED = set().union(*KEYWORDS.values())

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
FORMATS = {
    "date": _DATE,
    "time": _TIME,
    "date-time": rf"{_DATE}T{_TIME}",
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
}


class SchemaError(BpefstError):
    """A schema bpefst cannot translate; the message starts with the JSON pointer of the cause."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(f"JSON Schema {pointer or '/'}: {message}")
        self.pointer = pointer


def schema_to_regex(schema, whitespace: int = 0) -> str:
    """The pattern matching the JSON text of the documents generated for ``schema`` (module docstring).

    ``whitespace``: 0 for compact JSON, ``k`` to allow up to ``k`` whitespace
    characters (space, tab, newline, carriage return) around each structural
    character.
    """
    if not isinstance(whitespace, int) or isinstance(whitespace, bool) or whitespace < 0:
        raise BpefstError(f"whitespace must be a non-negative integer, not {whitespace!r}")
    return _Translator(schema, whitespace).value(schema, "", ())


def _pointer(pointer: str, key) -> str:
    return f"{pointer}/{str(key).replace('~', '~0').replace('/', '~1')}"


def literal(text: str) -> str:
    """``text`` as a pattern matching exactly it."""
    return re.escape(text)


def json_literal(value) -> str:
    """The compact JSON text of ``value`` as a pattern."""
    return literal(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


class _Translator:
    def __init__(self, root, whitespace: int):
        self.root = root
        self.depth = 0
        self.ws = f"[ \\t\\n\\r]{{0,{whitespace}}}" if whitespace else ""

    def punct(self, char: str) -> str:
        """A structural character with the allowed whitespace around it."""
        return f"{self.ws}{re.escape(char)}{self.ws}"

    # -- dispatch ----------------------------------------------------------------------------
    def value(self, schema, pointer: str, refs: tuple) -> str:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise SchemaError(pointer, f"schemas nest more than {MAX_DEPTH} deep")
            return self._value(schema, pointer, refs)
        finally:
            self.depth -= 1

    def _value(self, schema, pointer: str, refs: tuple) -> str:
        if schema is True or schema == {}:
            raise SchemaError(pointer, "accepts any JSON value, which is not a regular language; give a type")
        if schema is False:
            raise SchemaError(pointer, "the false schema accepts nothing")
        if not isinstance(schema, dict):
            raise SchemaError(pointer, f"a schema must be an object or a boolean, not {type(schema).__name__}")
        for key in schema:
            if key not in ANNOTATIONS and key not in TYPED and key not in ("type", "enum", "const", "$ref", *COMBINATORS):
                raise SchemaError(_pointer(pointer, key), f"unsupported keyword {key!r}")
        if "$ref" in schema:
            return self.ref(schema, pointer, refs)
        for keyword in COMBINATORS:
            if keyword in schema:
                return self.combinator(schema, keyword, pointer, refs)
        if "enum" in schema or "const" in schema:
            return self.enum(schema, pointer, refs)
        types = self.types(schema, pointer)
        branches = [self.typed(t, schema, pointer, refs) for t in types]
        return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"

    def types(self, schema: dict, pointer: str) -> list[str]:
        if "type" not in schema:
            raise SchemaError(pointer, "needs a type (or enum, const, anyOf, oneOf, $ref); without one any JSON value is valid")
        declared = schema["type"]
        types = declared if isinstance(declared, list) else [declared]
        if not types:
            raise SchemaError(_pointer(pointer, "type"), "an empty list of types accepts nothing")
        for i, t in enumerate(types):
            if not isinstance(t, str) or t not in KEYWORDS:
                where = _pointer(pointer, "type") if not isinstance(declared, list) else _pointer(_pointer(pointer, "type"), i)
                raise SchemaError(where, f"unknown type {t!r} (expected one of {', '.join(KEYWORDS)})")
        if "integer" in types and "number" in types:
            types = [t for t in types if t != "integer"]  # every integer is a number
        return types

    def typed(self, type_: str, schema: dict, pointer: str, refs: tuple) -> str:
        return getattr(self, "type_" + type_)(schema, pointer, refs)

    # -- references and combinators ----------------------------------------------------------------
    def ref(self, schema: dict, pointer: str, refs: tuple) -> str:
        ref = schema["$ref"]
        where = _pointer(pointer, "$ref")
        others = [k for k in schema if k != "$ref" and k not in ANNOTATIONS]
        if others:
            raise SchemaError(_pointer(pointer, others[0]), "keywords beside $ref are not supported; move them into the definition")
        if not isinstance(ref, str) or not (ref.startswith("#/$defs/") or ref.startswith("#/definitions/")):
            raise SchemaError(where, f"only references to #/$defs/NAME or #/definitions/NAME are supported, not {ref!r}")
        if ref in refs:
            raise SchemaError(where, f"recursive reference {ref!r} (through {' -> '.join(refs)}): a recursive schema is not a regular language")
        target = self.root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, dict) or part not in target:
                raise SchemaError(where, f"{ref!r} names no definition")
            target = target[part]
        return self.value(target, ref[1:], refs + (ref,))

    def combinator(self, schema: dict, keyword: str, pointer: str, refs: tuple) -> str:
        where = _pointer(pointer, keyword)
        others = [k for k in schema if k != keyword and k not in ANNOTATIONS]
        if others:
            raise SchemaError(_pointer(pointer, others[0]), f"keywords beside {keyword} are not supported; move them into its branches")
        branches = schema[keyword]
        if not isinstance(branches, list) or not branches:
            raise SchemaError(where, "must be a non-empty list of schemas")
        if keyword == "oneOf":
            _check_exclusive(branches, where, self.root)
        patterns = [self.value(b, _pointer(where, i), refs) for i, b in enumerate(branches)]
        return "(?:" + "|".join(patterns) + ")"

    def enum(self, schema: dict, pointer: str, refs: tuple) -> str:
        if "const" in schema:
            values, where = [schema["const"]], _pointer(pointer, "const")
            if "enum" in schema and not any(_same(schema["const"], v) for v in schema["enum"] or []):
                raise SchemaError(where, "the const is not among the enum values: nothing is valid")
        else:
            values, where = schema["enum"], _pointer(pointer, "enum")
            if not isinstance(values, list) or not values:
                raise SchemaError(where, "must be a non-empty list")
        rest = {k: v for k, v in schema.items() if k not in ("enum", "const") and k not in ANNOTATIONS}
        if rest:  # keep the values the other keywords allow: a value's own text must match their pattern
            values = [v for v in values if self.allows(rest, v, pointer, refs)]
            if not values:
                raise SchemaError(where, "no value is valid under the schema's other keywords")
        unique: list[str] = []
        for v in values:
            text = json_literal(v)
            if text not in unique:
                unique.append(text)
        return unique[0] if len(unique) == 1 else "(?:" + "|".join(unique) + ")"

    def allows(self, rest: dict, value, pointer: str, refs: tuple) -> bool:
        """Whether ``value`` is valid under the keywords ``rest`` (an enum's other keywords)."""
        if "type" not in rest:  # keywords apply to the values of their own type only
            kind = _json_type(value)
            rest = {**rest, "type": "number" if kind == "integer" else kind}
            if rest["type"] not in KEYWORDS:
                return False
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        compact = _Translator(self.root, 0)
        return regex.fullmatch(compact.value(rest, pointer, refs), text) is not None

    # -- types -------------------------------------------------------------------------------------
    def type_null(self, schema, pointer, refs) -> str:
        return "null"

    def type_boolean(self, schema, pointer, refs) -> str:
        return "(?:true|false)"

    def type_string(self, schema: dict, pointer: str, refs) -> str:
        low = _natural(schema, "minLength", pointer, 0)
        high = _natural(schema, "maxLength", pointer, None)
        if high is not None and high < low:
            raise SchemaError(_pointer(pointer, "maxLength"), f"maxLength {high} < minLength {low}: nothing is valid")
        if "format" in schema or "pattern" in schema:
            if "format" in schema and "pattern" in schema:
                raise SchemaError(_pointer(pointer, "pattern"), "format and pattern together are not supported")
            if "minLength" in schema or "maxLength" in schema:
                key = "minLength" if "minLength" in schema else "maxLength"
                raise SchemaError(_pointer(pointer, key), f"{key} with format or pattern is not supported")
            if "format" in schema:
                name = schema["format"]
                if name not in FORMATS:
                    raise SchemaError(_pointer(pointer, "format"), f"unsupported format {name!r} (supported: {', '.join(FORMATS)})")
                return f'"{FORMATS[name]}"'
            return '"' + _string_pattern(schema["pattern"], _pointer(pointer, "pattern")) + '"'
        return f'"{STRING_CHAR}{_repeat(low, high)}"'

    def type_integer(self, schema: dict, pointer: str, refs) -> str:
        low, high = _bounds(schema, pointer, integer=True)
        if low is None and high is None:
            return INTEGER
        if low is not None and high is not None and low > high:
            raise SchemaError(pointer, f"no integer lies between the bounds {low} and {high}")
        return _integer_range(low, high)

    def type_number(self, schema: dict, pointer: str, refs) -> str:
        if not any(k in schema for k in KEYWORDS["number"]):
            return NUMBER
        low, low_open, high, high_open = _number_bounds(schema, pointer)
        if low is not None and high is not None and (low > high or (low == high and (low_open or high_open))):
            raise SchemaError(pointer, "no number lies between the bounds")
        return _number_range(low, low_open, high, high_open)

    def type_array(self, schema: dict, pointer: str, refs) -> str:
        """``[`` items ``]``: the ``prefixItems`` positions first (a tuple), then ``items`` for the rest."""
        low = _natural(schema, "minItems", pointer, 0)
        high = _natural(schema, "maxItems", pointer, None)
        if high is not None and high < low:
            raise SchemaError(_pointer(pointer, "maxItems"), f"maxItems {high} < minItems {low}: nothing is valid")
        if schema.get("uniqueItems", False) is not False:
            raise SchemaError(_pointer(pointer, "uniqueItems"), "uniqueItems: true is not a regular constraint")
        prefix = schema.get("prefixItems", [])
        if not isinstance(prefix, list):
            raise SchemaError(_pointer(pointer, "prefixItems"), "must be a list of schemas")
        firsts = [self.value(sub, _pointer(_pointer(pointer, "prefixItems"), i), refs) for i, sub in enumerate(prefix)]
        rest = schema.get("items")
        if rest is None and (high is None or high > len(prefix)):
            raise SchemaError(pointer, "an array needs items for the positions past prefixItems (or maxItems, or "
                                       "items: false); any JSON value is not a regular language")
        if isinstance(rest, list):
            raise SchemaError(_pointer(pointer, "items"), "items as a list is the old tuple form; use prefixItems")
        item = None if rest is None or rest is False else self.value(rest, _pointer(pointer, "items"), refs)
        open_, close, comma = self.punct("["), self.punct("]"), self.punct(",")
        if not firsts:
            if high == 0 or item is None:
                if low > 0:
                    raise SchemaError(_pointer(pointer, "minItems"), "no item may be present, so minItems cannot hold")
                return open_ + close
            tail = _repeat(max(low - 1, 0), None if high is None else high - 1)
            items = f"{item}(?:{comma}{item}){tail}"
            return open_ + (items if low > 0 else f"(?:{items})?") + close
        # lengths up to the prefix's: its first n schemas; longer ones: the whole prefix, then items
        lengths = []
        for n in range(low, len(firsts) + 1):
            if high is not None and n > high:
                break
            lengths.append(comma.join(firsts[:n]))
        if item is not None and (high is None or high > len(firsts)):
            more = _repeat(max(low - len(firsts), 1), None if high is None else high - len(firsts))
            lengths.append(comma.join(firsts) + f"(?:{comma}{item}){more}")
        if not lengths:
            raise SchemaError(_pointer(pointer, "minItems"), "more items are required than prefixItems and items allow")
        return open_ + (lengths[0] if len(lengths) == 1 else "(?:" + "|".join(lengths) + ")") + close

    def type_object(self, schema: dict, pointer: str, refs) -> str:
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise SchemaError(_pointer(pointer, "properties"), "must be an object")
        extra = schema.get("additionalProperties", False)
        if extra is not False:
            raise SchemaError(_pointer(pointer, "additionalProperties"),
                              "only additionalProperties: false is supported (generated objects have only the listed properties)")
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise SchemaError(_pointer(pointer, "required"), "must be a list of property names")
        for i, name in enumerate(required):
            if name not in properties:
                raise SchemaError(_pointer(_pointer(pointer, "required"), i), f"required property {name!r} is not in properties")
        colon, comma = self.punct(":"), self.punct(",")
        members = [(json_literal(name) + colon + self.value(sub, _pointer(_pointer(pointer, "properties"), name), refs),
                    name in required) for name, sub in properties.items()]
        return self.punct("{") + _members(members, comma) + self.punct("}")


def _members(members: list[tuple[str, bool]], comma: str) -> str:
    """Properties in order, the optional ones may be absent, commas only between present ones.

    ``after[i]``: properties ``i..`` once one has been written (each present one
    starts with a comma).  The whole: for each choice of the first present
    property ``k`` (every property before it optional), ``k`` then ``after[k+1]``.
    """
    n = len(members)
    after = [""] * (n + 1)
    for i in range(n - 1, -1, -1):
        text, needed = members[i]
        after[i] = (f"{comma}{text}" if needed else f"(?:{comma}{text})?") + after[i + 1]
    choices = []
    for k, (text, needed) in enumerate(members):
        choices.append(text + after[k + 1])
        if needed:
            break
    else:
        choices.append("")  # every property optional: the empty object
    return choices[0] if len(choices) == 1 else "(?:" + "|".join(choices) + ")"


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
    from . import ByteAlphabet, compile_regex  # the package, for the check

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
        dfa = compile_regex(body, ByteAlphabet())
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
_TYPE_OF = {bool: "boolean", type(None): "null", str: "string", dict: "object", list: "array"}


def _json_type(value) -> str:
    if isinstance(value, bool) or value is None:
        return _TYPE_OF[type(value)]
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    return _TYPE_OF.get(type(value), "unknown")


def _same(a, b) -> bool:
    """JSON equality (booleans are not numbers)."""
    return _json_type(a) == _json_type(b) and a == b


def _check_exclusive(branches: list, where: str, root) -> None:
    """oneOf is an alternation only when no document can be valid under two branches.

    Sufficient, checked: each branch (after following ``$ref``) declares its
    values by ``type`` or ``enum``/``const``, and no two branches share a type
    (integer is a number) or a value.
    """
    kinds = []
    for i, branch in enumerate(branches):
        seen = set()
        while isinstance(branch, dict) and "$ref" in branch and isinstance(branch["$ref"], str) and branch["$ref"] not in seen:
            seen.add(branch["$ref"])
            target = root
            for part in branch["$ref"][2:].split("/"):
                target = target.get(part.replace("~1", "/").replace("~0", "~")) if isinstance(target, dict) else None
            branch = target
        if isinstance(branch, dict) and ("enum" in branch or "const" in branch):
            values = [branch["const"]] if "const" in branch else list(branch["enum"] or [])
            kinds.append(("values", values))
        elif isinstance(branch, dict) and "type" in branch:
            types = set(branch["type"] if isinstance(branch["type"], list) else [branch["type"]])
            if "number" in types:
                types.add("integer")
            kinds.append(("types", types))
        else:
            raise SchemaError(_pointer(where, i), "oneOf branches need a type, enum or const to show they exclude each other "
                                                  "(or use anyOf)")
    for i in range(len(kinds)):
        for j in range(i):
            if _overlap(kinds[i], kinds[j]):
                raise SchemaError(_pointer(where, i), f"oneOf branches {j} and {i} may both hold, so an alternation would "
                                                      "accept invalid documents; use anyOf or make their types differ")


def _overlap(a, b) -> bool:
    (ka, xa), (kb, xb) = a, b
    if ka == "types" and kb == "types":
        return bool(xa & xb)
    if ka == "values" and kb == "values":
        return any(_same(u, v) for u in xa for v in xb)
    types, values = (xa, xb) if ka == "types" else (xb, xa)
    return any(_json_type(v) in types or (_json_type(v) == "integer" and "number" in types) for v in values)
