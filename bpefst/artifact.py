"""On-disk artifacts: msgpack documents with a small checked header.

Everything bpefst writes is a msgpack map::

    {"format": "bpefst", "kind": KIND, "schema": N, "fingerprint": HEX, "checksum": HEX, "body": {...}}

``kind`` is one of :data:`KINDS`; ``fingerprint`` identifies the tokenizer the
artifact was built from (empty for a standalone automaton).  Loading checks all
four header fields and fails with a plain message naming what was expected and
what was found.

``checksum`` is the SHA-256 of the body's packed bytes exactly as they sit in
the file (the body is written last, so its bytes are one slice of the file):
any flipped bit or truncation in any artifact kind is refused on load, at the
cost of hashing the body once -- no re-encoding.  An artifact without a
checksum (written before bpefst had one) is refused with a message saying to
rebuild it, rather than read unchecked.  Large integer tables go in the body as packed arrays
(:func:`pack_ints` / :func:`unpack_ints`), not as lists of msgpack ints, which
keeps files small and loading fast.

Writes are atomic: the document goes to a temporary file in the target
directory which is then renamed over the target, so an interrupted run never
leaves a half-written artifact behind.  A symlink is followed (its target is
replaced, the link stays), and a device or FIFO such as ``/dev/stdout`` is
written in place, since renaming over it would replace the device itself.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from array import array
from pathlib import Path
from typing import Any, Iterable

import msgpack

from .errors import ArtifactError, BpefstError

FORMAT_NAME = "bpefst"
KINDS = ("tokenizer", "canonical-dfa", "transducer", "token-automaton", "token-guide", "automaton", "counts")


def pack_ints(values: Iterable[int], typecode: str = "I") -> bytes:
    """Pack non-negative ints into little-endian bytes (``I`` = uint32, ``Q`` = uint64)."""
    arr = array(typecode, values)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr.tobytes()


def unpack_ints(data: bytes, typecode: str = "I") -> array:
    """Inverse of :func:`pack_ints`; raises ArtifactError on a ragged buffer."""
    arr = array(typecode)
    if len(data) % arr.itemsize:
        raise ArtifactError(f"corrupted artifact: packed array of {len(data)} bytes is not a multiple of {arr.itemsize}")
    arr.frombytes(data)
    if sys.byteorder != "little":
        arr.byteswap()
    return arr


# Files read so far, once the command line has asked for them to be recorded (record_inputs):
# a reader may open files its caller never named (vocab.json's merges.txt), and no write
# may replace any of them.  Off for library use, where rewriting a file one loaded is fine.
_inputs: list[str] | None = None


def record_inputs() -> None:
    """From now on, remember every file a reader opens and refuse to write over it."""
    global _inputs
    _inputs = []


def note_input(path: str | os.PathLike) -> None:
    """A reader opened ``path`` (recorded only after :func:`record_inputs`)."""
    if _inputs is not None and str(path) not in ("", "-"):
        _inputs.append(os.fspath(path))


def recorded_inputs() -> list[str]:
    """The files read so far (empty unless recording)."""
    return list(_inputs or ())


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (devices and FIFOs in place)."""
    name = path
    if _inputs:
        refuse_overwriting_inputs(path, _inputs)
    if _is_special(path):
        _write_in_place(path, data)
        return
    if os.path.islink(path):
        path = os.path.realpath(path)  # rename over the link's target, not over the link
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise BpefstError(f"cannot write {name}: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, 0o666 & ~_current_umask())  # mkstemp makes 0600; give the file normal permissions
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise BpefstError(f"cannot write {name}: {exc.strerror or exc}") from None
        raise


def _is_special(path: str | os.PathLike) -> bool:
    """True for an existing file that is neither regular nor a directory: a device, a FIFO, a socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _write_in_place(path: str | os.PathLike, data: bytes) -> None:
    """Write into ``/dev/stdout``, a FIFO, ...; errors such as ENOSPC (``/dev/full``) are reported, not lost."""
    try:
        with open(path, "wb") as handle:
            handle.write(data)
    except BrokenPipeError:
        raise  # a reader that stopped early (``-o /dev/stdout | head``): the CLI ends quietly
    except OSError as exc:
        raise BpefstError(f"cannot write {path}: {exc.strerror or exc}") from None


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name one file: the same inode when both exist (hard and symbolic links
    included), else the same resolved path."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def refuse_overwriting_inputs(output: str | os.PathLike, inputs: Iterable[str | os.PathLike | None]) -> None:
    """Fail when writing ``output`` would replace one of ``inputs`` (``-`` and None are skipped).

    Only an existing regular output can be an input: a missing file is not one
    yet, and ``/dev/stdin`` and ``/dev/stdout`` may well be the same terminal.
    """
    if not os.path.isfile(output):
        return
    for source in inputs:
        if source is not None and str(source) not in ("", "-") and os.path.exists(source) and same_file(output, source):
            raise BpefstError(f"{output} is also an input ({source}); write the result elsewhere")


def check_writable(path: str | os.PathLike, name: str = "the output") -> None:
    """Fail before any work is done, and before any other output is written, when ``path`` cannot be written.

    ``name`` says which option gave the path (``the output``, ``--dot``).
    """
    if not str(path):
        raise BpefstError(f"{name} path is empty")
    if os.path.isdir(path):
        raise BpefstError(f"{path} is a directory; {name} must be a file name")
    if _is_special(path):
        return  # written in place
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    parent = target.parent
    if not parent.is_dir():
        raise BpefstError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise BpefstError(f"cannot write {path}: directory {parent} is not writable")


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def pack_artifact(kind: str, schema: int, fingerprint: str, body: dict[str, Any]) -> bytes:
    """The artifact's bytes: a header map whose last entry is the body, with the body's checksum in the header."""
    if kind not in KINDS:
        raise ValueError(f"unknown artifact kind {kind!r}")
    packed_body = msgpack.packb(body, use_bin_type=True)
    header = {"format": FORMAT_NAME, "kind": kind, "schema": schema, "fingerprint": fingerprint,
              "checksum": hashlib.sha256(packed_body).hexdigest()}
    # A map of len(header) + 1 entries, written by hand so that the body's bytes go in verbatim, last.
    parts = [_map_header(len(header) + 1)]
    parts.extend(msgpack.packb(x, use_bin_type=True) for item in header.items() for x in item)
    parts.append(msgpack.packb("body"))
    parts.append(packed_body)
    return b"".join(parts)


def _map_header(size: int) -> bytes:
    """msgpack's fixmap header (a map of fewer than 16 entries)."""
    assert 0 <= size < 16
    return bytes([0x80 | size])


def write_artifact(path: str | os.PathLike, kind: str, schema: int, fingerprint: str, body: dict[str, Any]) -> None:
    """Serialize ``body`` under a header and write it atomically to ``path``."""
    atomic_write_bytes(path, pack_artifact(kind, schema, fingerprint, body))


def artifact_bytes(kind: str, schema: int, fingerprint: str, body: dict[str, Any]) -> bytes:
    """The serialized artifact, for sending it elsewhere (to a worker process) rather than to a file."""
    return pack_artifact(kind, schema, fingerprint, body)


def head_kind(path: str | os.PathLike, kinds: Iterable[str] = KINDS) -> str | None:
    """Which of ``kinds`` the file's first bytes name, without reading the rest (None if none).

    The header is written before the body, so its kind is among the first
    hundred bytes; a cheap look for loaders that take several kinds.  The
    loader still checks the whole header and the checksum.
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(96)
    except OSError:
        return None
    if not head[:1] or not 0x80 <= head[0] <= 0x8F or FORMAT_NAME.encode() not in head:
        return None
    return next((kind for kind in kinds if msgpack.packb(kind) in head), None)


def peek_kind(path: str | os.PathLike) -> str | None:
    """The artifact kind of ``path``, or None when it is not a bpefst artifact (or unreadable)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(64)
    except OSError:
        return None
    if not head[:1] or not 0x80 <= head[0] <= 0x8F or FORMAT_NAME.encode() not in head:
        return None
    return read_header_and_body(path)["kind"]


def read_header_and_body(path: str | os.PathLike) -> dict[str, Any]:
    """Read an artifact document without checking its kind (for ``bpefst info``)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None
    note_input(path)
    return parse_artifact(raw, str(path))


def parse_artifact(raw: bytes, name: str) -> dict[str, Any]:
    """Decode an artifact held in memory, check its header's shape and the body's checksum."""
    try:
        document, body_bytes = _unpack_document(raw)
    except Exception as exc:  # msgpack raises several unrelated types on bad data
        raise ArtifactError(f"{name}: not a bpefst artifact (truncated or corrupted msgpack: {type(exc).__name__})") from None
    if document.get("format") != FORMAT_NAME:
        raise ArtifactError(f"{name}: not a bpefst artifact (missing header)")
    for field, kind in (("kind", str), ("schema", int), ("fingerprint", str), ("body", dict)):
        if not isinstance(document.get(field), kind) or isinstance(document.get(field), bool):
            raise ArtifactError(f"{name}: corrupted artifact header (field {field!r})")
    checksum = document.get("checksum")
    if checksum is None:
        raise ArtifactError(f"{name}: this {document['kind']} artifact has no integrity checksum (written by an older "
                            f"bpefst); rebuild it with this one (bpefst convert / compile / promote)")
    if not isinstance(checksum, str) or hashlib.sha256(body_bytes).hexdigest() != checksum:
        raise ArtifactError(f"{name}: corrupted artifact (the body does not match its checksum)")
    return document


def _unpack_document(raw: bytes) -> tuple[dict[str, Any], memoryview]:
    """The top-level map, and the exact bytes its ``body`` value was decoded from."""
    unpacker = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(raw), 1))
    unpacker.feed(raw)
    document: dict[str, Any] = {}
    body_bytes = memoryview(b"")
    for _ in range(unpacker.read_map_header()):
        key = unpacker.unpack()
        start = unpacker.tell()
        document[key] = unpacker.unpack()
        if key == "body":
            body_bytes = memoryview(raw)[start : unpacker.tell()]
    if unpacker.tell() != len(raw):
        raise ValueError("extra data after the artifact")
    return document, body_bytes


def read_artifact(path: str | os.PathLike, kind: str, schema: int, fingerprint: str | None = None) -> dict[str, Any]:
    """Load an artifact and check kind, schema version and (optionally) fingerprint.

    Returns the whole document; callers read ``document["body"]``.
    """
    document = read_header_and_body(path)
    check_header(document, str(path), kind, schema, fingerprint)
    return document


def check_header(document: dict[str, Any], name: str, kind: str, schema: int, fingerprint: str | None = None) -> None:
    """Raise ArtifactError unless the header matches what the caller expects."""
    if document["kind"] != kind:
        raise ArtifactError(f"{name}: expected a {kind} artifact, found a {document['kind']} artifact")
    if document["schema"] != schema:
        raise ArtifactError(
            f"{name}: {kind} artifact has schema version {document['schema']}, this bpefst reads version {schema}"
        )
    if fingerprint is not None and document["fingerprint"] != fingerprint:
        raise ArtifactError(
            f"{name}: built from tokenizer {document['fingerprint'][:16]}, "
            f"but the tokenizer given is {fingerprint[:16]}"
        )


def repack(document: dict[str, Any]) -> bytes:
    """Bytes of a decoded ``document`` (header + body) with a fresh checksum: for tools and tests that edit artifacts."""
    return pack_artifact(document["kind"], document["schema"], document["fingerprint"], document["body"])
