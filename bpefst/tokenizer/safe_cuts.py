"""Where text may be cut without changing its pre-tokenization.

Streaming tokenization, parallel tokenization and the ASCII fast path of
:mod:`bpefst.tokenizer.splitter` all cut text into pieces and pre-tokenize each
piece on its own.  That is exact only at positions where no match of the
pattern can continue across the cut and where the matches before the cut do
not depend on the text after it.  This module knows such positions for the
presets; everything else is never cut.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import regex

from .pretokenize import PRESETS

_WS = regex.compile(r"\s")


def cut_rule_for(pattern: str | None, specials: dict[str, int]) -> str | None:
    """How text may be cut without changing its pre-tokenization.

    * ``"newline"`` (cl100k): after a ``\\n`` that is followed by a
      non-whitespace character.  In this pattern no match continues past a line
      break into a non-space (the letter, number and punctuation alternatives
      exclude ``\\r\\n`` before their body and stop at them after), and the
      whitespace run before the cut matches the same way whether or not the text
      ends there (``\\s++$`` at the end of a piece and ``\\s*[\\r\\n]`` in the
      whole text both take the entire run, which ends in a line break).
    * ``"newline-not-slash"`` (o200k): the same, except before a ``/``: o200k's
      punctuation alternative `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*`` runs on across
      line breaks into slashes (``"%\\n/"`` is one chunk).
    * ``"single-newline"`` (gpt2, whitespace): after a lone ``\\n`` between two
      non-whitespace characters (GPT-2's ``\\s+(?!\\S)`` splits a longer
      whitespace run differently when text follows).
    * None (no pre-tokenization, a custom pattern, whose matches may run across
      line breaks, or a special token containing a line break): never cut; the
      text between special tokens is pre-tokenized whole.
    """
    if pattern is None or pattern not in PRESETS.values() or any("\n" in s or "\r" in s for s in specials):
        return None
    if pattern == PRESETS["cl100k"]:
        return "newline"
    if pattern == PRESETS["o200k"]:
        return "newline-not-slash"
    return "single-newline"


def safe_cut(text: str, rule: str | None, lo: int, hi: int, forward: bool = False) -> int | None:
    """A position ``c`` in ``[lo, hi)`` where ``text`` may be cut under ``rule``, or None.

    The last such position (the first with ``forward``).  ``text[c]`` must exist
    (the character after the cut is what makes it safe).
    """
    if rule is None:
        return None
    hi = min(hi, len(text) - 1)
    ws = _WS.match
    if forward:
        c = lo
        while c <= hi:
            k = text.find("\n", max(c - 1, 0), hi)
            if k < 0:
                return None
            if _ok(text, k, rule, ws):
                return k + 1
            c = k + 2
        return None
    end = hi
    while end > lo:
        k = text.rfind("\n", max(lo - 1, 0), end)
        if k < 0:
            return None
        if _ok(text, k, rule, ws):
            return k + 1
        end = k
    return None


def _ok(text: str, k: int, rule: str, ws) -> bool:
    """Is the cut right after the line feed at ``k`` safe?"""
    if k + 1 >= len(text) or ws(text[k + 1]):
        return False
    if rule == "newline":
        return True
    if rule == "newline-not-slash":
        return text[k + 1] != "/"
    return k == 0 or not ws(text[k - 1])


# -- cuts inside a line --------------------------------------------------------------
#
# A line of prose can be megabytes long (a minified file, a log without line
# breaks); cutting only at line breaks then buffers the whole line.  For the
# GPT-2, cl100k and o200k patterns a cut is also safe between two characters
# ``x = text[c-1]`` and ``y = text[c]`` when the match holding ``x`` cannot take
# ``y`` and the match starting at ``y`` does not depend on ``x``:
#
# * ``x`` not whitespace, ``y`` whitespace other than ``\r``/``\n``.  Every
#   alternative that has consumed a non-space character continues only with
#   letters, numbers, punctuation, an apostrophe's contraction letters, or
#   (cl100k, o200k) line breaks and slashes: never with such a space, and never
#   with the end of the text either, so the matches before ``c`` are the same
#   whether the text ends at ``c`` or goes on.  No alternative looks behind, so
#   the matches from ``c`` on are those of ``text[c:]``.
# * a change between the classes letter, number and punctuation (not the
#   apostrophe, marks or ``/``: o200k takes marks into words and punctuation
#   runs alike), except punctuation before a letter
#   (`` ?\p{L}`` and ``[^\r\n\p{L}\p{N}]?\p{L}`` take one punctuation character
#   as a prefix of a word).  Runs of one class stop at another class, and the
#   number alternatives (``\p{N}{1,3}``) start at the first digit of a run.
#
# The rules are checked against ``regex.findall`` on every string of class
# representatives up to length 4 and thousands of random longer ones
# (tests/test_stream_memory.py; up to length 5 and 200,000 random strings when
# they were written).

INLINE_KINDS = ("gpt2", "cl100k", "o200k")

_L = r"\p{L}"
_N = r"\p{N}"
_P = r"[^\s\p{L}\p{N}\p{M}'/]"


def _inline_regex() -> regex.Pattern:
    pairs = [(r"\S", r"[^\S\r\n]"), (_L, _N), (_N, _L), (_N, _P), (_P, _N), (_L, _P)]
    return regex.compile("(?r)" + "|".join(f"(?<={x})(?={y})" for x, y in pairs))


_INLINE = _inline_regex()  # the same pairs for the three presets


def inline_kind(pattern: str | None) -> str | None:
    """Which preset ``pattern`` is, when cuts inside lines are known for it (else None)."""
    for name in INLINE_KINDS:
        if pattern == PRESETS[name]:
            return name
    return None


def inline_cut(text: str, kind: str | None, lo: int, hi: int) -> int | None:
    """The last position ``c`` in ``[lo, hi)``, ``c >= 1``, where ``text`` may be cut inside a line (see above)."""
    if kind is None:
        return None
    hi = min(hi, len(text))
    lo = max(lo, 1)
    if hi <= lo:
        return None
    found = _INLINE.search(text, lo - 1, hi)
    return found.start() if found is not None else None


# -- matches decided by a prefix -----------------------------------------------------
#
# Where no cut of the rules above exists (a megabyte of digits, of ``'s's's``)
# the matches themselves tell: ``findall`` over a prefix ``A`` of the text
# gives, for each match, the attempt the regex engine made at its start.  That
# attempt read the match, at most three characters after it (an apostrophe's
# contraction, o200k's optional ``'ll`` suffix), the run of letters and marks
# that follows (o200k's ``[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*`` reads the whole
# run of upper-case-class letters before giving some back: in ``ʰAAAAs`` the
# first chunk is all of it, in ``ʰAAAA`` only ``ʰ``) and, when the match is all
# whitespace, the whole run of whitespace (``\s+(?!\S)``, ``\s*[\r\n]`` and
# ``\s++$`` all look at its end).  If all it read lies inside ``A`` it makes the
# same choice in every text that starts with ``A``.

LOOKAHEAD = 4
_NON_SPACE = regex.compile(r"\S")
_LAST_NOT_WORD = regex.compile(r"(?r)[^\p{L}\p{M}]")
_LAST_NON_SPACE = regex.compile(r"(?r)\S")


def decided_matches(text: str, matches: Iterable[regex.Match]) -> Iterator[regex.Match]:
    """The leading ``matches`` (a scan of ``text``) that no continuation of ``text`` changes.

    With ``n = len(text)``, a match ending at ``e`` is decided when
    ``e + LOOKAHEAD <= n``, when the run of letters and marks from ``e`` ends
    at least :data:`LOOKAHEAD` characters before ``n`` (both hold for every
    ``e`` up to ``bound``) and, for a match of whitespace only, when some
    non-whitespace character follows.  Matches after one that is not decided
    are not either.
    """
    n = len(text)
    bound = n - LOOKAHEAD
    not_word = _LAST_NOT_WORD.search(text, 0, bound + 1) if bound >= 0 else None
    bound = min(bound, not_word.start()) if not_word is not None else -1
    last_text = _LAST_NON_SPACE.search(text)
    last_text = last_text.start() if last_text is not None else -1  # the last non-whitespace character
    for match in matches:
        start, stop = match.span()
        if stop > bound:
            return
        if stop > last_text and _NON_SPACE.search(text, start, stop) is None:
            return  # a whitespace alternative read the whole run, which reaches the end of the text
        yield match


def decided_end(text: str, matches: Iterable[regex.Match]) -> int:
    """The end of the last of :func:`decided_matches`, or 0."""
    end = 0
    for match in decided_matches(text, matches):
        end = match.end()
    return end
