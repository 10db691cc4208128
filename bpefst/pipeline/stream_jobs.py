"""Tokenizing one byte stream in ``jobs`` worker processes: ``bpefst tokenize --jobs J``.

The parent only moves bytes, so that the workers get the cores:

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
"""

from __future__ import annotations

import os
import struct
import threading
from typing import BinaryIO, Callable

from ..errors import BpefstError, DisallowedSpecialError
from ..tokenizer.reference import decode_input
from ..tokenizer.safe_cuts import _WS
from .encoder import Tokenizer
from .forking import TaskSource, map_ordered

PIECE_BYTES = 1 << 20  # a few hundred milliseconds of work: hand-over costs vanish, the last piece's wait is short
READ_BYTES = 1 << 20
BUFFERED_PIECES = 4  # the reader runs at most this many pieces ahead of the workers
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
    """

    def __init__(self, stream: BinaryIO, rule: str | None, piece_size: int = PIECE_BYTES):
        self.stream, self.rule, self.piece_size = stream, rule, piece_size
        self.wake_fd, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._buffer = bytearray()
        self._offset = 0  # byte offset of the buffer's start in the input
        self._scanned = 0  # no cut at a position below this one in the buffer
        self._eof = False
        self._error: BaseException | None = None
        self._room = threading.Condition()
        self._thread: threading.Thread | None = None

    def take(self) -> bytes | None:
        if self._thread is None:
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
        return len(self._buffer) >= BUFFERED_PIECES * self.piece_size and self._scanned < len(self._buffer)

    def _read(self) -> None:
        read = getattr(self.stream, "read1", None) or self.stream.read
        try:
            while True:
                with self._room:
                    while self._full():
                        self._room.wait()
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
        for fd in (self.wake_fd, self._wake_write):
            try:
                os.close(fd)
            except OSError:
                pass


def piece_handler(tokenizer: Tokenizer, fmt: str, allowed: frozenset, disallowed: frozenset) -> Callable[[bytes], bytes]:
    """What a worker does with one task: decode, encode, format; result ``characters (or lines) + bytes``."""
    from .tokenize import format_ids

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
    from .tokenize import _split_lines

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


def tokenize_stream_jobs(tokenizer: Tokenizer, stream: BinaryIO, write: Callable[[bytes], None], flush: Callable[[], None],
                         fmt: str, allowed: frozenset, disallowed: frozenset, jobs: int,
                         piece_size: int = PIECE_BYTES) -> None:
    """Tokenize ``stream`` in ``jobs`` workers; ``write`` gets each piece's formatted bytes, in order."""
    rule = "line" if fmt == "jsonl" else tokenizer.cut_rule
    tokenizer._build_tables()  # once, before the fork, instead of once per worker
    reader = PieceReader(stream, rule, piece_size)
    before = 0  # characters (lines for jsonl) of the pieces written so far
    results = map_ordered(piece_handler(tokenizer, fmt, allowed, disallowed), reader, jobs)
    try:
        for result in results:
            before += _OFFSET.unpack_from(result)[0]
            write(memoryview(result)[_OFFSET.size :])
            flush()
    except DisallowedSpecialError as exc:
        raise DisallowedSpecialError(exc.token, before + exc.position) from None
    except _LineError as exc:
        raise BpefstError(f"line {before + exc.line + 1}: {exc.reason}") from None
    finally:
        results.close()
        reader.close()
