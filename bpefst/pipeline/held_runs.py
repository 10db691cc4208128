"""Whitespace after a line break, whose chunk is not decided yet, held as counts.

In the cl100k and o200k patterns a chunk of whitespace that contains a line
break ends at the *last* line break of its whitespace run (cl100k's
``\\s*[\\r\\n]``, o200k's ``\\s*[\\r\\n]+``), or, with cl100k, at the end of the
text when the run reaches it (``\\s++$``).  So after ``"a\\n"`` and a megabyte of
spaces, the chunk of the line break

* takes the spaces if a line break follows them (``"\\n" + spaces + "\\n"`` is
  one chunk);
* cl100k: takes them if the text ends there, or a special token starts there
  (the text before a special is pre-tokenized on its own);
* otherwise (a character that is not whitespace follows; o200k at the end)
  ends at the line break, and the spaces are chunks of their own
  (``\\s+(?!\\S)``, then the last space before a word goes with the word).

:func:`joins_line_break` states these rules.  None of them applies before the
run ends, and no token can be written before then either: the outcomes differ
from the first token (``"\\n"``, twenty spaces and ``"\\n"`` is one token of
cl100k and of o200k), and tokens are written in order (encoding both outcomes
meanwhile would only keep two lists of tokens that grow with the run).  So the
run itself must be remembered; but not as text.  :class:`HeldRun` keeps it as
(character, count) pairs, twelve bytes for a run of one character whatever its
length.  When the run ends, the encoder applies the rule and regenerates the
run in pieces (:meth:`HeldRun.pieces`): into the long chunk of the line break
(:class:`~.long_chunks.LongChunk`), or as ordinary text, which the encoder
streams as one long chunk of whitespace without a line break (its end is
settled by :func:`~.long_chunks.settled_end`).

Whitespace mixed in short runs (``" \\t \\t"``) costs twelve bytes per run,
about what the text would: every token written later depends on all of it,
and an arbitrary mix has no much shorter description.

Where the held whitespace begins (:func:`held_start`): the encoder's text is a
whitespace chunk in progress that holds a line break; the whitespace after its
last line break (no line break in it, so the chunk can only take all of it or
none) is held once it is long.
"""

from __future__ import annotations

from array import array
from functools import lru_cache
from typing import Iterator

import regex

_SPACE = regex.compile(r"[^\S\r\n]")  # whitespace that is not a line break
_NON_SPACE = regex.compile(r"\S")
_LAST_LINE_BREAK = regex.compile(r"(?r)[\r\n]")
_KINDS = ("cl100k", "o200k")  # the patterns whose line-break chunks behave as described above


def held_start(text: str, kind: str | None, least: int) -> int | None:
    """Where to start holding ``text``: after its last line break, if ``text`` is all whitespace
    and at least ``least`` characters follow that line break; else None.

    ``text`` starts a chunk, or lies inside a chunk in progress (the encoder's
    buffer after its decided matches, or that of a long chunk, which starts
    with an overlap of fed text).  All whitespace and holding a line break, that
    chunk reaches the last line break (``\\s*[\\r\\n]`` ends at the last line
    break of a whitespace run, ``\\s++$`` at its end) and takes either all of
    the whitespace after it or none (:func:`joins_line_break`).
    """
    if kind not in _KINDS or len(text) < least + 1 or _NON_SPACE.search(text) is not None:
        return None
    line_break = _LAST_LINE_BREAK.search(text)
    if line_break is None or len(text) - line_break.end() < least:
        return None
    return line_break.end()


def joins_line_break(kind: str, after: str) -> bool:
    """Does held whitespace belong to the chunk of the line break before it?

    ``after`` is the character after the whitespace; ``""`` at the end of the
    text or before a special token.  See the module docstring.
    """
    if not after:
        return kind == "cl100k"  # \s++$; o200k has no such alternative
    return after in "\r\n"


@lru_cache(maxsize=64)
def _run_of(char: str) -> regex.Pattern:
    # "c+" runs in constant memory; "(\s)\1*" would keep about 100 bytes per character
    return regex.compile(regex.escape(char) + "+")


class HeldRun:
    """Whitespace without line breaks as (character, count) runs, and the text after it.

    ``add`` takes text as it arrives: whitespace that continues the run is
    counted, anything from the first other character on is kept in ``after``
    (the encoder decides the run from its first character, or waits while it
    may still start a special token).
    """

    def __init__(self) -> None:
        self._chars = array("I")  # the code point of each run
        self._counts = array("Q")  # its length
        self.length = 0  # characters held in runs
        self.after = ""  # the text after the run (it has ended when this is not empty)

    def add(self, text: str) -> None:
        if self.after:
            self.after += text
            return
        at = 0
        while _SPACE.match(text, at) is not None:
            char = text[at]
            stop = _run_of(char).match(text, at).end()
            self._count(char, stop - at)
            at = stop
        self.after = text[at:]

    def _count(self, char: str, count: int) -> None:
        code = ord(char)
        if self._chars and self._chars[-1] == code:
            self._counts[-1] += count
        else:
            self._chars.append(code)
            self._counts.append(count)
        self.length += count

    def pieces(self, size: int) -> Iterator[str]:
        """The held whitespace as text, in pieces of at most ``size`` characters."""
        parts: list[str] = []
        filled = 0
        for code, count in zip(self._chars, self._counts):
            char = chr(code)
            while count:
                take = min(count, size - filled)
                parts.append(char * take)
                filled += take
                count -= take
                if filled == size:
                    yield "".join(parts)
                    parts, filled = [], 0
        if parts:
            yield "".join(parts)

    def tail(self, size: int) -> str:
        """The last ``size`` characters of the held whitespace (all of it if shorter)."""
        parts: list[str] = []
        for code, count in zip(reversed(self._chars), reversed(self._counts)):
            take = min(count, size)
            parts.append(chr(code) * take)
            size -= take
            if not size:
                break
        return "".join(reversed(parts))
