"""Streaming tokenization of a byte stream: read blocks, emit ids as soon as decided.

:func:`tokenize_stream` reads its input in blocks (``read1``: whatever the pipe
has, so a slow producer sees output line by line), decodes UTF-8 incrementally
(byte-level tokenizers take any bytes, carried as lone surrogates exactly like
the reference encoder; character-level ones stop at invalid UTF-8 with the byte
offset), feeds an :class:`~.encoder.IncrementalEncoder` and writes the ids it
returns, flushing after each block.  In one process memory is bounded by the
block size, the chunk cache and the encoder's limits, whatever the length of a
line or of a chunk (:mod:`.incremental`; ``jsonl`` streams a line longer than a
block the same way).

Formats: ``ids`` (space-separated ids on one line, as ``bpefst encode``),
``tokens`` (one JSON string per token), ``msgpack`` (a sequence of msgpack
arrays of ids; their concatenation is the tokenization), ``jsonl`` (every input
line tokenized on its own, without its line break, one JSON array per line, as
``bpefst encode --format jsonl``).

With ``jobs > 1`` (where ``os.fork`` exists) the raw input is cut at safe byte
positions into pieces of about ``piece_size`` bytes that forked worker
processes decode, tokenize and format; this process only reads, cuts and
writes the results in input order (:mod:`.stream_jobs`).  A stretch of more
than ``stretch_size`` bytes without such a position is tokenized here, as one
process does (:func:`stream_ids`, :func:`_stream_lines`), so memory stays
bounded with any number of jobs.
"""

from __future__ import annotations

import codecs
import json
import re
import weakref
from typing import BinaryIO, Callable, Iterable, Iterator

import msgpack

from .. import native
from ..errors import BpefstError
from .encoder import Tokenizer
from .forking import fork_available
from . import encoder as _encoder

FORMATS = ("ids", "jsonl", "tokens", "msgpack")
BLOCK_SIZE = 1 << 20
# One process reads smaller blocks: each block is held as bytes, as text and in
# slices of it while its ids are formatted, and 1 MB blocks cost about 15 MB more
# peak memory on ordinary text (cl100k) for the same speed.
STREAM_BLOCK = 1 << 18
PIECE_SIZE = 1 << 20
STRETCH_SIZE = 4 * PIECE_SIZE  # see stream_jobs.STRETCH_BYTES


class _Decoder:
    """Incremental UTF-8 decoding with the byte offset of the first invalid byte."""

    def __init__(self, byte_level: bool, offset: int = 0):
        self.byte_level = byte_level
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape" if byte_level else "strict")
        self.consumed = offset  # the byte offset of the next block in the input

    def decode(self, data: bytes, final: bool = False) -> str:
        try:
            text = self._decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            held = len(exc.object) - len(data)  # bytes the decoder held back from the previous block
            offset = self.consumed - held + exc.start
            raise BpefstError(f"input is not valid UTF-8 at byte offset {offset}; this character-level tokenizer needs text") from None
        self.consumed += len(data)
        return text


def _blocks(stream: BinaryIO, size: int) -> Iterator[bytes]:
    read = getattr(stream, "read1", None) or stream.read
    while True:
        data = read(size)
        if not data:
            return
        yield data


class _Writer:
    def __init__(self, tokenizer: Tokenizer, out: BinaryIO, fmt: str):
        if fmt not in FORMATS:
            raise BpefstError(f"unknown output format {fmt!r} (expected one of {', '.join(FORMATS)})")
        self.out, self.fmt, self.tokenizer = out, fmt, tokenizer
        self.started = False

    def write_formatted(self, data: bytes) -> None:
        if not data:
            return
        if self.fmt == "ids":
            if self.started:
                self.out.write(b" ")
            self.started = True
        self.out.write(data)

    def write_ids(self, ids) -> None:
        self.write_formatted(format_ids(self.tokenizer, ids, self.fmt))

    write = write_formatted  # a sink of formatted bytes, as the ``--jobs`` workers make them

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        if self.fmt == "ids" and self.started:
            self.out.write(b"\n")
        self.out.flush()


# tokenizer -> {id: its line in the ``tokens`` format}; per tokenizer, since ids mean different tokens in each
_TOKEN_TEXT: "weakref.WeakKeyDictionary[Tokenizer, dict[int, bytes]]" = weakref.WeakKeyDictionary()


def format_ids(tokenizer: Tokenizer, ids, fmt: str) -> bytes:
    """Ids -> output bytes in ``fmt`` (``ids``: no leading separator, no newline)."""
    if not len(ids):
        return b""
    if fmt == "ids":
        if native.core is not None and type(ids) is list:  # noqa: E721 (the core's writer takes lists)
            return native.core.format_ids(ids)
        return " ".join(map(str, ids)).encode("ascii")
    if fmt == "msgpack":
        return msgpack.packb(list(ids))
    if fmt == "tokens":
        known = _TOKEN_TEXT.setdefault(tokenizer, {})
        lines = []
        for token_id in ids:
            line = known.get(token_id)
            if line is None:
                text = tokenizer.decode_bytes([token_id]).decode("utf-8", errors="replace")
                line = known[token_id] = (json.dumps(text, ensure_ascii=False) + "\n").encode("utf-8")
            lines.append(line)
        return b"".join(lines)
    raise BpefstError(f"format {fmt!r} cannot be written as a flat id stream")


def tokenize_stream(tokenizer: Tokenizer, stream: BinaryIO, out: BinaryIO, fmt: str = "ids",
                    allowed_special="none", disallowed_special=(), jobs: int = 1,
                    block_size: int = BLOCK_SIZE, piece_size: int = PIECE_SIZE, stretch_size: int = STRETCH_SIZE) -> None:
    """Tokenize ``stream`` to ``out`` in ``fmt``; see the module docstring."""
    allowed = () if allowed_special == "none" else allowed_special
    policy = tokenizer.special_policy(allowed, disallowed_special)
    writer = _Writer(tokenizer, out, fmt) if fmt != "jsonl" else None
    if jobs > 1 and fork_available():
        from .stream_jobs import tokenize_stream_jobs

        tokenize_stream_jobs(tokenizer, stream, writer if writer is not None else out, fmt, *policy, jobs=jobs,
                             piece_size=piece_size, stretch=stretch_size)
        writer.close() if writer is not None else out.flush()
        return
    # One process (also when os.fork is missing).
    block_size = min(block_size, STREAM_BLOCK)
    if fmt == "jsonl":
        _stream_lines(tokenizer, _blocks(stream, block_size), out, policy, block_size)
        return
    if fmt not in FORMATS:
        raise BpefstError(f"unknown output format {fmt!r}")

    def emit(ids) -> None:
        writer.write_ids(ids)
        out.flush()

    stream_ids(tokenizer, _blocks(stream, block_size), emit, policy)
    writer.close()


def stream_ids(tokenizer: Tokenizer, blocks: Iterable[bytes], emit: Callable[[list[int]], None], policy,
               first_byte: int = 0) -> int:
    """The one-process loop: decode ``blocks`` incrementally, feed the encoder, ``emit`` the ids it decides.

    Returns the number of characters decoded.  ``first_byte`` is the byte offset
    of the first block in the input (for the position of invalid UTF-8); a
    disallowed special token's position counts from the first block.
    """
    decoder = _Decoder(tokenizer.model.is_byte_level, first_byte)
    incremental = _encoder.IncrementalEncoder(tokenizer, *policy)
    incremental.sink = emit  # the ids of a long run of whitespace as they come
    chars = 0
    for block in blocks:
        text = decoder.decode(block)
        chars += len(text)
        ids = incremental.feed(text)
        if ids:
            emit(ids)
    text = decoder.decode(b"", final=True)
    emit(incremental.feed(text) + incremental.finish())
    return chars + len(text)


def _format_lines(tokenizer: Tokenizer, lines: list[bytes], policy, first_line: int) -> bytes:
    from ..tokenizer.reference import decode_input

    parts = []
    for k, line in enumerate(lines):
        try:
            ids = tokenizer._encode_policy(decode_input(line, tokenizer.model.is_byte_level), *policy)
        except BpefstError as exc:
            raise BpefstError(f"line {first_line + k}: {exc}") from None
        parts.append("[" + ", ".join(map(str, ids)) + "]\n")
    return "".join(parts).encode("ascii")


def _split_lines(piece: bytes) -> list[bytes]:
    """The lines ``bytes.splitlines`` gives for one ``\\n``-terminated piece (empty piece: one empty line)."""
    return piece.splitlines() or [b""]


class _LongLine:
    """One ``jsonl`` line longer than a block, tokenized as it arrives: ``[`` ids as decided ``]``."""

    def __init__(self, tokenizer: Tokenizer, out: BinaryIO, policy, number: int):
        self.out, self.number = out, number
        self.encoder = _encoder.IncrementalEncoder(tokenizer, *policy)
        self.decoder = _Decoder(tokenizer.model.is_byte_level)
        self.started = False
        out.write(b"[")

    def feed(self, data: bytes, final: bool = False) -> None:
        try:
            text = self.decoder.decode(data, final)
            ids = self.encoder.feed(text) + (self.encoder.finish() if final else [])
        except BpefstError as exc:
            raise BpefstError(f"line {self.number}: {exc}") from None
        if ids:
            self.out.write(((", " if self.started else "") + ", ".join(map(str, ids))).encode("ascii"))
            self.started = True

    def end(self) -> None:
        self.feed(b"", final=True)
        self.out.write(b"]\n")
        self.out.flush()


def _stream_lines(tokenizer: Tokenizer, blocks: Iterable[bytes], out: BinaryIO, policy, block_size: int,
                  first_line: int = 1) -> int:
    """``jsonl`` in one process, in memory bounded by the block size whatever the line length.

    Lines are those of ``bytes.splitlines`` over the whole input (ends: ``\\n``,
    ``\\r\\n``, ``\\r``).  Lines that end within a block are formatted together as
    before (:func:`_format_lines`); a line still open after a whole block goes to a
    :class:`_LongLine`, which streams it through an incremental encoder.  Messages
    number the lines from ``first_line``; returns the number of lines.
    """
    line_no = 0  # lines written
    tail = b""  # the start of the line in progress (shorter than a block)
    long: _LongLine | None = None
    skip_lf = False  # the last line ended with a \r at the end of a block: a \n next belongs to it

    def emit(lines: list[bytes]) -> None:
        nonlocal line_no
        if lines:
            out.write(_format_lines(tokenizer, lines, policy, first_line + line_no))
            out.flush()
            line_no += len(lines)

    for block in blocks:
        if skip_lf:
            skip_lf = False
            block = block[1:] if block[:1] == b"\n" else block
        if long is not None:
            end = _LINE_END.search(block)
            if end is None:
                long.feed(block)
                continue
            long.feed(block[: end.start()])
            long.end()
            long = None
            line_no += 1
            skip_lf = end.group() == b"\r" and end.end() == len(block)
            block = block[end.end() :]
        data = tail + block
        cut = data.rfind(b"\n")
        if cut >= 0:
            lines = []
            for piece in data[:cut].split(b"\n"):
                lines.extend(_split_lines(piece))
            emit(lines)
            tail = data[cut + 1 :]
        else:
            tail = data
        if len(tail) >= block_size:  # a long line: lines ended by \r before it are complete
            cr = tail.rfind(b"\r")
            if cr >= 0:
                emit(tail[: cr + 1].splitlines())
                skip_lf = cr == len(tail) - 1
                tail = tail[cr + 1 :]
            if tail:
                long = _LongLine(tokenizer, out, policy, first_line + line_no)
                long.feed(tail)
                tail = b""
    if long is not None:
        long.end()
        line_no += 1
    if tail:
        emit(tail.splitlines())
    out.flush()
    return line_no


_LINE_END = re.compile(rb"\r\n|\r|\n")


class FormattedIdSink:
    """A document sink (see :class:`~.datasets.DatasetWriter`) writing ids as text, tokens or msgpack.

    ``ids``: one line of space-separated ids for the whole stream; ``tokens``:
    one JSON string per token; ``msgpack``: msgpack arrays whose concatenation
    is the stream; ``jsonl``: one JSON array per document.
    """

    def __init__(self, tokenizer: Tokenizer, out: BinaryIO, fmt: str):
        self.fmt, self.out = fmt, out
        self._writer = _Writer(tokenizer, out, fmt) if fmt != "jsonl" else None
        self._open = False

    def begin_document(self) -> None:
        if self.fmt == "jsonl":
            self.out.write(b"[")
            self._open = False

    def write(self, ids) -> None:
        if self._writer is not None:
            self._writer.write_ids(ids)
        elif len(ids):
            self.out.write((", " if self._open else "").encode("ascii") + ", ".join(map(str, ids)).encode("ascii"))
            self._open = True

    def end_document(self) -> None:
        if self.fmt == "jsonl":
            self.out.write(b"]\n")

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        else:
            self.out.flush()

    def abort(self) -> None:
        pass
