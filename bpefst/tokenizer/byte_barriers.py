"""Bytes that cut a chunk: llama.cpp's reading of a byte missing from the vocabulary.

A byte-level vocabulary may lack some single bytes (SmolLM2 lacks 21: six
control characters and lead bytes no assigned character uses).  BPE
implementations disagree on what such a byte does inside a chunk:

* HF ``tokenizers`` drops it while spelling the chunk, before any merge: the
  bytes on either side become neighbours and may merge (``">\\x16<"`` gives
  the one token ``"><"``);
* llama.cpp keeps it as a symbol of its own, which no merge names, and leaves
  it out only when it writes the ids: no merge can span it, so the bytes on
  either side never merge (``">"`` then ``"<"``).

A symbol that never merges splits the merging into two independent halves (a
merge joins adjacent symbols; neither half ever sees the other), so llama.cpp's
behaviour is exactly: cut the chunk at the byte, drop the byte, run BPE on each
side alone.  A model whose ``missing_bytes`` is ``"split"`` (the GGUF reader
sets it) is encoded that way; the classes here find the cuts.

The cut is a byte-level one: when a lead byte (F1, say) is missing, the
continuation bytes that follow it are not, and they go on merging with what
follows.  Pieces are therefore spelled back as text with ``surrogateescape``
(bytes that are not UTF-8 on their own become lone surrogates, as everywhere
in bpefst), and encode to exactly the bytes they came from.
"""

from __future__ import annotations

import re

_ASCII_END, _CONTINUATION_END = 0x80, 0xC0
# Code points of each UTF-8 length, and the bits of the first byte that are not length marker
_LEAD_RANGES = ((0xC0, 0xE0, 6, 0x80, 0x800), (0xE0, 0xF0, 12, 0x800, 0x10000), (0xF0, 0xF8, 18, 0x10000, 0x110000))
_RAW_BYTE = 0xDC00  # surrogateescape: raw byte b >= 0x80 is the lone surrogate U+DC00 + b


def code_point_ranges(barriers: frozenset[int]) -> list[tuple[int, int]] | None:
    """Inclusive code point ranges whose UTF-8 holds a barrier byte, raw bytes included (as lone surrogates).

    None when a continuation byte (80-BF) is a barrier: it sits inside most
    multi-byte characters, and the ranges would be thousands; the caller then
    looks for the bytes themselves.
    """
    ranges = []
    for byte in sorted(barriers):
        if byte < _ASCII_END:
            ranges.append((byte, byte))
            continue
        if byte < _CONTINUATION_END:
            return None
        ranges.append((_RAW_BYTE + byte, _RAW_BYTE + byte))  # the byte alone, from input that is not UTF-8
        for first, end, shift, lowest, limit in _LEAD_RANGES:
            if first <= byte < end:  # every character this byte starts, without overlong or out-of-range forms
                low, high = max((byte - first) << shift, lowest), min((byte - first + 1) << shift, limit) - 1
                if low <= high:
                    ranges.append((low, high))
    return ranges


def _char_class(ranges: list[tuple[int, int]]) -> str:
    return "[" + "".join(re.escape(chr(low)) + ("-" + re.escape(chr(high)) if high > low else "") for low, high in ranges) + "]"


class ByteBarriers:
    """The barrier bytes of one model: does a text hold one, and a chunk's pieces between them."""

    def __init__(self, barriers: frozenset[int]):
        self.barriers = frozenset(barriers)
        byte_class = b"[" + b"".join(re.escape(bytes([b])) for b in sorted(self.barriers)) + b"]"
        self._bytes = re.compile(byte_class if self.barriers else b"(?!)")
        ranges = code_point_ranges(self.barriers)
        # (a barrier ED would also flag the lone surrogates that stand for raw bytes: a false alarm
        # costs the exact byte-level cut in pieces(), which then finds nothing to cut)
        self._text = re.compile(_char_class(ranges) if ranges else "(?!)") if ranges is not None else None

    def in_text(self, text: str) -> bool:
        """Whether ``text`` (lone surrogates standing for raw bytes) holds a barrier byte.

        A search for the characters themselves, without encoding the text,
        where the barriers allow (see :func:`code_point_ranges`).
        """
        if self._text is not None:
            return self._text.search(text) is not None
        return self._bytes.search(text.encode("utf-8", errors="surrogateescape")) is not None

    def pieces(self, chunk: str) -> list[str]:
        """``chunk`` cut at its barrier bytes, which are left out; empty pieces are left out too."""
        data = chunk.encode("utf-8", errors="surrogateescape")
        return [piece.decode("utf-8", errors="surrogateescape") for piece in self._bytes.split(data) if piece]
