"""Opening inputs: files, directories, globs and stdin; compressed or not; text, JSONL or Parquet documents.

Every command that reads text or ids opens it through :func:`open_input`, which
looks at the first bytes, not at the name, to decide whether the stream is
compressed (gzip ``1f 8b``, bzip2 ``BZh``, xz ``fd 37 7a 58 5a 00``, zstd
``28 b5 2f fd``) and wraps it in the matching streaming decompressor (the
standard library's; zstd's from the optional ``zstandard`` package, see
:mod:`bpefst.zstd`), so ``pydocs.txt.xz`` is read as the text it holds, never
as its compressed bytes.  Zip and 7z archives are refused by name, with what
to do instead.

For ``bpefst tokenize`` a list of INPUT arguments becomes a list of
:class:`InputFile` (:func:`expand_inputs`: directories are walked in sorted
order, globs expanded and sorted, ``-`` is stdin), and each file becomes a
sequence of documents (:func:`iter_documents`):

* ``text``: the whole file is one document, or with ``split_lines`` each
  non-empty line (without its line break) is one; a whole-file document is yielded as a
  stream of text pieces so that its size is not bounded by memory;
* ``jsonl``: one JSON object per line, the document is its ``text_field``;
* ``parquet``: the ``text_field`` column, read a row group at a time (pyarrow,
  an optional dependency).

A document is an iterator of ``str`` pieces whose concatenation is its text.
Byte-level tokenizers take any bytes (invalid UTF-8 is carried as lone
surrogates, exactly as :func:`bpefst.tokenizer.reference.decode_input` does);
character-level ones need valid UTF-8.
"""

from __future__ import annotations

import bz2
import codecs
import glob
import gzip
import io
import json
import lzma
import os
import stat
import sys
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator

from .. import zstd
from ..errors import BpefstError

STDIN = "-"
READ_SIZE = 1 << 20
KINDS = ("auto", "text", "jsonl", "parquet")

# magic bytes -> (name, opener of a decompressing file object over a binary stream, given the input's name)
_COMPRESSED: tuple[tuple[bytes, str, Callable[[BinaryIO, str], BinaryIO]], ...] = (
    (b"\x1f\x8b\x08", "gzip", lambda raw, name: gzip.GzipFile(fileobj=raw, mode="rb")),
    (b"BZh", "bzip2", lambda raw, name: bz2.BZ2File(raw, mode="rb")),  # and see _is_bzip2
    (b"\xfd7zXZ\x00", "xz", lambda raw, name: lzma.LZMAFile(raw, mode="rb")),
    (zstd.MAGIC, "zstd", lambda raw, name: zstd.ZstdReader(raw, name)),  # type: ignore[arg-type,return-value]
)
# formats we recognise but do not read, with what to do instead
_REFUSED: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a zip archive; extract it first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive; extract it first"),
)
_MAGIC_LENGTH = 6
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")
PARQUET_MAGIC = b"PAR1"


class _CountingReader(io.RawIOBase):
    """A raw stream that counts the bytes read from it (before decompression), after replaying ``head``."""

    def __init__(self, stream: BinaryIO, head: bytes, name: str):
        self._stream, self._head, self.name_ = stream, head, name
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n], self._head = self._head[:n], self._head[n:]
        else:
            try:
                read = getattr(self._stream, "read1", None) or self._stream.read
                data = read(len(buffer))
            except OSError as exc:
                raise BpefstError(f"cannot read {self.name_}: {exc.strerror or exc}") from None
            n = len(data)
            buffer[:n] = data
        self.count += n
        return n


class InputStream(io.BufferedReader):
    """The decompressed bytes of one input, plus ``compressed_read``: raw bytes consumed so far (for progress)."""

    def __init__(self, raw: BinaryIO, counter: _CountingReader, compression: str | None, owned: BinaryIO | None, name: str):
        super().__init__(raw, READ_SIZE)  # type: ignore[arg-type]
        self._counter, self._owned = counter, owned
        self.compression, self.input_name = compression, name

    @property
    def compressed_read(self) -> int:
        """Bytes of the input as stored (compressed) read so far."""
        return self._counter.count

    @property
    def decompressed_read(self) -> int:
        """Bytes of content (after decompression) read so far, including what is buffered."""
        return self.raw.count

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._owned is not None:
                self._owned.close()


class _Decompressed(io.RawIOBase):
    """A decompressing file object as a raw stream whose errors are one-line BpefstErrors."""

    def __init__(self, stream: BinaryIO, name: str, compression: str):
        self._stream, self._name, self._compression = stream, name, compression
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            data = self._stream.read1(len(buffer))
        except (OSError, EOFError, lzma.LZMAError, ValueError) as exc:
            raise BpefstError(f"{self._name}: corrupt or truncated {self._compression} data ({exc})") from None
        n = len(data)
        buffer[:n] = data
        self.count += n
        return n


def open_input(path: str, what: str = "text") -> InputStream:
    """``path`` (or stdin for ``-``) as a binary stream of its decompressed bytes.

    Compression is detected from the first bytes; a recognised format that is
    not read (zip, 7z) is refused with what to do instead.  ``what``
    names the expected content in messages.
    """
    name = "<stdin>" if path == STDIN else path
    if path == STDIN:
        stream: BinaryIO = sys.stdin.buffer
        owned = None
    else:
        if os.path.isdir(path):
            raise BpefstError(f"{path} is a directory, not a file")
        try:
            stream = owned = open(path, "rb")
        except OSError as exc:
            raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        head = _read_head(stream, name)
        counter = _CountingReader(stream, head, name)
        for magic, reason in _REFUSED:
            if head.startswith(magic):
                raise BpefstError(f"{name} is {reason}; bpefst reads {what} plain or gzip/bzip2/xz/zstd-compressed")
        for magic, compression, opener in _COMPRESSED:
            if head.startswith(magic) and (compression != "bzip2" or _is_bzip2(head)):
                raw = _Decompressed(opener(counter, name), name, compression)  # type: ignore[arg-type]
                return InputStream(raw, counter, compression, owned, name)
        return InputStream(counter, counter, None, owned, name)
    except BaseException:
        if owned is not None:
            owned.close()
        raise


def _is_bzip2(head: bytes) -> bool:
    """``BZh``, a block size digit, then the magic of a first block (pi) or of the end of the stream (sqrt pi):
    text that merely starts with "BZh" is not taken for bzip2."""
    return head[3:4] in b"123456789" and len(head[3:4]) == 1 and head[4:6] in (b"1A", b"\x17r")


def _read_head(stream: BinaryIO, name: str) -> bytes:
    """The first bytes of a stream (a pipe may deliver fewer per read than asked for)."""
    head = b""
    try:
        while len(head) < _MAGIC_LENGTH:
            read = getattr(stream, "read1", None) or stream.read
            data = read(_MAGIC_LENGTH - len(head))
            if not data:
                break
            head += data
    except OSError as exc:
        raise BpefstError(f"cannot read {name}: {exc.strerror or exc}") from None
    return head


def read_all(path: str, what: str = "text") -> bytes:
    """All decompressed bytes of an input."""
    with open_input(path, what) as stream:
        return stream.read()


def iter_lines(path: str, what: str = "text") -> Iterator[bytes]:
    """The lines of an input (decompressed), streamed, with their line breaks."""
    with open_input(path, what) as stream:
        yield from stream


# -- many inputs -------------------------------------------------------------------------


@dataclass(frozen=True)
class InputFile:
    """One input of a dataset: its path (``-`` for stdin), its size on disk (None for stdin) and its kind."""

    path: str
    size: int | None
    kind: str

    @property
    def name(self) -> str:
        return "<stdin>" if self.path == STDIN else self.path


def expand_inputs(arguments: list[str] | tuple[str, ...], kind: str = "auto") -> list[InputFile]:
    """INPUT arguments -> the files they name, in order: directories walked (sorted), globs expanded (sorted).

    Hidden files and directories under a directory argument are skipped.  Every
    file is checked readable before any work starts; an argument that names
    nothing is an error.
    """
    if kind not in KINDS:
        raise BpefstError(f"unknown input kind {kind!r} (expected one of {', '.join(KINDS)})")
    files: list[InputFile] = []
    for argument in arguments or (STDIN,):
        if argument == STDIN:
            if kind == "parquet":
                raise BpefstError("Parquet cannot be read from stdin; give the file")
            files.append(InputFile(STDIN, None, "text" if kind == "auto" else kind))
            continue
        if os.path.isdir(argument):
            paths = _walk(argument)
            if not paths:
                raise BpefstError(f"directory {argument} holds no files")
        elif os.path.exists(argument) or not glob.has_magic(argument):
            paths = [argument]
        else:
            paths = sorted(p for p in glob.glob(argument, recursive=True) if os.path.isfile(p))
            if not paths:
                raise BpefstError(f"no file matches {argument}")
        for path in paths:
            size = _checked_size(path)
            files.append(InputFile(path, size, _kind_of(path, sniff=size is not None) if kind == "auto" else kind))
    return files


def _walk(directory: str) -> list[str]:
    found = []
    for root, dirs, names in os.walk(directory):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(os.path.join(root, n) for n in sorted(names) if not n.startswith("."))
    return found


def _checked_size(path: str) -> int | None:
    """The size of a regular file, checked readable; None for a FIFO or device (not opened here: opening a
    FIFO twice would let its writer see a closed pipe, and its size says nothing)."""
    try:
        status = os.stat(path)
        if stat.S_ISDIR(status.st_mode):
            raise BpefstError(f"{path} is a directory, not a file")
        if not stat.S_ISREG(status.st_mode):
            if not os.access(path, os.R_OK):
                raise PermissionError(13, "Permission denied")
            return None
        with open(path, "rb"):
            return status.st_size
    except OSError as exc:
        raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None


def _kind_of(path: str, sniff: bool) -> str:
    """The document kind a file name suggests (after any compression suffix); Parquet also by its magic
    when ``sniff`` (a regular file: reading a pipe's first bytes would consume them)."""
    name = path.lower()
    for suffix in _COMPRESSION_SUFFIXES:
        name = name.removesuffix(suffix)
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if name.endswith(".parquet") or (sniff and _starts_with(path, PARQUET_MAGIC)):
        return "parquet"
    return "text"


def _starts_with(path: str, magic: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(len(magic)) == magic
    except OSError:
        return False


# -- documents -----------------------------------------------------------------------------

Document = Iterator[str]


def iter_documents(source: InputFile, byte_level: bool, text_field: str = "text", split_lines: bool = False,
                   on_read: Callable[[int], None] | None = None) -> Iterator[Document]:
    """The documents of one input, in order; each is an iterator of text pieces (see the module docstring).

    ``on_read(stored, content)`` is called with the number of bytes of this
    file consumed so far, as stored (compressed) and after decompression, for
    progress displays and statistics.  A document must be consumed before the
    next one is requested.
    """
    if source.kind == "parquet":
        yield from _parquet_documents(source, text_field, byte_level, on_read)
        return
    with open_input(source.path) as stream:
        report = (lambda: on_read(stream.compressed_read, stream.decompressed_read)) if on_read else (lambda: None)
        if source.kind == "jsonl":
            yield from _jsonl_documents(stream, source.name, text_field, report)
        elif split_lines:
            yield from _line_documents(stream, source.name, byte_level, report)
        else:
            yield _text_pieces(stream, source.name, byte_level, report)
        report()


def _text_pieces(stream: InputStream, name: str, byte_level: bool, report: Callable[[], None]) -> Document:
    decoder = _utf8_decoder(name, byte_level)
    while True:
        data = stream.read1(READ_SIZE)
        report()
        if not data:
            break
        text = decoder(data, False)
        if text:
            yield text
    tail = decoder(b"", True)
    if tail:
        yield tail


def _line_documents(stream: InputStream, name: str, byte_level: bool, report: Callable[[], None]) -> Iterator[Document]:
    """One document per non-empty line, cut as ``bytes.splitlines`` cuts (``\\n``, ``\\r\\n``, ``\\r``), without the break."""
    for line_no, line in enumerate(stream, start=1):
        if line_no % 1024 == 0:
            report()
        for piece in line.splitlines():
            if piece:
                yield iter((_decode(piece, f"{name}: line {line_no}", byte_level),))


def _jsonl_documents(stream: InputStream, name: str, field: str, report: Callable[[], None]) -> Iterator[Document]:
    for line_no, line in enumerate(stream, start=1):
        if line_no % 1024 == 0:
            report()
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BpefstError(f"{name}: line {line_no}: not valid JSON ({exc.__class__.__name__})") from None
        if not isinstance(record, dict):
            raise BpefstError(f"{name}: line {line_no}: expected a JSON object with a {field!r} field")
        if field not in record:
            raise BpefstError(f"{name}: line {line_no}: no field {field!r} (fields: {', '.join(sorted(record)[:8])}); choose one with --text-field")
        text = record[field]
        if not isinstance(text, str):
            raise BpefstError(f"{name}: line {line_no}: field {field!r} is {type(text).__name__}, not a string")
        yield iter((text,))


def _parquet_documents(source: InputFile, field: str, byte_level: bool,
                       on_read: Callable[[int], None] | None) -> Iterator[Document]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise BpefstError("reading Parquet needs pyarrow: pip install 'bpefst[parquet]'") from None
    try:
        parquet = pq.ParquetFile(source.path)
    except Exception as exc:  # pyarrow raises its own ArrowInvalid / OSError kinds
        raise BpefstError(f"{source.name}: not a readable Parquet file ({exc})") from None
    names = parquet.schema_arrow.names
    if field not in names:
        raise BpefstError(f"{source.name}: no column {field!r} (columns: {', '.join(names[:8])}); choose one with --text-field")
    column_type = str(parquet.schema_arrow.field(field).type)
    if column_type not in ("string", "large_string", "binary", "large_binary"):
        raise BpefstError(f"{source.name}: column {field!r} holds {column_type}, not text")
    groups = parquet.num_row_groups
    for group in range(groups):
        try:
            values = parquet.read_row_group(group, columns=[field]).column(0).to_pylist()
        except Exception as exc:
            raise BpefstError(f"{source.name}: cannot read row group {group} ({exc})") from None
        for row, value in enumerate(values):
            if value is None:
                continue  # a null text is no document (as datasets libraries skip them)
            if isinstance(value, bytes):
                value = _decode(value, f"{source.name}: row group {group} row {row}", byte_level)
            yield iter((value,))
        if on_read is not None and source.size is not None:
            share = source.size * (group + 1) // groups
            on_read(share, share)


def _utf8_decoder(name: str, byte_level: bool) -> Callable[[bytes, bool], str]:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape" if byte_level else "strict")
    consumed = 0

    def decode(data: bytes, final: bool) -> str:
        nonlocal consumed
        try:
            text = decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            held = len(exc.object) - len(data)
            raise BpefstError(f"{name}: not valid UTF-8 at byte offset {consumed - held + exc.start}; "
                              "this character-level tokenizer needs text") from None
        consumed += len(data)
        return text

    return decode


def _decode(data: bytes, where: str, byte_level: bool) -> str:
    try:
        return data.decode("utf-8", errors="surrogateescape" if byte_level else "strict")
    except UnicodeDecodeError as exc:
        raise BpefstError(f"{where}: not valid UTF-8 at byte {exc.start}; this character-level tokenizer needs text") from None
