"""Small file helpers shared by the format readers."""

from __future__ import annotations

import gzip
import json
import os

from ...errors import BpefstError


def read_raw(path: str | os.PathLike) -> bytes:
    """File bytes, transparently gunzipped; BpefstError on any I/O problem."""
    try:
        if os.path.isdir(path):
            raise BpefstError(f"{path} is a directory, not a file")
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise BpefstError(f"{path}: corrupted gzip data ({exc})") from None
    return data


def read_text(path: str | os.PathLike) -> str:
    data = read_raw(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BpefstError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None


def parse_json(raw: bytes, path: str | os.PathLike) -> dict:
    """A JSON object from raw bytes; BpefstError unless it is valid UTF-8 JSON holding an object."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BpefstError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BpefstError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict):
        raise BpefstError(f"{path}: expected a JSON object")
    return doc
