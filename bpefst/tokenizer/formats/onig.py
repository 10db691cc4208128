"""Pre-tokenization patterns in HF ``tokenizers``' regex dialect (Oniguruma).

HF ``tokenizers`` runs ``Split`` patterns with Oniguruma in its Ruby syntax,
which reads one construct of our patterns (the ``regex`` module's, i.e. Perl's)
differently: an interval followed by ``+``.  For ``regex``, ``\\p{N}{1,3}+`` is
a *possessive* interval (at most three digits, no backtracking); for Oniguruma
it is the interval repeated, ``(?:\\p{N}{1,3})+``, so ``"0626"`` is one chunk
instead of ``"062"``, ``"6"``.  cl100k's pattern uses exactly this construct.

Both engines agree on atomic groups ``(?>...)`` and on the other possessive
forms (``?+``, ``*+``, ``++``), so:

* :func:`to_oniguruma` writes every possessive interval ``X{n,m}+`` as
  ``(?>X{n,m})`` (the same language and the same matches);
* :func:`from_oniguruma` reads ``X{n,m}+`` as ``(?:X{n,m})+``, what HF does with it.
"""

from __future__ import annotations

from typing import Callable

import regex

_ESCAPE = regex.compile(r"\\(?:[pPxNuU]\{[^}]*\}|[pP][A-Za-z]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", regex.DOTALL)
_INTERVAL = regex.compile(r"\{\d+(?:,\d*)?\}")


def to_oniguruma(pattern: str) -> str:
    """``pattern`` (``regex`` module syntax) for HF's Oniguruma, with the same matches."""
    return _rewrite_possessive_intervals(pattern, lambda repeat: f"(?>{repeat})")


def from_oniguruma(pattern: str) -> str:
    """A pattern from a ``tokenizer.json`` in ``regex`` module syntax, matching as HF matches it."""
    return _rewrite_possessive_intervals(pattern, lambda repeat: f"(?:{repeat})+")


def _rewrite_possessive_intervals(pattern: str, rewrite: Callable[[str], str]) -> str:
    """Replace each ``ATOM{n,m}+`` by ``rewrite("ATOM{n,m}")``; everything else is kept as written.

    A forward scan that knows just enough syntax to find the atom in front of
    an interval: escapes, character classes, groups and single characters.
    """
    out: list[str] = []
    groups: list[int] = []  # where in ``out`` each open group starts
    atom: int | None = None  # where in ``out`` the atom that a quantifier would apply to starts
    i = 0
    while i < len(pattern):
        c = pattern[i]
        interval = _INTERVAL.match(pattern, i) if c == "{" else None
        if interval is not None and atom is not None:
            end = interval.end()
            if pattern.startswith("+", end):
                repeat = "".join(out[atom:]) + interval.group()
                del out[atom:]
                out.append(rewrite(repeat))
                end += 1
            else:
                out.append(interval.group())
            i, atom = end, None
            continue
        if c == "\\":
            piece = _ESCAPE.match(pattern, i).group() if i + 1 < len(pattern) else c
        elif c == "[":
            piece = pattern[i : _class_end(pattern, i)]
        else:
            piece = c
        if c == "(":
            groups.append(len(out))
            atom = None
        elif c == ")" and groups:
            atom = groups.pop()
        elif c in "|*+?" or c == "{":
            atom = None
        else:
            atom = len(out)
        out.append(piece)
        i += len(piece)
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class that opens at ``start``."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):  # a leading ']' is a literal
        i += 1
    depth = 1
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(pattern)
