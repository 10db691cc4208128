"""Regular-expression syntax: pattern text -> abstract syntax tree.

The accepted language is a subset of the ``regex`` module's default (V0)
syntax for ``str`` patterns, chosen so that every accepted pattern denotes a
*regular* language under full-match semantics:

* literals, including escaped punctuation and ``\\n \\t \\r \\f \\v \\a``,
  ``\\xhh \\uhhhh \\Uhhhhhhhh``, octal ``\\0``/``\\012``, ``\\N{NAME}``;
* ``.``, bracket classes ``[...]`` and ``[^...]`` (anything the ``regex``
  module allows inside brackets, including ``\\d``, ``\\p{..}``, POSIX
  ``[:alpha:]``), ``\\d \\D \\w \\W \\s \\S``, ``\\p{..}``/``\\P{..}``/``\\pL``;
* groups ``(...)``, ``(?:...)``, ``(?P<name>...)``, ``(?<name>...)``,
  comments ``(?#...)``, scoped flags ``(?i:...)``, ``(?s-i:...)`` (``i``
  and ``s`` only);
* alternation ``|`` (empty branches allowed), quantifiers ``* + ? {m} {m,}
  {,n} {m,n}`` and their lazy forms ``*?`` etc. (same language);
* global flags ``(?i) (?s) (?a) (?u) (?m)`` at the very start;
* ``^``/``\\A`` at the start and ``$``/``\\Z`` at the end of a top-level
  branch (no-ops, since the whole string must match).

``\\p``/``\\P`` under the ASCII flag are rejected, and ``a`` is global only,
because the ``regex`` module itself answers inconsistently there.
Everything else (backreferences, lookarounds, atomic groups, possessive
quantifiers, ``\\b``, conditionals, recursion, anchors in the middle, other
flags) raises :class:`RegexSyntaxError` naming the construct and its
0-based position.  The pattern is first compiled by the ``regex`` module
itself, so a pattern it rejects is rejected with its message and position.

Single-character atoms are not decoded here beyond plain literals: classes,
properties and case-insensitive literals keep their source text
(:class:`CharSet`), and :mod:`.charsets` asks the ``regex`` module which
characters they match, so the tables are exactly the oracle's.
"""

from __future__ import annotations

import re as _stdlib_re
from dataclasses import dataclass

import regex as _regex_module

from ..errors import BpefstError

#: Flags we understand: i (ignore case), s (dot matches newline), a (ASCII
#: classes), u (Unicode, the default), m (multiline: only changes anchors in
#: the middle, which are rejected anyway).
SUPPORTED_FLAGS = frozenset("isaum")
#: Flags allowed in a scoped group ``(?flags-flags:...)``.
SCOPED_FLAGS = frozenset("is")
MAX_NESTING = 200


class RegexSyntaxError(BpefstError):
    """A pattern that is malformed or uses a construct the compiler does not support."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} at position {position}")
        self.position = position


# ----------------------------------------------------------------------- nodes
@dataclass(frozen=True)
class Literal:
    """One code point, matched exactly (no case folding)."""

    codepoint: int
    pos: int


@dataclass(frozen=True)
class CharSet:
    """One character from a set given by regex source text evaluated with ``flags``.

    ``source`` is a bracket class, an escape such as ``\\d`` or ``\\p{L}``,
    ``.`` or an escaped literal; ``flags`` is a sorted string over ``isa``.
    """

    source: str
    flags: str
    pos: int


@dataclass(frozen=True)
class Concat:
    parts: tuple["Node", ...]
    pos: int


@dataclass(frozen=True)
class Alternation:
    branches: tuple["Node", ...]
    pos: int


@dataclass(frozen=True)
class Repeat:
    child: "Node"
    low: int
    high: int | None  # None: unbounded
    pos: int


Node = Literal | CharSet | Concat | Alternation | Repeat


# ---------------------------------------------------------------------- parser
_QUANTIFIER_BRACES = _stdlib_re.compile(r"\{(\d*)(?:(,)(\d*))?\}")
_FLAG_GROUP = _stdlib_re.compile(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])")
_POSIX_CLASS = _stdlib_re.compile(r"\[:\^?[A-Za-z_]+:\]")
_SIMPLE_ESCAPES = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_SET_ESCAPES = frozenset("dDwWsS")
_HEX_LENGTHS = {"x": 2, "u": 4, "U": 8}
_OCTAL = frozenset("01234567")
# Characters that are one literal of their own unless a quantifier follows (the sequence reads them directly)
_PLAIN_STOPS = frozenset("\\()[].|*+?{^$")
_QUANTIFIER_STARTS = frozenset("*+?{")


def parse(pattern: str) -> Node:
    """Parse ``pattern`` into a tree, or raise :class:`RegexSyntaxError`."""
    if not isinstance(pattern, str):
        raise BpefstError(f"a pattern must be a string, not {type(pattern).__name__}")
    _validate_with_regex_module(pattern)
    return _Parser(pattern).parse()


def check_nesting(pattern: str, limit: int = MAX_NESTING) -> None:
    """Refuse groups nested deeper than ``limit`` before any recursive parser sees them.

    The ``regex`` module and our parser both recurse once per level, so 3,000
    nested parentheses would end in a RecursionError.  The scan skips escapes
    and character classes (a ``(`` inside ``[...]`` opens nothing).
    """
    depth, i, n = 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 1
            if i < n and pattern[i] == "^":
                i += 1
            if i < n and pattern[i] == "]":
                i += 1  # a leading ] is a literal
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif c == "(":
            depth += 1
            if depth > limit:
                raise RegexSyntaxError(f"groups nest more than {limit} deep", i)
        elif c == ")":
            depth = max(0, depth - 1)
        i += 1


def _validate_with_regex_module(pattern: str) -> None:
    check_nesting(pattern)
    try:
        _regex_module.compile(pattern)
    except _regex_module.error as exc:
        pos = exc.pos if isinstance(exc.pos, int) else 0
        raise RegexSyntaxError(f"invalid pattern: {exc.msg}", pos) from None
    except (RecursionError, OverflowError, MemoryError, ValueError) as exc:
        raise RegexSyntaxError(f"invalid pattern: {type(exc).__name__}", 0) from None


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.depth = 0

    # ------------------------------------------------------------- helpers
    def error(self, message: str, pos: int | None = None) -> RegexSyntaxError:
        return RegexSyntaxError(message, self.i if pos is None else pos)

    def unsupported(self, construct: str, pos: int) -> RegexSyntaxError:
        return RegexSyntaxError(f"unsupported construct {construct!r}", pos)

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    # ------------------------------------------------------------- grammar
    def parse(self) -> Node:
        flags = self.global_flags()
        node = self.alternation(flags, top=True)
        if self.i != len(self.p):  # a stray ')' (the regex module would have caught it)
            raise self.error("unbalanced parenthesis")
        return node

    def global_flags(self) -> str:
        flags: set[str] = set()
        while True:
            m = _FLAG_GROUP.match(self.p, self.i)
            if not m or m.group(3) != ")":
                break
            on, off = m.group(1), m.group(2)
            if off is not None:
                raise self.unsupported(m.group(0), self.i)
            self.check_flags(on, self.i)
            flags.update(on)
            self.i = m.end()
        return _normalize_flags(flags)

    def check_flags(self, letters: str, pos: int) -> None:
        for ch in letters:
            if ch not in SUPPORTED_FLAGS:
                raise self.unsupported(f"(?{ch}", pos)

    def alternation(self, flags: str, top: bool = False) -> Node:
        start = self.i
        branches = [self.sequence(flags, top)]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence(flags, top))
        if len(branches) == 1:
            return branches[0]
        return Alternation(tuple(branches), start)

    def sequence(self, flags: str, top: bool) -> Node:
        start = self.i
        parts: list[Node] = []
        seen_consuming = False
        p = self.p
        n = len(p)
        folding = "i" in flags
        while self.i < n:
            ch = p[self.i]
            pos = self.i
            if ch not in _PLAIN_STOPS and not folding and (pos + 1 == n or p[pos + 1] not in _QUANTIFIER_STARTS):
                parts.append(Literal(ord(ch), pos))  # (the common case: what atom() and quantified() would give)
                self.i += 1
                seen_consuming = True
                continue
            if ch in "|)":
                break
            if ch == "^" or p.startswith("\\A", pos):
                width = 1 if ch == "^" else 2
                if not top or seen_consuming:
                    raise self.unsupported(p[pos : pos + width], pos)
                self.i += width
                self.no_quantifier(p[pos : pos + width], pos)
                continue
            if ch == "$" or p.startswith("\\Z", pos):
                width = 1 if ch == "$" else 2
                if not top or not self.only_end_anchors_follow(pos + width):
                    raise self.unsupported(p[pos : pos + width], pos)
                self.i += width
                self.no_quantifier(p[pos : pos + width], pos)
                continue
            atom = self.atom(flags)
            if atom is None:  # a comment group: a quantifier after it applies to what precedes it
                if parts:
                    parts[-1] = self.quantified(parts[-1])
                continue
            seen_consuming = True
            parts.append(self.quantified(atom))
        if len(parts) == 1:
            return parts[0]
        return Concat(tuple(parts), start)

    def only_end_anchors_follow(self, j: int) -> bool:
        p = self.p
        while j < len(p):
            if p[j] == "$":
                j += 1
            elif p.startswith("\\Z", j):
                j += 2
            else:
                return p[j] == "|"
        return True

    def no_quantifier(self, what: str, pos: int) -> None:
        ch = self.peek()
        if ch in ("*", "+", "?") or (ch == "{" and _QUANTIFIER_BRACES.match(self.p, self.i)):
            raise self.unsupported(f"quantified anchor {what}", pos)

    def quantified(self, atom: Node) -> Node:
        p = self.p
        while True:
            pos = self.i
            ch = self.peek()
            if ch == "*":
                low, high = 0, None
                self.i += 1
            elif ch == "+":
                low, high = 1, None
                self.i += 1
            elif ch == "?":
                low, high = 0, 1
                self.i += 1
            elif ch == "{" and (m := _QUANTIFIER_BRACES.match(p, self.i)):
                lo_text, comma, hi_text = m.group(1), m.group(2), m.group(3)
                if not lo_text and not comma:
                    return atom  # "{}" is a literal; the caller will read it
                low = int(lo_text) if lo_text else 0
                if comma:
                    high = int(hi_text) if hi_text else None
                else:
                    high = low
                if high is not None and high < low:
                    raise self.error("min repeat greater than max repeat", pos)
                self.i = m.end()
            else:
                return atom
            # lazy (same language) or possessive (not supported)
            if self.peek() == "?":
                self.i += 1
            elif self.peek() == "+":
                raise self.unsupported("possessive quantifier " + p[pos : self.i + 1], pos)
            atom = Repeat(atom, low, high, pos)

    def atom(self, flags: str) -> Node | None:
        p = self.p
        pos = self.i
        ch = p[pos]
        if ch == "(":
            return self.group(flags)
        if ch == "[":
            end = self.class_end(pos)
            self.i = end
            return self.charset(p[pos:end], flags, pos)
        if ch == ".":
            self.i += 1
            return CharSet(".", _set_flags(flags), pos)
        if ch == "\\":
            return self.escape(flags)
        if ch in "*+?":
            raise self.error("nothing to repeat")
        self.i += 1
        return self.literal(ord(ch), flags, pos)

    def literal(self, codepoint: int, flags: str, pos: int) -> Node:
        if "i" in flags:
            return CharSet(_regex_module.escape(chr(codepoint), literal_spaces=True), _set_flags(flags), pos)
        return Literal(codepoint, pos)

    def charset(self, source: str, flags: str, pos: int) -> CharSet:
        if "a" in flags:
            # The regex module answers inconsistently for Unicode properties under the
            # ASCII flag (e.g. (?a:\\P{L}) matches 'é' but (?a:(?:\\P{L})?) does not).
            k = _property_escape(source)
            if k >= 0:
                raise self.unsupported(source[k : k + 2] + " under the ASCII flag (?a)", pos + k)
        return CharSet(source, _set_flags(flags), pos)

    # -------------------------------------------------------------- groups
    def group(self, flags: str) -> Node | None:
        p = self.p
        pos = self.i
        inner_flags = flags
        if p.startswith("(?", pos):
            if p.startswith("(?:", pos):
                self.i += 3
            elif p.startswith("(?#", pos):
                end = p.find(")", pos)
                if end < 0:
                    raise self.error("missing ), unterminated comment", pos)
                self.i = end + 1
                return None
            elif (m := _stdlib_re.compile(r"\(\?P?<([A-Za-z_]\w*)>").match(p, pos)) and not p.startswith(
                ("(?<=", "(?<!"), pos
            ):
                self.i = m.end()
            elif (m := _FLAG_GROUP.match(p, pos)) and m.group(3) == ":":
                on, off = m.group(1), m.group(2) or ""
                for ch in on + off:
                    # the regex module ignores a scoped (?a:...) inside some repetitions
                    if ch not in SCOPED_FLAGS:
                        raise self.unsupported(f"(?{ch}:...) (scoped flags may only be i and s)", pos)
                inner = set(flags) | set(on)
                inner -= set(off)
                inner_flags = _normalize_flags(inner)
                self.i = m.end()
            elif _FLAG_GROUP.match(p, pos):
                raise self.unsupported(_FLAG_GROUP.match(p, pos).group(0) + " (inline flags are only supported at the start)", pos)
            else:
                for construct in ("(?<=", "(?<!", "(?P=", "(?P>", "(?=", "(?!", "(?>", "(?|", "(?(", "(?&", "(?R", "(?'"):
                    if p.startswith(construct, pos):
                        raise self.unsupported(construct, pos)
                raise self.unsupported(p[pos : pos + 3], pos)
        else:
            self.i += 1
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"groups nest more than {MAX_NESTING} deep", pos)
        node = self.alternation(inner_flags)
        self.depth -= 1
        if self.peek() != ")":
            raise self.error("missing ), unterminated subpattern", pos)
        self.i += 1
        if isinstance(node, Concat) and not node.parts:
            return node
        return node

    # ------------------------------------------------------------- classes
    def class_end(self, start: int) -> int:
        """The index just past the ``]`` that closes the class opened at ``start``."""
        p = self.p
        j = start + 1
        if j < len(p) and p[j] == "^":
            j += 1
        first = True
        while j < len(p):
            ch = p[j]
            if ch == "]" and not first:
                return j + 1
            first = False
            if ch == "\\":
                j = self.escape_end(j)
                continue
            if ch == "[":
                m = _POSIX_CLASS.match(p, j)
                if m:
                    j = m.end()
                    continue
            j += 1
        raise self.error("unterminated character set", start)

    def escape_end(self, j: int) -> int:
        """The index just past the escape starting at ``j`` (a backslash)."""
        p = self.p
        if j + 1 >= len(p):
            raise self.error("bad escape (end of pattern)", j)
        kind = p[j + 1]
        if kind in "pPN" and j + 2 < len(p) and p[j + 2] == "{":
            close = p.find("}", j + 3)
            if close < 0:
                raise self.error("missing }", j)
            return close + 1
        if kind in "pP":
            return j + 3
        if kind in _HEX_LENGTHS:
            return j + 2 + _HEX_LENGTHS[kind]
        return j + 2

    # ------------------------------------------------------------- escapes
    def escape(self, flags: str) -> Node:
        p = self.p
        pos = self.i
        if pos + 1 >= len(p):
            raise self.error("bad escape (end of pattern)", pos)
        kind = p[pos + 1]
        if kind in _SET_ESCAPES or kind in "pPN":
            end = self.escape_end(pos)
            self.i = end
            return self.charset(p[pos:end], flags, pos)
        if kind in _SIMPLE_ESCAPES:
            self.i = pos + 2
            return self.literal(_SIMPLE_ESCAPES[kind], flags, pos)
        if kind in _HEX_LENGTHS:
            end = pos + 2 + _HEX_LENGTHS[kind]
            digits = p[pos + 2 : end]
            if len(digits) != _HEX_LENGTHS[kind] or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise self.error(f"incomplete escape \\{kind}", pos)
            value = int(digits, 16)
            if value > 0x10FFFF:
                raise self.error(f"bad escape \\{kind}{digits}", pos)
            self.i = end
            return self.literal(value, flags, pos)
        if kind == "0":
            end = pos + 2
            while end < len(p) and end < pos + 4 and p[end] in _OCTAL:
                end += 1
            self.i = end
            return self.literal(int(p[pos + 1 : end], 8), flags, pos)
        if kind.isdigit():
            if p[pos + 1 : pos + 4].isdigit() and len(p[pos + 1 : pos + 4]) == 3 and all(c in _OCTAL for c in p[pos + 1 : pos + 4]):
                value = int(p[pos + 1 : pos + 4], 8)
                if value > 0o377:
                    raise self.error("octal escape value outside range 0-0o377", pos)
                self.i = pos + 4
                return self.literal(value, flags, pos)
            raise self.unsupported("backreference \\" + kind, pos)
        if kind.isascii() and kind.isalnum():
            names = {"b": "word boundary \\b", "B": "\\B", "G": "\\G", "K": "\\K", "X": "grapheme \\X"}
            raise self.unsupported(names.get(kind, "\\" + kind), pos)
        self.i = pos + 2
        return self.literal(ord(kind), flags, pos)


def _property_escape(source: str) -> int:
    """Offset of the first ``\\p``/``\\P`` escape in a class or escape source, or -1."""
    j = 0
    while j < len(source):
        if source[j] == "\\":
            if source[j + 1 : j + 2] in ("p", "P"):
                return j
            j += 2
        else:
            j += 1
    return -1


def _normalize_flags(flags: set[str] | str) -> str:
    return "".join(sorted(set(flags)))


def _set_flags(flags: str) -> str:
    """The flags that change which characters a single-character atom matches."""
    return "".join(f for f in flags if f in "isa")


EMPTY = Concat((), 0)
"""The empty string (an empty sequence)."""
