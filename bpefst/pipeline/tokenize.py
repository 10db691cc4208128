"""Streaming tokenization of a byte stream: read blocks, emit ids as soon as decided.

:func:`tokenize_stream` reads its input in blocks (``read1``: whatever the pipe
has, so a slow producer sees output line by line), decodes UTF-8 incrementally
(byte-level tokenizers take any bytes, carried as lone surrogates exactly like
the reference encoder; character-level ones stop at invalid UTF-8 with the byte
offset), feeds an :class:`~.encoder.IncrementalEncoder` and writes the ids it
returns, flushing after each block.  Memory is bounded by the block size, the
chunk cache, and the longest stretch of text without a safe cut.

Formats: ``ids`` (space-separated ids on one line, as ``bpefst encode``),
``tokens`` (one JSON string per token), ``msgpack`` (a sequence of msgpack
arrays of ids; their concatenation is the tokenization), ``jsonl`` (every input
line tokenized on its own, without its line break, one JSON array per line, as
``bpefst encode --format jsonl``).

With ``jobs > 1`` (where ``os.fork`` exists) the raw input is cut at safe byte
positions into pieces of about ``piece_size`` bytes that forked worker
processes decode, tokenize and format; this process only reads, cuts and
writes the results in input order (:mod:`.stream_jobs`).
"""

from __future__ import annotations

import codecs
import json
import weakref
from collections import deque
from typing import BinaryIO, Iterator

import msgpack

from ..errors import BpefstError
from .encoder import Tokenizer
from .forking import fork_available
from . import encoder as _encoder

FORMATS = ("ids", "jsonl", "tokens", "msgpack")
BLOCK_SIZE = 1 << 20
PIECE_SIZE = 1 << 20


class _Decoder:
    """Incremental UTF-8 decoding with the byte offset of the first invalid byte."""

    def __init__(self, byte_level: bool):
        self.byte_level = byte_level
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape" if byte_level else "strict")
        self.consumed = 0

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
                    block_size: int = BLOCK_SIZE, piece_size: int = PIECE_SIZE) -> None:
    """Tokenize ``stream`` to ``out`` in ``fmt``; see the module docstring."""
    allowed = () if allowed_special == "none" else allowed_special
    policy = tokenizer.special_policy(allowed, disallowed_special)
    writer = _Writer(tokenizer, out, fmt) if fmt != "jsonl" else None
    if jobs > 1 and fork_available():
        from .stream_jobs import tokenize_stream_jobs

        write = writer.write_formatted if writer is not None else out.write
        tokenize_stream_jobs(tokenizer, stream, write, out.flush, fmt, *policy, jobs=jobs, piece_size=piece_size)
        writer.close() if writer is not None else out.flush()
        return
    jobs = 1  # without os.fork this process does it all
    if fmt == "jsonl":
        _tokenize_lines(tokenizer, stream, out, policy, jobs, block_size)
        return
    if fmt not in FORMATS:
        raise BpefstError(f"unknown output format {fmt!r}")
    decoder = _Decoder(tokenizer.model.is_byte_level)
    incremental = _encoder.IncrementalEncoder(tokenizer, *policy)
    if jobs <= 1:
        for block in _blocks(stream, block_size):
            ids = incremental.feed(decoder.decode(block))
            if ids:
                writer.write_ids(ids)
                out.flush()
        ids = incremental.feed(decoder.decode(b"", final=True)) + incremental.finish()
        writer.write_ids(ids)
        writer.close()
        return


def _worker_lines(lines: list[bytes], allowed, disallowed, first_line: int) -> bytes:
    tokenizer = _encoder._WORKER_TOKENIZER
    return _format_lines(tokenizer, lines, (allowed, disallowed), first_line)


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


def _tokenize_lines(tokenizer: Tokenizer, stream: BinaryIO, out: BinaryIO, policy, jobs: int, block_size: int) -> None:
    """``jsonl``: each input line (as ``bytes.splitlines`` cuts them) tokenized on its own."""
    pool = tokenizer._get_pool(jobs) if jobs > 1 else None
    in_flight: deque = deque()
    tail = b""
    line_no = 0

    def emit(lines: list[bytes]) -> None:
        if not lines:
            return
        first = line_no - len(lines) + 1
        if pool is None:
            out.write(_format_lines(tokenizer, lines, policy, first))
            out.flush()
            return
        in_flight.append(pool.apply_async(_worker_lines, (lines, policy[0], policy[1], first)))
        while in_flight and (in_flight[0].ready() or len(in_flight) > 2 * jobs):
            out.write(in_flight.popleft().get())
            out.flush()

    for block in _blocks(stream, block_size):
        data = tail + block
        cut = data.rfind(b"\n")
        if cut < 0:
            tail = data
            continue
        lines = []
        for piece in data[:cut].split(b"\n"):
            lines.extend(_split_lines(piece))
        line_no += len(lines)
        tail = data[cut + 1 :]
        emit(lines)
    if tail:
        lines = tail.splitlines()
        line_no += len(lines)
        emit(lines)
    while in_flight:
        out.write(in_flight.popleft().get())
    out.flush()


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
