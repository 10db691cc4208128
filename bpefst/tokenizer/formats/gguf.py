"""The BPE tokenizer inside a GGUF model file (llama.cpp's format).

A GGUF file is a header, a list of typed key-value pairs (the metadata), the
tensor descriptions and the weights.  The tokenizer lives in the metadata
(``tokenizer.ggml.*``), so we read the header and the key-value pairs and stop
there: the weights, which are most of the file, are never read.  We parse the
metadata ourselves rather than with the ``gguf`` package: the format of the
metadata is small and stable (version 2 and 3: little-endian, 64-bit lengths),
a reader of our own can bound every length by the bytes left in the file (so a
truncated or corrupted file is a one-line message, not a ``MemoryError`` or a
``struct`` traceback), and bpefst keeps its four runtime dependencies.

What we take (llama.cpp's ``llama-vocab.cpp`` gives these keys their meaning):

* ``tokenizer.ggml.model`` must be ``"gpt2"`` (byte-level BPE; ``"llama"`` is
  SentencePiece, ``"bert"`` WordPiece, ... refused with their name);
* ``tokenizer.ggml.tokens``: token ``i`` is id ``i``, spelled with GPT-2's
  byte-to-unicode table when its type is normal, as raw text otherwise;
* ``tokenizer.ggml.token_type``: control tokens are special tokens (split off
  only when allowed, as ``Llama.tokenize(..., special=True)`` does); unused
  tokens are not in the vocabulary; user-defined tokens are refused (llama.cpp
  splits them off even in ordinary text, which no bpefst encoding does);
* ``tokenizer.ggml.merges``: ``"left right"`` strings in rank order;
* ``tokenizer.ggml.pre``: the pre-tokenizer, by name (:data:`PRE_TOKENIZERS`);
  an unknown name is refused with that name.

A byte with no token of its own (SmolLM2 lacks 21) is a symbol that never
merges in llama.cpp, left out of the ids: the bytes on either side of it never
merge, where HF's BPE drops it first and lets them merge.  The model we return
says so (``missing_bytes="split"``, only when some byte is missing: with all
256 the two readings are the same and the model's fingerprint is that of the
same tokenizer read from any other format), and every bpefst encoder then cuts
the chunk at such a byte (:mod:`..byte_barriers`).  Canonical ids never hold
such a byte (no merge can build a token that holds one), so what is canonical
is unchanged: the canonical automaton, validation and promotion are those of
the same merges read from HF.
"""

from __future__ import annotations

import os
import struct
from typing import Any, BinaryIO

from ...artifact import note_input
from ...errors import BpefstError
from ..byte_unicode import decode_text
from ..model import BPEModel
from ..pretokenize import FROM_FILE, PRESETS, PatternOverride

MAGIC = b"GGUF"

# llama.cpp's pre-tokenizer names -> our pattern.  llama.cpp runs a list of
# regexes one after another (each cuts the pieces the previous one left).  These
# are the names it gives (in llama-vocab.cpp, as llama-cpp-python 0.3.36 vendors
# it) exactly GPT-2's pattern, or ["\p{N}", GPT-2's pattern] (every digit a piece
# of its own, then GPT-2 inside the rest: our ``gpt2-digits``, one findall
# pattern with the same chunks), with no other flag that changes tokenization.
# Any other name is refused, by name.
_GPT2_NAMES = ("gpt-2", "phi-2", "mpt", "olmo", "mellum", "exaone4")
_GPT2_DIGITS_NAMES = ("smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b", "mellum2")
PRE_TOKENIZERS: dict[str, str] = {
    **{name: PRESETS["gpt2"] for name in _GPT2_NAMES},
    **{name: PRESETS["gpt2-digits"] for name in _GPT2_DIGITS_NAMES},
}

# token types (llama.cpp's llama_token_type)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# value types: struct format of the scalars, 8 = string, 9 = array
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_KEYS_WANTED = "tokenizer."
_LENGTH = struct.Struct("<Q")
# no real file has more metadata keys than this; a corrupted count must not make us loop for hours
_MAX_KEYS = 1 << 16


def is_gguf(path: str | os.PathLike) -> bool:
    """Whether the file starts with GGUF's magic (read without reading the rest)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(4) == MAGIC
    except OSError:
        return False


def read(path: str | os.PathLike, pattern: PatternOverride = FROM_FILE) -> BPEModel:
    """The tokenizer of a GGUF file as a :class:`BPEModel` (see the module docstring)."""
    metadata = read_metadata(path)
    try:
        return _model(metadata, pattern)
    except BpefstError as exc:
        raise BpefstError(f"{path}: {exc}") from None


def read_metadata(path: str | os.PathLike, prefix: str = _KEYS_WANTED) -> dict[str, Any]:
    """The metadata keys of a GGUF file that start with ``prefix`` (others are skipped, not kept)."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            metadata = _Reader(handle, size, str(path)).metadata(prefix)
    except OSError as exc:
        raise BpefstError(f"cannot read {path}: {exc.strerror or exc}") from None
    note_input(path)
    return metadata


class _Reader:
    """Reads GGUF values from a file in blocks, checking every length against the bytes left."""

    BLOCK = 1 << 20

    def __init__(self, handle: BinaryIO, size: int, name: str):
        self.handle, self.size, self.name = handle, size, name
        self.buffer, self.pos, self.base = b"", 0, 0  # self.buffer[0] is at file offset self.base

    def fail(self, what: str) -> BpefstError:
        return BpefstError(f"{self.name}: {what}, at byte {self.base + self.pos:,}")

    def ensure(self, n: int) -> None:
        """Make the next ``n`` bytes readable from the buffer."""
        if self.pos + n <= len(self.buffer):
            return
        if n > self.left():
            raise self.fail("truncated GGUF file (the metadata ends early)")
        rest = self.buffer[self.pos:]
        self.base += self.pos
        self.buffer, self.pos = rest + self.handle.read(max(n - len(rest), self.BLOCK)), 0
        if len(self.buffer) < n:
            raise self.fail("truncated GGUF file (the metadata ends early)")

    def take(self, n: int) -> bytes:
        self.ensure(n)
        self.pos += n
        return self.buffer[self.pos - n:self.pos]

    def scalar(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        self.ensure(size)
        self.pos += size
        return struct.unpack_from(fmt, self.buffer, self.pos - size)[0]

    def left(self) -> int:
        return self.size - self.base - self.pos

    def string(self) -> str:
        n = self.scalar("<Q")
        if n > self.left():
            raise self.fail(f"a string of {n:,} bytes, longer than the rest of the file (truncated or corrupted GGUF)")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail("a metadata string that is not UTF-8 (corrupted GGUF)") from None

    def strings(self, count: int) -> list[str]:
        """``count`` strings: the token and merge lists, 50k-200k each, so the loop is kept tight."""
        unpack, found = _LENGTH.unpack_from, []
        for _ in range(count):
            if self.pos + 8 > len(self.buffer):
                self.ensure(8)
            n = unpack(self.buffer, self.pos)[0]
            self.pos += 8
            if self.pos + n > len(self.buffer):
                if n > self.left():
                    raise self.fail(f"a string of {n:,} bytes, longer than the rest of the file (truncated or corrupted GGUF)")
                self.ensure(n)
            found.append(self.buffer[self.pos:self.pos + n])
            self.pos += n
        try:
            return [data.decode("utf-8") for data in found]
        except UnicodeDecodeError:
            raise self.fail("a metadata string that is not UTF-8 (corrupted GGUF)") from None

    def metadata(self, prefix: str) -> dict[str, Any]:
        magic = self.take(4) if self.size >= 4 else b""
        if magic != MAGIC:
            raise BpefstError(f"{self.name}: not a GGUF file")
        version = self.scalar("<I")
        if version not in (2, 3):
            what = "big-endian or corrupted" if version > 0xFFFF else "unsupported"
            raise BpefstError(f"{self.name}: GGUF version {version} ({what}; bpefst reads versions 2 and 3)")
        self.scalar("<Q")  # tensor count: the tensors are not read
        count = self.scalar("<Q")
        if count > _MAX_KEYS:
            raise self.fail(f"{count:,} metadata keys (corrupted GGUF)")
        found = {}
        for _ in range(count):
            key = self.string()
            kind = self.scalar("<I")
            keep = key.startswith(prefix)
            value = self.value(kind, keep)
            if keep:
                found[key] = value
        return found

    def value(self, kind: int, keep: bool) -> Any:
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            return self.array(keep)
        raise self.fail(f"unknown metadata value type {kind} (corrupted GGUF)")

    def array(self, keep: bool) -> list | None:
        kind = self.scalar("<I")
        count = self.scalar("<Q")
        if kind in _SCALARS:
            width = struct.calcsize(_SCALARS[kind])
            if count * width > self.left():
                raise self.fail(f"an array of {count:,} values, longer than the rest of the file (truncated or corrupted GGUF)")
            data = self.take(count * width)
            return list(struct.unpack(f"<{count}{_SCALARS[kind][1]}", data)) if keep else None
        if kind == _STRING:
            if count * 8 > self.left():
                raise self.fail(f"an array of {count:,} strings, longer than the rest of the file (truncated or corrupted GGUF)")
            strings = self.strings(count)
            return strings if keep else None
        if kind == _ARRAY:
            if count * 12 > self.left():
                raise self.fail(f"an array of {count:,} arrays, longer than the rest of the file (truncated or corrupted GGUF)")
            items = [self.array(keep) for _ in range(count)]
            return items if keep else None
        raise self.fail(f"unknown array element type {kind} (corrupted GGUF)")


def _field(metadata: dict[str, Any], key: str, kind: type, required: bool = True) -> Any:
    value = metadata.get(key)
    if value is None:
        if required:
            raise BpefstError(f"no {key} in the metadata (a GGUF file without a tokenizer, or with a truncated one)")
        return None
    if not isinstance(value, kind) or (kind is list and not all(isinstance(v, (str, int)) for v in value[:1])):
        raise BpefstError(f"{key} has the wrong type ({type(value).__name__})")
    return value


def _model(metadata: dict[str, Any], pattern: PatternOverride) -> BPEModel:
    model = _field(metadata, "tokenizer.ggml.model", str)
    if model != "gpt2":
        raise BpefstError(f"tokenizer.ggml.model is {model!r}; bpefst reads byte-level BPE tokenizers ('gpt2') only")
    pre = _field(metadata, "tokenizer.ggml.pre", str, required=False) or "default"
    if pattern is FROM_FILE:
        if pre not in PRE_TOKENIZERS:
            raise BpefstError(f"unknown pre-tokenizer {pre!r} (tokenizer.ggml.pre; bpefst knows {', '.join(sorted(PRE_TOKENIZERS))}); "
                              f"pass --pattern (pattern= in Python) to choose one")
        pattern = PRE_TOKENIZERS[pre]
    tokens = _field(metadata, "tokenizer.ggml.tokens", list)
    types = _field(metadata, "tokenizer.ggml.token_type", list, required=False) or [NORMAL] * len(tokens)
    merge_lines = _field(metadata, "tokenizer.ggml.merges", list)
    if len(types) != len(tokens):
        raise BpefstError(f"tokenizer.ggml.token_type has {len(types):,} entries for {len(tokens):,} tokens")
    if not all(isinstance(t, str) for t in tokens) or not all(isinstance(m, str) for m in merge_lines):
        raise BpefstError("tokenizer.ggml.tokens and tokenizer.ggml.merges must hold strings")
    vocab, specials = _tokens(tokens, types)
    by_text = {text: i for i, text in enumerate(tokens) if i in vocab}
    merges = []
    for rank, line in enumerate(merge_lines):
        parts = line.split(" ")
        if len(parts) != 2 or parts[0] not in by_text or parts[1] not in by_text:
            raise BpefstError(f"tokenizer.ggml.merges[{rank}] = {line[:60]!r} is not two tokens of the vocabulary")
        merges.append((by_text[parts[0]], by_text[parts[1]]))
    single = {token for token in vocab.values() if len(token) == 1}
    missing = "split" if len(single) < 256 else "drop"  # llama.cpp's reading of a missing byte (module docstring)
    return BPEModel(level="byte", vocab=vocab, merges=merges, specials=specials, pattern=pattern, missing_bytes=missing)


def _tokens(tokens: list[str], types: list[int]) -> tuple[dict[int, bytes], dict[str, int]]:
    """Ordinary tokens ``id -> bytes`` and control tokens ``text -> id``."""
    vocab: dict[int, bytes] = {}
    specials: dict[str, int] = {}
    seen: dict[bytes, int] = {}
    for i, (text, kind) in enumerate(zip(tokens, types)):
        if kind in (NORMAL, BYTE):
            token = vocab[i] = decode_text(text, where=f"tokenizer.ggml.tokens[{i}]")
            if seen.setdefault(token, i) != i:  # the merges name tokens by text: which one would they mean?
                raise BpefstError(f"tokens {seen[token]} and {i} are both {text[:40]!r}")
        elif kind == CONTROL:
            if not text or text in specials:
                raise BpefstError(f"control token {i} ({text!r}) is empty or repeats another")
            specials[text] = i
        elif kind == USER_DEFINED:
            raise BpefstError(f"token {i} ({text!r}) is user-defined: llama.cpp splits such tokens off even in "
                              f"ordinary text, which bpefst does not model yet")
        elif kind not in (UNKNOWN, UNUSED):
            raise BpefstError(f"token {i} ({text!r}) has unknown type {kind}")
    return vocab, specials
