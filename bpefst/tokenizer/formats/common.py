"""Small file helpers shared by the format readers."""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from typing import Any, Iterable

from ... import zstd
from ...artifact import note_input
from ...errors import BpefstError
from ..model import MAX_ID

ACCEPTED_FORMATS = "a bpefst artifact, an HF tokenizer.json, a GPT-2 vocab.json + merges.txt, a tiktoken rank file or a GGUF model"


def read_raw(path: str | os.PathLike) -> bytes:
    """File bytes, transparently decompressed (gzip, zstd: by their magic bytes); BpefstError on any I/O problem."""
    try:
        if os.path.isdir(path):
            raise BpefstError(f"{path} is a directory, not a file")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None
    note_input(path)
    if data[:2] == b"\x1f\x8b":
        data = _gunzip(data, path)
    elif data[:4] == zstd.MAGIC:
        data = _unzstd(data, path)
    return data


# The largest tokenizer files in use are tens of megabytes (o200k's rank file: 3.6 MB); a
# gzip or zstd file of a few hundred kilobytes can expand to gigabytes (a "decompression bomb").
DEFAULT_MAX_DECOMPRESSED = 64 << 20
MAX_DECOMPRESSED_VARIABLE = "BPEFST_MAX_DECOMPRESSED_MB"


def max_decompressed() -> int:
    """The cap on a compressed tokenizer's size once decompressed: 64 MiB, or $BPEFST_MAX_DECOMPRESSED_MB."""
    value = os.environ.get(MAX_DECOMPRESSED_VARIABLE)
    if value is None:
        return DEFAULT_MAX_DECOMPRESSED
    if not value.isdigit() or not 0 < len(value) <= 9 or int(value) == 0:
        raise BpefstError(f"{MAX_DECOMPRESSED_VARIABLE} must be a positive number of megabytes, found {value[:20]!r}")
    return int(value) << 20


def _gunzip(data: bytes, path: str | os.PathLike) -> bytes:
    """Decompress in a stream that stops one byte past the cap, so a bomb costs the cap, not its size."""
    cap = max_decompressed()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            out = stream.read(cap + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise BpefstError(f"{path}: corrupted gzip data ({exc})") from None
    return _capped(out, cap, path)


def _unzstd(data: bytes, path: str | os.PathLike) -> bytes:
    """As :func:`_gunzip`, for zstd (the optional ``zstandard`` package, see :mod:`bpefst.zstd`)."""
    cap = max_decompressed()
    stream = zstd.ZstdReader(io.BytesIO(data), str(path))
    pieces, size = [], 0
    while size <= cap:
        piece = stream.read1(cap + 1 - size)
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
    return _capped(b"".join(pieces), cap, path)


def _capped(out: bytes, cap: int, path: str | os.PathLike) -> bytes:
    if len(out) > cap:
        raise BpefstError(f"{path}: decompresses to more than {cap >> 20:,} MiB, more than any tokenizer needs; "
                          f"set {MAX_DECOMPRESSED_VARIABLE} to raise the limit")
    return out


def read_text(path: str | os.PathLike) -> str:
    data = read_raw(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BpefstError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None


# Longer integers than Python converts by default (sys.get_int_max_str_digits()); no field
# of any tokenizer file needs one, and int() would refuse it with a traceback.
MAX_JSON_INT_DIGITS = 4300


class _HugeInteger(Exception):
    def __init__(self, text: str):
        self.text = text


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise _HugeInteger(text)
    return int(text)


def parse_any_json(raw: bytes, path: str | os.PathLike) -> Any:
    """Any JSON value from raw bytes; BpefstError unless it is valid UTF-8 JSON."""
    try:
        return json.loads(raw.decode("utf-8"), parse_int=_json_int)
    except _HugeInteger as huge:
        line = raw[: max(raw.find(huge.text.encode()), 0)].count(b"\n") + 1
        raise BpefstError(f"{path}: line {line}: an integer of {len(huge.text.lstrip('-')):,} digits, too large for any "
                          f"field") from None
    except UnicodeDecodeError as exc:
        raise BpefstError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BpefstError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise BpefstError(f"{path}: JSON nested too deeply") from None


def parse_json(raw: bytes, path: str | os.PathLike) -> dict:
    """A JSON object from raw bytes; BpefstError unless it is valid UTF-8 JSON holding an object."""
    doc = parse_any_json(raw, path)
    if not isinstance(doc, dict):
        raise BpefstError(f"{path}: expected a JSON object, found {json_kind(doc)}")
    return doc


def json_kind(value: Any) -> str:
    """How a message names a JSON value's type: 'a string', 'null', ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    kinds = {dict: "an object", list: "an array", str: "a string", int: "an integer", float: "a number"}
    return kinds.get(type(value), type(value).__name__)


def check_id(value: Any, what: str, name: str) -> int:
    """``value`` as a token id: an integer in 0..2**32-1 (what HF and our uint32 tables hold)."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise BpefstError(f"{name}: {what} has id {value!r}, not an integer")
    if not 0 <= value <= MAX_ID:
        raise BpefstError(f"{name}: {what} has id {value}, outside 0..{MAX_ID}")
    return value


def ids_to_tokens(pairs: Iterable[tuple[Any, int]], name: str) -> dict[int, Any]:
    """``id -> token`` from ``(token, id)`` pairs, refusing an id given to two tokens.

    HF accepts such a file but then encodes both tokens as the same id, which no
    decoder can undo; we cannot even hold it (our vocabulary is keyed by id).
    """
    tokens: dict[int, Any] = {}
    for token, token_id in pairs:
        if token_id in tokens and tokens[token_id] != token:
            raise BpefstError(f"{name}: id {token_id} is given to two tokens ({tokens[token_id]!r} and {token!r})")
        tokens[token_id] = token
    return tokens
