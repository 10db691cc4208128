"""Exact pre-tokenization, faster on text that is mostly ASCII.

``Splitter(pattern).findall(text)`` returns exactly
``regex.compile(pattern).findall(text)``.  Pre-tokenization is the largest cost
of tokenizing and validating real text: the ``regex`` module runs the cl100k
pattern at about 13 MB/s on pydocs here, slower than tiktoken's whole encoder.
Python's own ``re`` engine runs the same pattern restricted to ASCII about 2.5
times faster, because its character classes over ASCII are bitmaps while
``\\p{L}`` and friends are Unicode property lookups.  So:

* :func:`ascii_translation` rewrites a preset pattern for ``re``, replacing
  every class escape (``\\p{..}``, ``\\s``, ``\\S``, ``\\w``, ``\\d`` ...) by the
  ASCII characters the ``regex`` module itself says it matches.  The rest of the
  pattern (alternation order, greedy and possessive quantifiers, lookahead,
  ``$``, scoped ``(?i:...)``) means the same in both engines, so on ASCII
  input the two patterns find the same matches (tests/test_splitter.py checks
  every preset exhaustively on short strings over the characters the patterns
  distinguish, and on the shared corpora)  gpt2 and o200k are translated from
  hand-tuned forms that are equal on ASCII only (:func:`ascii_pattern`).
* ASCII text goes to the translation.  Text with many non-ASCII characters
  goes to the ``regex`` module whole.  Other text is cut at safe positions
  (:mod:`bpefst.tokenizer.safe_cuts`) around each non-ASCII character: the
  ASCII stretches between cuts go to the translation, the stretch around the
  non-ASCII character goes to the ``regex`` module.  Pre-tokenizing the pieces
  separately is exact because the cuts are safe.

Only the preset patterns get the fast path (their translations are the tested
ones); any other pattern is handed to the ``regex`` module unchanged.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Callable

import regex

from .pretokenize import PRESETS, chunk_finder
from .safe_cuts import cut_rule_for, safe_cut

_ASCII = "".join(map(chr, range(128)))
_CLASS_ESCAPE = regex.compile(r"\\[pP]\{[^}]*\}|\\[pP][A-Za-z]|\\[sSdDwWhHvV]")
_ANY_ESCAPE = regex.compile(r"\\.", regex.DOTALL)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# After a non-ASCII character, the piece sent to the ``regex`` module runs to the
# first safe cut at least this far on; larger pieces mean fewer calls, smaller
# ones leave more ASCII text to the fast engine.
_SLOW_SPAN = 64
# Text whose UTF-8 is longer than its characters by more than this share goes to
# the ``regex`` module whole (measured on the shared corpora, cl100k and o200k:
# fortunes' pre-tokenization 0.94 -> 0.76 s, pydocs unchanged).
_DENSE = 0.01


def ascii_translation(pattern: str) -> str:
    """``pattern`` for ``re``, equivalent to the ``regex`` module's on ASCII-only text."""
    out = []
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            match = _CLASS_ESCAPE.match(pattern, i) or _ANY_ESCAPE.match(pattern, i)
            escape = match.group()
            if match.re is _CLASS_ESCAPE:
                body = _ascii_members(escape)
                out.append(body if in_class else (f"[{body}]" if body else "(?!)"))
            else:
                out.append(escape)
            i = match.end()
            continue
        if in_class and c == "]":
            in_class = False
        elif not in_class and c == "[":
            in_class = True
            if pattern.startswith("[^", i):
                out.append("[^")
                i += 2
                continue
        out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=None)
def _ascii_members(escape: str) -> str:
    """The ASCII characters ``escape`` matches, as the body of an ``re`` class."""
    matcher = regex.compile(escape)
    codes = [ord(ch) for ch in _ASCII if matcher.fullmatch(ch)]
    runs: list[list[int]] = []
    for code in codes:
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return "".join(f"\\x{a:02x}" if a == b else f"\\x{a:02x}-\\x{b:02x}" for a, b in runs)


class Splitter:
    """``findall`` of a pre-tokenization pattern, with the ASCII fast path for presets."""

    def __init__(self, pattern: str | None):
        self.pattern = pattern
        if pattern is None:
            self._slow: Callable[[str], list[str]] = lambda text: [text] if text else []
            self._fast = None
            return
        self._slow = chunk_finder(pattern)
        self._fast = _fast_findall(pattern) if pattern in PRESETS.values() else None
        self._rule = cut_rule_for(pattern, {})

    def findall(self, text: str) -> list[str]:
        """The chunks of ``text`` (which holds no special tokens), as ``regex.findall``."""
        fast = self._fast
        if fast is None:
            return self._slow(text)
        if text.isascii():
            return fast(text)
        if len(text.encode("utf-8", "surrogatepass")) - len(text) > _DENSE * len(text):
            return self._slow(text)  # mostly non-ASCII: cutting around every character costs more than it saves
        return self._mixed(text)

    def _mixed(self, text: str) -> list[str]:
        """Cut around each non-ASCII character; ASCII stretches fast, the rest by ``regex``."""
        fast, slow, rule = self._fast, self._slow, self._rule
        chunks: list[str] = []
        begin, n = 0, len(text)
        search = _NON_ASCII.search
        while begin < n:
            found = search(text, begin)
            if found is None:
                chunks += fast(text[begin:])
                break
            p = found.start()
            cut = safe_cut(text, rule, begin + 1, p + 1)
            if cut is not None:
                chunks += fast(text[begin:cut])
                begin = cut
            end = safe_cut(text, rule, max(p + 1, begin + _SLOW_SPAN), n, forward=True)
            if end is None:
                chunks += slow(text[begin:])
                break
            chunks += slow(text[begin:end])
            begin = end
        return chunks


# Forms of two presets that find the same chunks on ASCII text (and only there) and run 15-20% faster
# in ``re`` (gpt2 and o200k on pydocs, 2026-11):  quantifiers are possessive where giving characters
# back cannot lead to another match (the optional space or prefix is never in the class after it),
# and o200k's two letter alternatives ``U*L+ | U+L*`` become ``U+L* | L+`` (the same strings, found
# with the same greed) because on ASCII no letter is both upper and lower case, as \p{Lm}, \p{Lo}
# and \p{M} letters are in Unicode.
_ASCII_FORMS = {
    PRESETS["gpt2"]: r"'s|'t|'re|'ve|'m|'ll|'d| ?+\p{L}++| ?+\p{N}++| ?+[^\s\p{L}\p{N}]++|\s+(?!\S)|\s+",
    PRESETS["o200k"]: r"[^\r\n\p{L}\p{N}]?+(?:\p{Lu}++\p{Ll}*+|\p{Ll}++)(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}+| ?+[^\s\p{L}\p{N}]++[\r\n/]*+|\s*[\r\n]+|\s+(?!\S)|\s+",
}


def ascii_pattern(pattern: str) -> str:
    """The ``re`` pattern the fast path runs for a preset: its tuned ASCII form where it has one."""
    return ascii_translation(_ASCII_FORMS.get(pattern, pattern))


@lru_cache(maxsize=None)
def _fast_findall(pattern: str) -> Callable[[str], list[str]]:
    return re.compile(ascii_pattern(pattern)).findall
