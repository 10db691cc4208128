"""Small GGUF files written for tests: a header and metadata, no tensors.

The writer follows the GGUF specification (version 3, little-endian) on its
own, so that the reader in :mod:`bpefst.tokenizer.formats.gguf` is checked
against the format, not against itself; llama.cpp's own reading of a real
model is the oracle in ``tests/test_gguf.py``.
"""

from __future__ import annotations

import struct

from bpefst.tokenizer import BPEModel
from bpefst.tokenizer.byte_unicode import encode_bytes


def _string(text: str) -> bytes:
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def _value(value) -> tuple[int, bytes]:
    """(GGUF type, encoded value): str -> string, bool -> bool, int -> int32, lists of either -> array."""
    if isinstance(value, bool):
        return 7, struct.pack("<?", value)
    if isinstance(value, int):
        return 5, struct.pack("<i", value)
    if isinstance(value, str):
        return 8, _string(value)
    if isinstance(value, list):
        kind = 8 if value and isinstance(value[0], str) else 5
        body = b"".join(_string(v) if kind == 8 else struct.pack("<i", v) for v in value)
        return 9, struct.pack("<IQ", kind, len(value)) + body
    raise TypeError(type(value))


def gguf_bytes(metadata: dict, tensor_count: int = 0) -> bytes:
    out = [b"GGUF", struct.pack("<IQQ", 3, tensor_count, len(metadata))]
    for key, value in metadata.items():
        kind, encoded = _value(value)
        out += [_string(key), struct.pack("<I", kind), encoded]
    return b"".join(out)


def tokenizer_metadata(model: BPEModel, pre: str = "gpt-2") -> dict:
    """The tokenizer.ggml.* keys llama.cpp's converter writes for a byte-level BPE model."""
    size = max([*model.vocab, *model.specials.values()]) + 1
    tokens, types = [f"<unused{i}>" for i in range(size)], [5] * size
    for i, token in model.vocab.items():
        tokens[i], types[i] = encode_bytes(token), 1
    for text, i in model.specials.items():
        tokens[i], types[i] = text, 3
    merges = [f"{encode_bytes(model.vocab[a])} {encode_bytes(model.vocab[b])}" for a, b in model.merges]
    return {"general.architecture": "llama", "tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre,
            "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": merges}
