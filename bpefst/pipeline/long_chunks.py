"""Chunks too long to hold: fifty megabytes of spaces, or of one letter, are one chunk.

Streaming tokenization cuts text between chunks (:mod:`..tokenizer.safe_cuts`),
but a single pre-tokenization chunk can be as long as the input.  BPE of a
chunk is the output of the subsequential transducer of :mod:`..bpe.transducer`
run over its bytes, and a subsequential transducer's output along its arcs is
final: only the output owed to the current state (its pending symbols, at most
the output delay, a few dozen bytes) waits for the end.  So a long chunk is fed
to a :class:`~..bpe.transducer.TransducerRun` piece by piece as the text
arrives, and its decided tokens are written at once; memory holds the state,
not the chunk.

The difficulty is knowing, before the chunk ends, which text belongs to it.
For the GPT-2, cl100k and o200k patterns a long chunk is a run of one class
(letters, punctuation, whitespace, GPT-2's digits) after at most one prefix
character, and :func:`settled_end` gives a prefix of the text that the chunk
surely covers whatever follows:

* a letter, digit or punctuation run only grows as text arrives (greedy or
  possessive repetition; an earlier alternative that failed on the prefix,
  such as a contraction, fails on every continuation) -- all but the last
  character, kept back for o200k's optional ``'s`` suffix and cl100k's
  ``[\\r\\n]*`` after punctuation;
* a whitespace run: GPT-2's ``\\s+(?!\\S)`` gives all but its last character
  to the chunk; cl100k's ``\\s*[\\r\\n]`` and o200k's ``\\s*[\\r\\n]+`` end the
  chunk at the run's *last* line break, so beyond a line break only the text up
  to it is settled (whitespace after the last line break, longer than the
  limit, is held as counts until it ends: :mod:`.held_runs`).

The rest of the chunk is found by matching the pattern again on the unfed text
preceded by a few already fed characters of the same class (the *overlap*): in
a run of one class, the match from inside the run ends where the match from its
start does (tests/test_stream_memory.py checks it against ``regex.findall`` on
random text with tiny limits).
"""

from __future__ import annotations

import regex

from ..tokenizer.reference import encode_text

OVERLAP = 8  # already fed characters kept before the unfed text of a long chunk

_CLASSES = {
    "L": regex.compile(r"\p{L}"),
    "N": regex.compile(r"\p{N}"),
    "P": regex.compile(r"[^\s\p{L}\p{N}\p{M}'/]"),
    "S": regex.compile(r"\s"),
}
_RUN_END = {
    "L": regex.compile(r"\P{L}"),
    "N": regex.compile(r"\P{N}"),
    "P": regex.compile(r"[\s\p{L}\p{N}\p{M}'/]"),
    "S": regex.compile(r"\S"),
}
_LINE_BREAK = regex.compile(r"(?r)[\r\n]")
_RUN_CLASSES = {"gpt2": "LNPS", "cl100k": "LPS", "o200k": "LPS"}


def char_class(ch: str) -> str:
    """``L`` letter, ``N`` number, ``P`` punctuation (not ``'``, ``/`` or a mark), ``S`` whitespace, ``X`` other."""
    for name, pattern in _CLASSES.items():
        if pattern.match(ch):
            return name
    return "X"


def settled_end(kind: str, text: str, match: regex.Match) -> int:
    """How much of ``text`` surely belongs to the chunk ``match`` (the first match of ``text``) starts.

    ``match`` is not decided (it reaches, or nearly reaches, the end of
    ``text``).  Returns 0 when the chunk is not a run of one class.
    """
    stop, n = match.end(), len(text)
    if stop < 2 or match.start() != 0:
        return 0
    body = 0 if char_class(text[0]) == char_class(text[1]) else 1
    run = char_class(text[body])
    if run not in _RUN_CLASSES[kind]:
        return 0
    end = _RUN_END[run].search(text, body)
    end = n if end is None else end.start()
    if run == "S":
        if body or end < n:
            return 0  # a whitespace run followed by text is decided, not settled
        if kind != "gpt2":
            line_break = _LINE_BREAK.search(text)
            if line_break is not None:
                return line_break.end()
        return n - 1
    return min(stop, end, n - 1)


def overlap_start(text: str, lo: int, hi: int) -> int | None:
    """A position ``j`` in ``[lo, hi)`` inside a run of one class (``text[j-1]`` and ``text[j]`` alike)."""
    for j in range(max(lo, 1), hi):
        kind = char_class(text[j])
        if kind != "X" and char_class(text[j - 1]) == kind:
            return j
    return None


class LongChunk:
    """One chunk fed to the transducer piece by piece: ``feed`` returns the tokens decided so far."""

    def __init__(self, transducer):
        self._run = transducer.run()

    def feed(self, text: str) -> list[int]:
        # byte-level models with all 256 byte tokens: a byte's code is the Latin-1 character
        return self._run.feed(encode_text(text).decode("latin-1"))

    def finish(self) -> list[int]:
        return self._run.finish()

    @property
    def pending(self) -> int:
        """Bytes read but not yet decided (held by the transducer's state)."""
        return self._run.pending
