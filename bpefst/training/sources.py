"""Reading a training corpus: checked sources, streamed in blocks cut at safe places.

A block boundary must not change what pre-tokenization sees, so blocks are cut
only where splitting the text cannot change the chunks (003, "Parallelizing the
counts", cuts at special tokens; we add newline and space cuts so that corpora
without special tokens still stream):

* at the start of a special token occurrence (special tokens are split off
  before pre-tokenization, so the text on either side is pre-tokenized
  independently anyway);
* after a newline that follows a character other than whitespace and precedes
  a letter or digit of any script (``x\\ny``): no match of the gpt2, cl100k,
  o200k or whitespace patterns crosses such a newline, and the newline forms
  the same chunk whether the text goes on or ends there.  With ``line_mode`` (HF's
  trainer, which pre-tokenizes each line on its own) any newline will do;
* failing both, before a space that follows a printable ASCII character and
  precedes an ASCII letter (``x yz``), where every preset starts a new chunk.

No cut falls inside a special token occurrence, and every cut is next to a
newline, a space or the start of a special token, so none falls inside a UTF-8
sequence.  A region with no safe cut
is read whole, so memory is bounded by the longest such region (in practice a
block) plus the distinct chunks, not by the corpus.  Custom patterns whose
matches can span these cuts may see slightly different chunks at block
boundaries.

For distributed counting (:mod:`bpefst.distributed`) a file is split into
byte ranges planned without reading it (:func:`split_ranges`); the worker given
``[start, end)`` reads from the first safe cut at or after ``start`` to the first
safe cut at or after ``end`` (:meth:`BlockCutter.first_cut`).  Whether a
position is a safe cut depends only on the bytes within a few dozen of it, so
both neighbours find the same cut: every byte is read by exactly one worker,
whatever the split size (the way Hadoop splits line-oriented files).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO, Iterator, Sequence

import regex

from ..errors import BpefstError
from ..pipeline.inputs import open_input

STDIN = "-"


@dataclass(frozen=True)
class Source:
    """One corpus input: a checked file path, or stdin (``path`` is ``-``)."""

    path: str
    size: int | None

    @property
    def name(self) -> str:
        return "<stdin>" if self.path == STDIN else self.path


def check_sources(paths: Sequence[str]) -> list[Source]:
    """Validate every input before any work: missing, unreadable, directories."""
    if not paths:
        raise BpefstError("no corpus given")
    sources = []
    for path in paths:
        path = os.fspath(path)
        if path == STDIN:
            sources.append(Source(STDIN, None))
            continue
        if os.path.isdir(path):
            raise BpefstError(f"{path} is a directory, not a file")
        with open_input(path) as handle:  # refuses unreadable and non-text containers (zip, 7z) up front
            # a compressed file's size on disk is not the size of its text: no total for the progress display
            size = os.path.getsize(path) if handle.compression is None else None
        sources.append(Source(path, size))
    return sources


@dataclass(frozen=True)
class ByteRange:
    """Part ``index`` of a split corpus: the text from the first safe cut at or after
    ``start`` to the first safe cut at or after ``end`` of file ``path`` (``size`` bytes).

    A compressed file cannot be entered in the middle: it is one range, read
    whole and decompressed (``size`` None).
    """

    index: int
    path: str
    start: int
    end: int
    size: int | None


def split_ranges(sources: Sequence[Source], split_size: int) -> list[ByteRange]:
    """Nominal ranges of about ``split_size`` bytes over the files, in order (stdin cannot be split)."""
    if split_size < 1:
        raise BpefstError(f"the split size must be positive, not {split_size}")
    ranges: list[ByteRange] = []
    for source in sources:
        if source.path == STDIN:
            raise BpefstError("stdin cannot be read by other machines; give the corpus as files")
        if source.size is None:  # compressed
            ranges.append(ByteRange(len(ranges), source.path, 0, 0, None))
            continue
        for start in range(0, max(source.size, 1), split_size):
            ranges.append(ByteRange(len(ranges), source.path, start, min(start + split_size, source.size), source.size))
    return ranges


class BlockCutter:
    """Finds the last safe cut in a buffer (see the module docstring)."""

    _SPACE_CUT = regex.compile(rb"[!-~](?= [A-Za-z])")
    _WHITESPACE = regex.compile(r"\s")
    _WORD_START = regex.compile(r"[\p{L}\p{N}]")
    _MAX_NEWLINES = 4096  # newlines tried per call, so that a run of blank lines stays linear
    _SPACE_WINDOW = 1 << 20

    def __init__(self, specials: Sequence[str], line_mode: bool, pretokenized: bool = True):
        self.specials = [s.encode("utf-8") for s in specials]
        self.line_mode = line_mode
        # Without a pre-tokenization pattern the whole text between special tokens is one chunk
        # (one line, with line_mode): only special tokens (and line ends) are safe cuts then.
        self.pretokenized = pretokenized
        self._candidate_re = None

    def __call__(self, buf: bytes | bytearray, start: int = 0) -> int:
        """A position 0 < cut <= len(buf), or 0 when there is none.

        Cuts before ``start`` are not looked for (the caller has already found
        none there), which keeps a long region without cuts linear.
        """
        start = max(0, start - 8)
        special = self._special_cut(buf, start)
        if not self.pretokenized and not self.line_mode:
            return special
        cut = self._newline_cut(buf, start) or (self._space_cut(buf, start) if self.pretokenized else 0)
        if cut > special and not self._straddles(buf, cut):
            return cut
        return special

    def first_cut(self, handle: BinaryIO, position: int, size: int, window: int = 1 << 16) -> int:
        """The first safe cut at or after ``position`` in a file of ``size`` bytes (``size`` when none).

        A function of the file's bytes and ``position`` alone: each candidate is
        judged on a fixed neighbourhood (:attr:`context` bytes each side), read
        whole before it is judged, so two workers asking about the same
        position agree, and ``first_cut`` is monotone in ``position``.
        """
        if position <= 0:
            return 0
        context = self.context
        low = position
        while low < size:
            begin = max(0, low - context)
            handle.seek(begin)
            buf = handle.read(min(window + 2 * context, size - begin))
            if not buf:
                break
            top = begin + len(buf)
            last = top if top >= size else top - context  # candidates with their whole neighbourhood in buf
            for match in self._candidates.finditer(buf, low - begin):
                cut = begin + match.start()
                if cut > last:
                    break
                if cut >= size or self._is_safe(buf, cut - begin):
                    return cut
            low = last + 1
        return size

    @property
    def context(self) -> int:
        return max([len(s) for s in self.specials] + [0]) + 8

    @property
    def _candidates(self) -> "regex.Pattern[bytes]":
        if self._candidate_re is None:
            alternatives = [rb"(?<=\n)", rb"(?= [A-Za-z])"] + [b"(?=" + regex.escape(s) + b")" for s in self.specials]
            self._candidate_re = regex.compile(b"|".join(alternatives))
        return self._candidate_re

    def _is_safe(self, buf: bytes, cut: int) -> bool:
        """Whether ``cut`` is a safe place by any of the module docstring's rules."""
        if self._straddles(buf, cut):
            return False
        if any(buf.startswith(s, cut) for s in self.specials):
            return True
        if not self.pretokenized and not self.line_mode:
            return False
        if cut > 0 and buf[cut - 1] == 0x0A and (self.line_mode or self._newline_is_safe(buf, cut - 1)):
            return True
        return self.pretokenized and cut > 0 and self._SPACE_CUT.match(buf, cut - 1) is not None

    def _special_cut(self, buf: bytes | bytearray, start: int) -> int:
        starts = [buf.rfind(s, max(0, start - len(s))) for s in self.specials]
        cut = max(starts, default=-1)
        return cut if cut > 0 and not self._straddles(buf, cut) else 0

    def _newline_cut(self, buf: bytes | bytearray, start: int) -> int:
        end = len(buf)
        for _ in range(self._MAX_NEWLINES):
            position = buf.rfind(b"\n", start, end)
            if position < 0:
                return 0
            if self.line_mode or self._newline_is_safe(buf, position):
                return position + 1
            end = position
        return 0

    def _newline_is_safe(self, buf: bytes | bytearray, position: int) -> bool:
        """Non-whitespace before the newline, a letter or digit (any script) after it."""
        if position == 0 or position + 1 >= len(buf):
            return False
        before = bytes(buf[max(0, position - 4) : position]).decode("utf-8", "surrogateescape")[-1]
        after = bytes(buf[position + 1 : position + 5]).decode("utf-8", "surrogateescape")[0]
        return not self._WHITESPACE.match(before) and self._WORD_START.match(after) is not None

    def _space_cut(self, buf: bytes | bytearray, start: int) -> int:
        last = None
        for last in self._SPACE_CUT.finditer(buf, max(start, len(buf) - self._SPACE_WINDOW)):
            pass
        return last.end() if last is not None else 0

    def _straddles(self, buf: bytes | bytearray, cut: int) -> bool:
        """Whether some special token occurrence covers both sides of ``cut``."""
        for special in self.specials:
            for start in range(max(0, cut - len(special) + 1), cut):
                if buf.startswith(special, start):
                    return True
        return False


def iter_blocks(source: Source, cutter: BlockCutter, block_size: int) -> Iterator[tuple[int, bytes]]:
    """``(offset, data)`` blocks of about ``block_size`` bytes, cut safely."""
    with _open(source) as handle:
        yield from _blocks(handle, source, cutter, block_size, 0, None)


def iter_range_blocks(part: ByteRange, cutter: BlockCutter, block_size: int) -> Iterator[tuple[int, bytes]]:
    """The blocks of one range of a split file (see :class:`ByteRange`), cut safely."""
    source = Source(part.path, part.size)
    if part.size is None:
        with _open(source) as stream:
            yield from _blocks(stream, source, cutter, block_size, 0, None)
        return
    try:
        handle = open(part.path, "rb")
    except OSError as exc:
        raise BpefstError(f"cannot read {part.path}: {exc.strerror or exc}") from None
    with handle:
        try:
            start = cutter.first_cut(handle, part.start, part.size)
            end = cutter.first_cut(handle, part.end, part.size) if part.end < part.size else part.size
            handle.seek(start)
        except OSError as exc:
            raise BpefstError(f"cannot read {part.path}: {exc.strerror or exc}") from None
        if end > start:
            yield from _blocks(handle, source, cutter, block_size, start, end - start)


def _blocks(
    handle: BinaryIO, source: Source, cutter: BlockCutter, block_size: int, offset: int, limit: int | None
) -> Iterator[tuple[int, bytes]]:
    """Blocks from the handle's position, at most ``limit`` bytes in all (None: to the end)."""
    buf = bytearray()
    searched = 0  # no cut before this position of buf
    while True:
        want = block_size if limit is None else min(block_size, limit)
        data = _read(handle, source, want) if want > 0 else b""
        if not data:
            break
        if limit is not None:
            limit -= len(data)
        buf += data
        cut = cutter(buf, searched)
        if cut <= 0:
            searched = len(buf)
            continue
        yield offset, bytes(buf[:cut])
        del buf[:cut]
        offset += cut
        searched = 0
    if buf:
        yield offset, bytes(buf)


def _open(source: Source) -> BinaryIO:
    """The source's text as bytes: gzip, bzip2, xz and zstd are decompressed as they are read (by magic bytes)."""
    return open_input(source.path, "a corpus")


def _read(handle: BinaryIO, source: Source, size: int) -> bytes:
    try:
        return handle.read(size)
    except OSError as exc:
        raise BpefstError(f"cannot read {source.name}: {exc.strerror or exc}") from None
