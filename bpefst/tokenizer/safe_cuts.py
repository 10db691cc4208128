"""Where text may be cut without changing its pre-tokenization.

Streaming tokenization, parallel tokenization and the ASCII fast path of
:mod:`bpefst.tokenizer.splitter` all cut text into pieces and pre-tokenize each
piece on its own.  That is exact only at positions where no match of the
pattern can continue across the cut and where the matches before the cut do
not depend on the text after it.  This module knows such positions for the
presets; everything else is never cut.
"""

from __future__ import annotations

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
