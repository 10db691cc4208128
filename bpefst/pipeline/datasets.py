"""Training-ready id files: raw ``.bin``, streamed ``.npy``, a document index, and shards with a manifest.

These are the files language-model training code reads (nanoGPT's
``train.bin`` of uint16, Megatron-style binary + index, ``.npy``), written
without numpy and in constant memory:

* ``bin``: the ids as little-endian unsigned integers, nothing else
  (``numpy.fromfile(path, dtype=numpy.uint16)`` or ``numpy.memmap``);
* ``npy``: the same bytes after a version-1.0 ``.npy`` header.  The header is
  written first with room for any length and rewritten with the real shape
  when the file is closed (the format allows padding with spaces before the
  final newline; the header length stays a multiple of 64 as NEP 1 asks), so
  ``numpy.load(path, mmap_mode="r")`` opens the result;
* an index: a ``.npy`` of uint64 *end* offsets, one per document, so document
  ``k`` is ``ids[ends[k-1]:ends[k]]`` (with ``ends[-1] = 0``), BOS/EOS ids
  included;
* shards: a directory of ``shard_00000.bin`` (or ``.npy``) files of at most
  ``shard_size`` ids each, read in order as one stream, plus ``manifest.json``
  (:data:`MANIFEST_FORMAT`, described in :class:`ShardWriter`) and the index
  ``index.npy`` over the whole stream.  A document may continue from one shard
  into the next, as in nanoGPT's FineWeb shards: the stream, not the file, is
  the unit.

Every file is written under a temporary name and renamed into place when it
is complete, so an interrupted or failed run leaves no partial output.

Reading back (:func:`iter_id_blocks`) covers these formats plus msgpack
arrays, so ``bpefst validate`` checks anything ``bpefst tokenize`` writes.

dtype ``auto`` picks the smallest of uint16 / uint32 that holds every id of the
tokenizer (:func:`choose_dtype`); uint16 is refused for a vocabulary with ids
of 65,536 or more (o200k, cl100k), since the ids would wrap silently.
"""

from __future__ import annotations

import ast
import json
import os
import stat
import sys
import tempfile
from array import array
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator, Sequence

from ..errors import BpefstError

MANIFEST_FORMAT = "bpefst-shards"
MANIFEST_VERSION = 1
MANIFEST_NAME = "manifest.json"
INDEX_NAME = "index.npy"
NPY_MAGIC = b"\x93NUMPY"
FILE_FORMATS = ("bin", "npy")


@dataclass(frozen=True)
class Dtype:
    """An unsigned little-endian id type: its name, ``.npy`` descr, array typecode and size in bytes."""

    name: str
    descr: str
    typecode: str
    size: int

    @property
    def limit(self) -> int:
        return 1 << (8 * self.size)


def _typecode(size: int) -> str:
    return next(code for code in "BHILQ" if array(code).itemsize == size)


DTYPES = {d.name: d for d in (Dtype("uint16", "<u2", _typecode(2), 2), Dtype("uint32", "<u4", _typecode(4), 4),
                              Dtype("uint64", "<u8", _typecode(8), 8))}
ID_DTYPES = ("uint16", "uint32")  # what id files are written in; uint64 is the index's
_DESCRS = {d.descr: d for d in DTYPES.values()} | {"|u1": Dtype("uint8", "|u1", "B", 1)}


def choose_dtype(requested: str, max_id: int) -> Dtype:
    """``auto``: the smallest of uint16 / uint32 holding ``max_id``; a named dtype too small is an error."""
    if requested == "auto":
        requested = "uint16" if max_id < 1 << 16 else "uint32"
    if requested not in ID_DTYPES:
        raise BpefstError(f"unknown dtype {requested!r} (expected auto, uint16 or uint32)")
    dtype = DTYPES[requested]
    if max_id >= dtype.limit:
        raise BpefstError(f"{requested} holds ids below {dtype.limit:,}, but this tokenizer has ids up to {max_id:,}; "
                          "use --dtype uint32 (or auto)")
    return dtype


def pack_ids(ids: Sequence[int], dtype: Dtype) -> bytes:
    """Ids as little-endian bytes of ``dtype`` (OverflowError if one does not fit)."""
    if isinstance(ids, array) and sys.byteorder == "little":
        if ids.typecode == dtype.typecode:
            return ids.tobytes()  # packed ids from the core or the --jobs workers: already in the file's layout
        if ids.typecode == "I" and dtype.typecode == "H":  # uint32 -> uint16 without a Python int per id
            halves = memoryview(ids).cast("B").cast("H")
            if not halves[1::2].tobytes().strip(b"\0"):  # every high half is zero: every id fits
                return halves[::2].tobytes()
    values = array(dtype.typecode, ids)
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def npy_header(dtype: Dtype, length: int, width: int = 20) -> bytes:
    """A version-1.0 ``.npy`` header for a 1-d array of ``length`` items, sized for ``width``-digit lengths.

    The size depends only on ``width`` (the shape is padded with spaces), so a
    header written before the length is known can be overwritten in place.
    """
    body = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (dtype.descr, length)
    reserved = len("{'descr': '%s', 'fortran_order': False, 'shape': (%s,), }" % (dtype.descr, "9" * width))
    if len(body) > reserved:
        raise BpefstError(f"array length {length} does not fit an .npy header of width {width}")
    total = 10 + reserved + 1
    padded = (total + 63) // 64 * 64
    body = body.ljust(padded - 10 - 1) + "\n"
    return NPY_MAGIC + b"\x01\x00" + len(body).to_bytes(2, "little") + body.encode("latin-1")


# -- writing ---------------------------------------------------------------------------------------


class AtomicFile:
    """A file written under a temporary name in its directory and renamed into place by :meth:`commit`.

    A device or FIFO (``/dev/stdout``, a named pipe) is written in place.
    """

    def __init__(self, path: str):
        self.path = path
        if _is_special(path):
            try:
                self.handle: BinaryIO = open(path, "wb")
            except OSError as exc:
                raise BpefstError(f"cannot write {path}: {exc.strerror or exc}") from None
            self.tmp = None
            return
        directory = os.path.dirname(os.path.abspath(path))
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
        except OSError as exc:
            raise BpefstError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.handle: BinaryIO = os.fdopen(fd, "w+b")

    def write(self, data: bytes) -> None:
        try:
            self.handle.write(data)
        except OSError as exc:
            self.abort()
            raise BpefstError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def commit(self) -> None:
        if self.tmp is None:
            self.handle.close()
            return
        try:
            self.handle.close()
            os.chmod(self.tmp, 0o666 & ~_umask())
            os.replace(self.tmp, self.path)
        except OSError as exc:
            self.abort()
            raise BpefstError(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def abort(self) -> None:
        if not self.handle.closed:
            self.handle.close()
        if self.tmp is not None and os.path.exists(self.tmp):
            os.unlink(self.tmp)


def _is_special(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class IdWriter:
    """Ids appended to one ``bin`` or ``npy`` file (``path``) or, for ``bin``, to a binary stream (``stream``).

    ``write(ids)`` appends, ``close()`` completes the file (for ``npy``,
    rewrites the header with the final length) and renames it into place,
    ``abort()`` removes the partial file.  ``count`` is the ids written so far.
    """

    def __init__(self, dtype: Dtype, file_format: str = "bin", path: str | None = None, stream: BinaryIO | None = None):
        if file_format not in FILE_FORMATS:
            raise BpefstError(f"unknown id file format {file_format!r} (expected bin or npy)")
        if (path is None) == (stream is None):
            raise ValueError("give exactly one of path and stream")
        if file_format == "npy" and path is None:
            raise BpefstError("an .npy file needs a seekable output file (its header is written last); give --output")
        self.dtype, self.file_format, self.path = dtype, file_format, path
        self._file = AtomicFile(path) if path is not None else None
        self._stream = stream
        self.count = 0
        if file_format == "npy":
            self._write(npy_header(dtype, 0))

    def _write(self, data: bytes) -> None:
        if self._file is not None:
            self._file.write(data)
        else:
            self._stream.write(data)

    def write(self, ids: Sequence[int]) -> None:
        if not len(ids):
            return
        try:
            data = pack_ids(ids, self.dtype)
        except OverflowError:
            self.abort()
            worst = max(ids)
            raise BpefstError(f"id {worst:,} does not fit {self.dtype.name}") from None
        self._write(data)
        self.count += len(ids)

    def close(self) -> None:
        if self._file is None:
            self._stream.flush()
            return
        if self.file_format == "npy":
            handle = self._file.handle
            try:
                handle.seek(0)
                handle.write(npy_header(self.dtype, self.count))
            except OSError as exc:
                self.abort()
                raise BpefstError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        self._file.commit()

    def abort(self) -> None:
        if self._file is not None:
            self._file.abort()


def write_id_file(path: str, ids: Sequence[int], dtype: Dtype, file_format: str = "bin") -> int:
    """Write ``ids`` to ``path`` as one complete ``bin``/``npy`` file (atomically); returns its size in bytes."""
    writer = IdWriter(dtype, file_format, path=path)
    writer.write(ids)
    writer.close()
    return os.path.getsize(path)


def shard_name(number: int, file_format: str) -> str:
    return f"shard_{number:05d}.{file_format}"


def write_shard(directory: str, number: int, ids: Sequence[int], dtype: Dtype, file_format: str = "bin",
                documents: int = 0) -> dict:
    """Write one shard file and return its manifest entry (see :class:`ShardWriter`).

    For engines that produce shards elsewhere (one per worker, say) and then
    call :func:`write_manifest` with the entries in stream order.
    """
    name = shard_name(number, file_format)
    size = write_id_file(os.path.join(directory, name), ids, dtype, file_format)
    return {"file": name, "ids": len(ids), "documents": documents, "bytes": size}


def write_manifest(directory: str, shards: list[dict], dtype: Dtype, file_format: str, *, fingerprint: str,
                   max_id: int, eot: int | None = None, bot: int | None = None, documents: int | None = None,
                   index: str | None = None, extra: dict | None = None) -> dict:
    """Write ``DIRECTORY/manifest.json`` (atomically) for ``shards`` (entries in stream order); returns it."""
    manifest = {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "dtype": dtype.name,
        "byteorder": "little",
        "file_format": file_format,
        "ids": sum(s["ids"] for s in shards),
        "documents": sum(s["documents"] for s in shards) if documents is None else documents,
        "tokenizer": {"fingerprint": fingerprint, "max_id": max_id},
        "eot": eot,
        "bot": bot,
        "index": index,
        "shards": shards,
        **(extra or {}),
    }
    target = AtomicFile(os.path.join(directory, MANIFEST_NAME))
    target.write((json.dumps(manifest, indent=1) + "\n").encode("utf-8"))
    target.commit()
    return manifest


def run_settings(*, file_format: str, dtype: str, eot: int | None, bot: int | None, text_field: str, split_lines: bool,
                 allowed, disallowed, shard_size: int | None, fingerprint: str, inputs) -> dict:
    """What a shard directory was made from and with which settings: its manifest's ``run``.

    Both engines write it, the same bytes for the same run, so a directory
    written by one machine and one written on Ray compare equal; the Ray
    engine also checks it before resuming (``shard_size`` None there means one
    shard per input).  ``inputs`` are :class:`~.inputs.InputFile` in order.
    """
    return {"file_format": file_format, "dtype": dtype, "eot": eot, "bot": bot, "text_field": text_field,
            "split_lines": split_lines, "allowed": sorted(allowed), "disallowed": sorted(disallowed),
            "shard_size": shard_size, "tokenizer": fingerprint, "inputs": [[f.path, f.size, f.kind] for f in inputs]}


class ShardWriter:
    """Ids split over shard files of at most ``shard_size`` ids in ``directory``, with ``manifest.json``.

    ``write(ids)`` appends to the stream (starting new shards as they fill),
    ``end_document()`` counts a document as ending at the current position,
    ``close()`` completes the last shard and writes the manifest, ``abort()``
    removes every shard written.  The manifest (JSON)::

        {"format": "bpefst-shards", "version": 1, "dtype": "uint16", "byteorder": "little",
         "file_format": "bin", "ids": 2641000, "documents": 812,
         "tokenizer": {"fingerprint": "...", "max_id": 50256}, "eot": 50256, "bot": null,
         "index": "index.npy",
         "shards": [{"file": "shard_00000.bin", "ids": 1000000, "documents": 301, "bytes": 2000000}, ...]}

    ``documents`` of a shard counts the documents that end inside it; the
    shards in list order, concatenated, are the id stream.
    """

    def __init__(self, directory: str, dtype: Dtype, shard_size: int, file_format: str = "bin"):
        if shard_size < 1:
            raise BpefstError("--shard-size must be at least 1")
        self.directory, self.dtype, self.shard_size, self.file_format = directory, dtype, shard_size, file_format
        self.shards: list[dict] = []
        self._current: IdWriter | None = None
        self._documents = 0
        self.count = 0

    def _open_next(self) -> IdWriter:
        name = shard_name(len(self.shards), self.file_format)
        self._current = IdWriter(self.dtype, self.file_format, path=os.path.join(self.directory, name))
        self._documents = 0
        return self._current

    def _finish_current(self) -> None:
        writer = self._current
        if writer is None:
            return
        writer.close()
        self.shards.append({"file": os.path.basename(writer.path), "ids": writer.count, "documents": self._documents,
                            "bytes": os.path.getsize(writer.path)})
        self._current = None

    def write(self, ids: Sequence[int]) -> None:
        begin = 0
        while begin < len(ids):
            writer = self._current or self._open_next()
            room = self.shard_size - writer.count
            piece = ids[begin : begin + room]
            writer.write(piece)
            begin += len(piece)
            self.count += len(piece)
            if writer.count >= self.shard_size:
                self._finish_current()

    def end_document(self) -> None:
        if self._current is not None:
            self._documents += 1
        elif self.shards:
            self.shards[-1]["documents"] += 1  # the document ended exactly at a shard's end
        else:  # an empty document before any id: it belongs to the first shard
            self._open_next()
            self._documents += 1

    def close(self, **manifest) -> dict:
        """Complete the last shard and write the manifest (keyword arguments: see :func:`write_manifest`)."""
        self._finish_current()
        return write_manifest(self.directory, self.shards, self.dtype, self.file_format, **manifest)

    def abort(self) -> None:
        if self._current is not None:
            self._current.abort()
        for shard in self.shards:
            path = os.path.join(self.directory, shard["file"])
            if os.path.exists(path):
                os.unlink(path)
        self.shards = []


@dataclass
class DatasetWriter:
    """Documents into an id sink: BOS before, EOS after each document, and the index of document ends.

    ``sink`` is an :class:`IdWriter`, a :class:`ShardWriter` or any object
    with ``write(ids)``, ``close()`` and ``abort()`` (and, if it wants to know
    where documents begin and end, ``begin_document()`` / ``end_document()``);
    ``index`` an optional uint64 ``npy`` :class:`IdWriter` for the end offsets.
    """

    sink: object
    bot: int | None = None
    eot: int | None = None
    index: IdWriter | None = None
    documents: int = 0
    ids: int = 0
    _ends: list[int] = field(default_factory=list)

    @property
    def takes_arrays(self) -> bool:
        """Whether ids may come as ``array('I')`` (the sink packs them into a file anyway)."""
        return isinstance(self.sink, (IdWriter, ShardWriter))

    def begin_document(self) -> None:
        begin = getattr(self.sink, "begin_document", None)
        if begin is not None:
            begin()
        if self.bot is not None:
            self.write((self.bot,))

    def write(self, ids: Sequence[int]) -> None:
        if len(ids):
            self.sink.write(ids)
            self.ids += len(ids)

    def end_document(self) -> None:
        if self.eot is not None:
            self.write((self.eot,))
        self.documents += 1
        end = getattr(self.sink, "end_document", None)
        if end is not None:
            end()
        if self.index is not None:
            self._ends.append(self.ids)
            if len(self._ends) >= 65_536:
                self.index.write(self._ends)
                self._ends = []

    def close(self, **manifest) -> None:
        if self.index is not None:
            self.index.write(self._ends)
            self._ends = []
            self.index.close()
        if isinstance(self.sink, ShardWriter):
            self.sink.close(documents=self.documents, eot=self.eot, bot=self.bot, **manifest)
        else:
            self.sink.close()

    def abort(self) -> None:
        self.sink.abort()
        if self.index is not None:
            self.index.abort()


# -- reading -----------------------------------------------------------------------------------------

ID_FORMATS = ("ids", "jsonl", "msgpack", "bin", "npy", "shards")
READ_IDS = 1 << 16


def detect_id_format(path: str) -> str:
    """The id format of a file or directory: shards (a manifest or its directory), npy (by magic), bin, msgpack or jsonl
    (by name), else ids (whitespace-separated text)."""
    if path == "-":
        return "ids"
    if os.path.isdir(path):
        return "shards"
    name = path.lower()
    for suffix in (".gz", ".bz2", ".xz", ".zst"):
        name = name.removesuffix(suffix)
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(NPY_MAGIC))
    except OSError:
        return "ids"  # the reader gives the error
    if head == NPY_MAGIC:
        return "npy"
    if name.endswith(".json") and head.lstrip().startswith(b"{"):
        return "shards"
    for suffix, fmt in ((".bin", "bin"), (".npy", "npy"), (".msgpack", "msgpack"), (".jsonl", "jsonl")):
        if name.endswith(suffix):
            return fmt
    return "ids"


def read_npy_header(stream: BinaryIO, name: str) -> tuple[Dtype, int]:
    """Parse an ``.npy`` header: ``(dtype, length)`` of a 1-d unsigned little-endian array, else BpefstError."""
    magic = stream.read(8)
    if len(magic) < 8 or not magic.startswith(NPY_MAGIC):
        raise BpefstError(f"{name} is not an .npy file")
    major = magic[6]
    size_bytes = 2 if major == 1 else 4
    raw = stream.read(size_bytes)
    if major not in (1, 2, 3) or len(raw) < size_bytes:
        raise BpefstError(f"{name}: unsupported .npy version {major}")
    length = int.from_bytes(raw, "little")
    text = stream.read(length)
    try:
        header = ast.literal_eval(text.decode("latin-1"))
        descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    except (ValueError, SyntaxError, KeyError, TypeError):
        raise BpefstError(f"{name}: malformed .npy header") from None
    if not isinstance(shape, tuple) or len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 0 or fortran:
        raise BpefstError(f"{name}: expected a 1-d array of ids, found shape {shape!r}")
    dtype = _DESCRS.get(descr if descr[0] != "=" or sys.byteorder != "little" else "<" + descr[1:])
    if dtype is None:
        raise BpefstError(f"{name}: ids must be unsigned little-endian integers (uint16/uint32/uint64), found {descr!r}")
    return dtype, shape[0]


def _array_blocks(stream: BinaryIO, dtype: Dtype, name: str, expected: int | None = None) -> Iterator[array]:
    total = 0
    while True:
        data = stream.read(READ_IDS * dtype.size)
        if not data:
            break
        if len(data) % dtype.size:
            more = stream.read(dtype.size - len(data) % dtype.size)
            data += more
            if len(data) % dtype.size:
                raise BpefstError(f"{name}: {total * dtype.size + len(data)} bytes is not a whole number of {dtype.name} ids")
        values = array(dtype.typecode)
        values.frombytes(data)
        if sys.byteorder == "big":
            values.byteswap()
        total += len(values)
        if expected is not None and total > expected:
            raise BpefstError(f"{name}: more ids than the {expected:,} its header declares")
        yield values
    if expected is not None and total != expected:
        raise BpefstError(f"{name}: {total:,} ids, but its header declares {expected:,} (truncated?)")


def _msgpack_blocks(stream: BinaryIO, name: str) -> Iterator[list[int]]:
    import msgpack

    unpacker = msgpack.Unpacker(stream, max_buffer_size=64 << 20, strict_map_key=True)
    try:
        for k, value in enumerate(unpacker):
            if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
                raise BpefstError(f"{name}: msgpack object {k} is not an array of non-negative integer ids")
            yield value
    except (msgpack.ExtraData, msgpack.FormatError, msgpack.StackError, ValueError) as exc:
        raise BpefstError(f"{name}: not a stream of msgpack arrays ({exc})") from None


def load_manifest(path: str) -> tuple[dict, str]:
    """A shard manifest (its path or its directory) checked: ``(manifest, directory)``."""
    directory = path if os.path.isdir(path) else os.path.dirname(path) or "."
    manifest_path = os.path.join(path, MANIFEST_NAME) if os.path.isdir(path) else path
    try:
        with open(manifest_path, "rb") as handle:
            manifest = json.loads(handle.read(16 << 20))
    except OSError as exc:
        raise BpefstError(f"cannot read {manifest_path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BpefstError(f"{manifest_path}: not a JSON shard manifest") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise BpefstError(f"{manifest_path}: not a {MANIFEST_FORMAT} manifest")
    if manifest.get("version") != MANIFEST_VERSION:
        raise BpefstError(f"{manifest_path}: manifest version {manifest.get('version')!r}, expected {MANIFEST_VERSION}")
    shards = manifest.get("shards")
    if (manifest.get("dtype") not in ID_DTYPES or manifest.get("file_format") not in FILE_FORMATS
            or not isinstance(shards, list)
            or not all(isinstance(s, dict) and isinstance(s.get("file"), str) and isinstance(s.get("ids"), int) for s in shards)):
        raise BpefstError(f"{manifest_path}: malformed manifest (dtype, file_format or shards)")
    for shard in shards:
        if os.path.basename(shard["file"]) != shard["file"] or shard["file"].startswith("."):
            raise BpefstError(f"{manifest_path}: shard file {shard['file']!r} is not a plain name in the manifest's directory")
    return manifest, directory


def iter_id_blocks(path: str, fmt: str, dtype: str | None = None) -> Iterator[Sequence[int]]:
    """The ids of a ``bin``, ``npy``, ``msgpack`` file or a shard manifest, in blocks (streamed).

    ``bin`` carries no dtype: ``dtype`` (a name) must be given.  Compressed
    files are read transparently (:func:`.inputs.open_input`).
    """
    from .inputs import open_input

    name = "<stdin>" if path == "-" else path
    if fmt == "shards":
        manifest, directory = load_manifest(path)
        for shard in manifest["shards"]:
            shard_path = os.path.join(directory, shard["file"])
            yield from iter_id_blocks(shard_path, manifest["file_format"], manifest["dtype"])
        return
    if fmt == "bin" and dtype not in DTYPES:
        raise BpefstError("a .bin file carries no dtype: give --dtype uint16 or uint32")
    with open_input(path, "ids") as stream:
        if fmt == "bin":
            yield from _array_blocks(stream, DTYPES[dtype], name)
        elif fmt == "npy":
            found, length = read_npy_header(stream, name)
            yield from _array_blocks(stream, found, name, expected=length)
        elif fmt == "msgpack":
            yield from _msgpack_blocks(stream, name)
        else:
            raise BpefstError(f"cannot read ids in format {fmt!r}")
