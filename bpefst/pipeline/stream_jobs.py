"""Tokenizing one byte stream in ``jobs`` workers: ``bpefst tokenize --jobs J``.

Workers are threads of this process when the compiled core scans whole texts
and the output is decimal ids (the core encodes a piece without the GIL, each
call on a chunk cache of its own, and writes the ids in C:
:func:`~.forking.map_in_threads`), else forked processes.  The parent only
moves bytes, so that the workers get the cores:

1. a reader thread reads the input (file, pipe or decompressor) into a buffer;
2. the parent cuts the buffer into pieces of about :data:`PIECE_BYTES` at
   *byte* positions where the text may be cut (:func:`last_byte_cut`), without
   decoding it, and hands the raw pieces to forked workers
   (:func:`~.forking.map_ordered`);
3. each worker decodes its piece, encodes it and formats the ids itself
   (``ids``, ``tokens``, ``msgpack``, or ``jsonl`` line by line);
4. the parent writes the formatted bytes in input order.

Why byte cuts are exact: a cut is made right after a ``\\n`` that is followed
by an ASCII byte that is not whitespace (and, per pattern, not ``/``, or with
a non-whitespace ASCII byte before the ``\\n``, see
:func:`bpefst.tokenizer.safe_cuts.cut_rule_for`).  ASCII bytes are whole
characters in UTF-8 and an incremental decoder holds nothing after one, so
the pieces decode (strictly or with ``surrogateescape``) to exactly the
pieces of the decoded text cut at the same place, and that place satisfies
the text-level rule: the pieces' ids concatenate to the ids of the whole.
The byte rule only accepts a subset of the text rule's cuts (it refuses a
``\\n`` next to a non-ASCII character), which costs nothing but a slightly
longer search.  ``jsonl`` tokenizes every line on its own, so any ``\\n`` cuts.

Messages that name a position (a disallowed special token's character, a
``jsonl`` line number, invalid UTF-8's byte offset) are made in the worker
relative to its piece and moved to the whole input by the parent, which knows
the characters and lines of all earlier pieces because results come in order.

Long stretches without a cut.  A piece ends at a cut, so an input with no cut
for a long stretch (a 200 MB line, 200 MB of spaces) would be buffered whole
here and encoded whole by one worker, which needs about 20 times the piece in
memory (its text, the id objects, the formatted ids).  So no piece is longer
than about :data:`STRETCH_BYTES`: when the buffer holds that many bytes and no
cut, the reader stops, the workers finish the pieces handed out before and
their results are written, and this process tokenizes from there up to the
next cut as one process does (:func:`~.tokenize.stream_ids`, or
:func:`~.tokenize._stream_lines` for ``jsonl``: bounded memory whatever the
stretch), then forks workers again for the rest (:func:`tokenize_stream_jobs`).
The stretch starts at a cut and ends at one, so its ids are those of the whole
input there; positions in messages are shifted as for a piece.  Such input
runs at one process's speed, in one process's memory.
"""

from __future__ import annotations

import os
import struct
import threading
from typing import BinaryIO, Callable, Iterator

from ..errors import BpefstError, DisallowedSpecialError
from ..tokenizer.reference import decode_input
from ..tokenizer.safe_cuts import _WS
from .encoder import Tokenizer
from .forking import TaskSource, close_quietly, map_in_threads, map_ordered
from .tokenize import STREAM_BLOCK, _stream_lines, _split_lines, format_ids, stream_ids

PIECE_BYTES = 1 << 20  # a few hundred milliseconds of work: hand-over costs vanish, the last piece's wait is short
READ_BYTES = 1 << 20
BUFFERED_PIECES = 4  # the reader runs at most this many pieces ahead of the workers
STRETCH_BYTES = 4 * PIECE_BYTES  # a longer stretch without a cut is tokenized by the parent (module docstring)
_OFFSET = struct.Struct("<Q")  # a task starts with its byte offset; a result with its characters (or lines)

# byte -> may it follow the line feed of a cut (ASCII, not whitespace)
_AFTER = bytes(int(b < 0x80 and not _WS.match(chr(b))) for b in range(256))
_AFTER_NOT_SLASH = bytes(ok and b != ord("/") for b, ok in enumerate(_AFTER))


def last_byte_cut(data: bytes | bytearray, rule: str | None, lo: int, hi: int) -> int | None:
    """The last position ``c`` in ``[lo, hi]`` (and below ``len(data)``) where raw input may be cut under ``rule``.

    ``rule`` is a :func:`~bpefst.tokenizer.safe_cuts.cut_rule_for` rule, or
    ``"line"`` (after any ``\\n``, for per-line formats).  See the module docstring.
    """
    if rule is None:
        return None
    end = min(hi, len(data) - 1)  # the cut at c is right after data[c - 1] == "\n" and needs data[c]
    lo = max(lo, 1)
    follows = _AFTER_NOT_SLASH if rule == "newline-not-slash" else _AFTER
    while end >= lo:
        k = data.rfind(b"\n", lo - 1, end)
        if k < 0:
            return None
        if rule == "line" or (follows[data[k + 1]] and (rule != "single-newline" or (k > 0 and _AFTER[data[k - 1]]))):
            return k + 1
        end = k
    return None


def first_byte_cut(data: bytes | bytearray, rule: str | None, lo: int) -> int | None:
    """The first position ``c >= lo`` where raw input may be cut (see :func:`last_byte_cut`)."""
    if rule is None:
        return None
    lo = max(lo, 1)
    while True:
        k = data.find(b"\n", lo - 1, len(data) - 1)
        if k < 0:
            return None
        if last_byte_cut(data, rule, k + 1, k + 1) is not None:
            return k + 1
        lo = k + 2


class PieceReader(TaskSource):
    """Raw input read by a thread, handed out as tasks ``byte offset + piece`` cut at byte cuts.

    ``take`` never waits for the input: it returns the text up to the last cut
    within ``piece_size`` (the first cut beyond it when there is none before),
    or None when no cut has arrived yet, so a slow producer's lines go to the
    workers as they come.  The thread starts on the first ``take``, after the
    workers were forked (a process with threads should not fork).

    The buffer holds at most ``stretch`` bytes (and one read).  Full and
    without a cut, ``take`` ends the tasks and sets ``stretched``; :meth:`stop`
    then hands the buffer over to be tokenized by this process.  ``head`` (taken
    over), ``offset`` and ``eof`` continue an input that was read before.
    """

    def __init__(self, stream: BinaryIO, rule: str | None, piece_size: int = PIECE_BYTES, stretch: int = STRETCH_BYTES,
                 head: bytearray | None = None, offset: int = 0, eof: bool = False):
        self.stream, self.rule, self.piece_size, self.stretch = stream, rule, piece_size, stretch
        self.wake_fd, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._buffer = bytearray() if head is None else head
        self._offset = offset  # byte offset of the buffer's start in the input
        self._scanned = 0  # no cut at a position below this one in the buffer
        self._eof = eof
        self.stretched = False
        self._stopping = False
        self._error: BaseException | None = None
        self._room = threading.Condition()
        self._thread: threading.Thread | None = None

    def take(self) -> bytes | None:
        if self._thread is None and not self._eof:
            self._thread = threading.Thread(target=self._read, name="bpefst-reader", daemon=True)
            self._thread.start()
        with self._room:
            if self._error is not None:
                raise self._error
            buffer = self._buffer
            if not buffer:
                if self._eof:
                    raise StopIteration
                return None
            cut = self._find_cut()
            if cut is None:
                if not self._eof:
                    if len(buffer) >= self.stretch:  # a long stretch without a cut: for this process
                        self.stretched = True
                        raise StopIteration
                    self._room.notify()  # no cut in a full buffer: the reader must read on
                    return None
                cut = len(buffer)
            task = _OFFSET.pack(self._offset) + buffer[:cut]
            del buffer[:cut]
            self._offset += cut
            self._scanned = 0
            self._room.notify()
            return task

    def _find_cut(self) -> int | None:
        buffer, size = self._buffer, self.piece_size
        if self._eof and len(buffer) <= size:
            return len(buffer)
        lo = max(self._scanned, 1)
        cut = last_byte_cut(buffer, self.rule, lo, size)
        if cut is None and len(buffer) > size:
            cut = first_byte_cut(buffer, self.rule, max(lo, size))
        if cut is None:
            self._scanned = len(buffer)  # every position below was refused; the one at the end needs the next byte
        return cut

    def _full(self) -> bool:
        held = len(self._buffer)
        return held >= self.stretch or (held >= BUFFERED_PIECES * self.piece_size and self._scanned < held)

    def stop(self) -> tuple[bytearray, int, bool]:
        """End the reader thread and hand over the input it holds: ``(buffer, its byte offset, end of input reached)``."""
        with self._room:
            self._stopping = True
            self._room.notify()
        if self._thread is not None:
            self._thread.join()  # at most one read in flight, which the caller would have waited for anyway
        if self._error is not None:
            raise self._error
        buffer, self._buffer = self._buffer, bytearray()
        return buffer, self._offset, self._eof

    def _read(self) -> None:
        read = getattr(self.stream, "read1", None) or self.stream.read
        try:
            while True:
                with self._room:
                    while self._full() and not self._stopping:
                        self._room.wait()
                    if self._stopping:
                        return
                data = read(READ_BYTES)
                with self._room:
                    if data:
                        self._buffer += data
                    else:
                        self._eof = True
                self._wake()
                if not data:
                    return
        except BaseException as exc:  # raised by the next take, in the parent's thread
            with self._room:
                self._error = exc
            self._wake()

    def _wake(self) -> None:
        try:
            os.write(self._wake_write, b"!")
        except (BlockingIOError, OSError):
            pass  # a full wake-up pipe wakes the parent all the same

    def close(self) -> None:
        close_quietly(self.wake_fd, self._wake_write)


def piece_handler(tokenizer: Tokenizer, fmt: str, allowed: frozenset, disallowed: frozenset) -> Callable[[bytes], bytes]:
    """What a worker does with one task: decode, encode, format; result ``characters (or lines) + bytes``."""
    byte_level = tokenizer.model.is_byte_level

    def handle(task: bytes) -> bytes:
        offset = _OFFSET.unpack_from(task)[0]
        data = memoryview(task)[_OFFSET.size :]
        if fmt == "jsonl":
            lines, formatted = _encode_lines(tokenizer, bytes(data), allowed, disallowed)
            return _OFFSET.pack(lines) + formatted
        text = _decode(data, byte_level, offset)
        ids = tokenizer._encode_policy(text, allowed, disallowed)
        return _OFFSET.pack(len(text)) + format_ids(tokenizer, ids, fmt)

    return handle


def _decode(data, byte_level: bool, offset: int) -> str:
    """As :class:`.tokenize._Decoder` does for the whole stream; ``offset`` places an invalid byte in the input."""
    try:
        return str(data, "utf-8", "surrogateescape" if byte_level else "strict")
    except UnicodeDecodeError as exc:
        raise BpefstError(f"input is not valid UTF-8 at byte offset {offset + exc.start}; "
                          "this character-level tokenizer needs text") from None


class _LineError(BpefstError):
    """A ``jsonl`` line that failed, numbered within its piece (the parent renumbers it)."""

    def __init__(self, line: int, reason: str):
        super().__init__(line, reason)
        self.line, self.reason = line, reason

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


def _encode_lines(tokenizer: Tokenizer, piece: bytes, allowed: frozenset, disallowed: frozenset) -> tuple[int, bytes]:
    """``jsonl``: every line of the piece (cut as ``_stream_lines`` cuts lines) as one JSON array."""
    if piece.endswith(b"\n"):
        lines = [line for part in piece[:-1].split(b"\n") for line in _split_lines(part)]
    else:  # the input's last line, without a line feed
        lines = piece.splitlines()
    byte_level = tokenizer.model.is_byte_level
    out = []
    for k, line in enumerate(lines):
        try:
            ids = tokenizer._encode_policy(decode_input(line, byte_level), allowed, disallowed)
        except BpefstError as exc:
            raise _LineError(k, str(exc)) from None
        out.append("[" + ", ".join(map(str, ids)) + "]\n")
    return len(lines), "".join(out).encode("ascii")


class StretchReader:
    """The input from a cut up to the next byte cut, as blocks for this process to tokenize.

    Iterating yields ``head`` (the bytes the workers' reader held, without a
    cut; taken over and consumed), then the stream's bytes, in blocks of at
    most ``block`` bytes, and stops at the first byte cut after the start; the
    bytes read beyond it are left in ``rest`` (None when the input ended
    first), ``offset`` being their byte offset in the input.  A cut is decided
    by the bytes around its line feed, so the two bytes yielded last stay in
    view for the search.  Nothing but the head and one read is held.
    """

    def __init__(self, head: bytearray, stream: BinaryIO, eof: bool, rule: str | None, offset: int, block: int = STREAM_BLOCK):
        self._head, self.stream, self.eof, self.rule, self.offset, self.block = head, stream, eof, rule, offset, block
        self.rest: bytearray | None = None

    def __iter__(self) -> Iterator[bytes]:
        read = getattr(self.stream, "read1", None) or self.stream.read
        data, self._head = self._head, bytearray()
        sent, lo = 0, 1  # data[:sent] was yielded; no cut below lo (nor at the start)
        while True:
            cut = first_byte_cut(data, self.rule, lo)
            end = len(data) if cut is None else cut
            for at in range(sent, end, self.block):
                block = bytes(data[at : min(at + self.block, end)])
                self.offset += len(block)
                yield block
            if cut is not None:
                self.rest = data[cut:]
                return
            sent = lo = min(len(data), 2)  # kept for the search: the cut at the end needs the next byte
            del data[: len(data) - sent]
            more = b"" if self.eof else read(READ_BYTES)
            if not more:
                self.eof = True
                return
            data += more


def tokenize_stream_jobs(tokenizer: Tokenizer, stream: BinaryIO, sink, fmt: str, allowed: frozenset, disallowed: frozenset,
                         jobs: int, piece_size: int = PIECE_BYTES, stretch: int = STRETCH_BYTES) -> None:
    """Tokenize ``stream`` in ``jobs`` workers; ``sink.write`` gets the formatted bytes in order, then ``sink.flush``.

    Workers while the input has cuts, this process alone over a stretch of more
    than ``stretch`` bytes without one, workers again after it (module docstring).
    """
    rule = "line" if fmt == "jsonl" else tokenizer.cut_rule
    # With the compiled core scanning whole texts and writing decimal ids, a piece is decoded, encoded and
    # formatted almost entirely without the GIL or in C: threads then beat processes (no fork, no pipes,
    # warm caches).  Other formats and the pure path format or encode in Python: processes.
    threads = tokenizer._native_scans and fmt == "ids"
    if not threads:
        tokenizer._build_tables()  # once, before the fork, instead of once per worker
    handler = piece_handler(tokenizer, fmt, allowed, disallowed)
    done = 0  # characters (lines for jsonl) written so far
    head, offset, eof = None, 0, False  # input read but not yet tokenized, where it starts, whether it is all
    while True:
        reader = PieceReader(stream, rule, piece_size, stretch, head, offset, eof)
        try:
            done = _in_workers(handler, reader, jobs, sink, done, threads)
            if not reader.stretched:
                return
            head, offset, eof = reader.stop()
        finally:
            reader.close()
        stretch_reader = StretchReader(head, stream, eof, rule, offset)
        del head  # the stretch reader consumes it
        done = _in_this_process(tokenizer, stretch_reader, fmt, allowed, disallowed, sink, done)
        if stretch_reader.rest is None:
            return
        head, offset, eof = stretch_reader.rest, stretch_reader.offset, stretch_reader.eof


def _in_workers(handler: Callable[[bytes], bytes], reader: PieceReader, jobs: int, sink, done: int,
                threads: bool = False) -> int:
    """Write the results of ``reader``'s pieces, encoded in ``jobs`` workers (forked processes, or with
    ``threads`` this process's threads); ``done`` counts on from the pieces before."""
    results = (map_in_threads if threads else map_ordered)(handler, reader, jobs)
    try:
        for result in results:
            done += _OFFSET.unpack_from(result)[0]
            sink.write(memoryview(result)[_OFFSET.size :])
            sink.flush()
    except DisallowedSpecialError as exc:
        raise DisallowedSpecialError(exc.token, done + exc.position) from None
    except _LineError as exc:
        raise BpefstError(f"line {done + exc.line + 1}: {exc.reason}") from None
    finally:
        results.close()
    return done


def _in_this_process(tokenizer: Tokenizer, blocks: StretchReader, fmt: str, allowed: frozenset, disallowed: frozenset,
                     sink, done: int) -> int:
    """Tokenize ``blocks`` here, as one process does; ``done`` counts on from the input before them."""
    if fmt == "jsonl":
        return done + _stream_lines(tokenizer, blocks, sink, (allowed, disallowed), blocks.block, first_line=done + 1)

    def emit(ids) -> None:
        sink.write(format_ids(tokenizer, ids, fmt))
        sink.flush()

    try:
        return done + stream_ids(tokenizer, blocks, emit, (allowed, disallowed), first_byte=blocks.offset)
    except DisallowedSpecialError as exc:
        raise DisallowedSpecialError(exc.token, done + exc.position) from None
