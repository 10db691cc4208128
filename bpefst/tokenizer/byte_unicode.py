"""GPT-2's reversible map between bytes and printable Unicode characters.

GPT-2 (Radford et al. 2019) stores byte-level tokens as text: each of the 256
bytes is assigned a printable character so that ``vocab.json`` and
``merges.txt`` contain no whitespace or control characters.  Printable Latin-1
bytes map to themselves; the other 68 bytes map, in order, to U+0100, U+0101,
...  HF ``tokenizers`` (ByteLevel) uses the same table, so it is a fact of the
file formats, not a choice of ours.
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import BpefstError


@lru_cache(maxsize=1)
def byte_to_char() -> tuple[str, ...]:
    """The printable character that stands for each byte 0..255."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table: dict[int, int] = {b: b for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = 256 + extra
            extra += 1
    return tuple(chr(table[b]) for b in range(256))


@lru_cache(maxsize=1)
def char_to_byte() -> dict[str, int]:
    return {c: b for b, c in enumerate(byte_to_char())}


def encode_bytes(data: bytes) -> str:
    """Bytes -> the GPT-2 printable spelling."""
    table = byte_to_char()
    return "".join(table[b] for b in data)


def decode_text(text: str, where: str = "token") -> bytes:
    """The GPT-2 printable spelling -> bytes; BpefstError on a character outside the table."""
    table = char_to_byte()
    try:
        return bytes(table[c] for c in text)
    except KeyError as exc:
        raise BpefstError(f"{where} {text!r} is not a byte-level token (character {exc.args[0]!r} is not in the GPT-2 byte table)") from None
