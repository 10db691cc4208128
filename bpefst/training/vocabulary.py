"""The growing vocabulary of a training run: ids, tokens, and tie-break keys.

Ids follow the CS336 convention (003, "Building an initial vocabulary"):
special tokens first, then the base alphabet, then one id per new token in the
order merges create them.  The base alphabet is

* byte level: the 256 single bytes, in byte order (the CS336 reference), or,
  with the ``hf`` tie-break, in the order of their GPT-2 printable characters,
  which is the order HF ``tokenizers`` gives them (its trainer sorts the
  initial alphabet by character);
* character level: every character the corpus contains, sorted by code point
  (HF's ``compute_alphabet``), followed by the characters that end a word
  spelled with the end-of-word suffix (``"s▁"``), sorted the same way (HF
  creates those in hash order, which is not reproducible; sorting is).

Two merges may spell the same token (``a + bc`` and ``ab + c``).  As in HF's
trainer the second one reuses the existing id, so the vocabulary stays a set
of distinct tokens and its size only counts distinct tokens.
"""

from __future__ import annotations

from typing import Iterable, Union

from ..errors import BpefstError
from ..tokenizer.byte_unicode import byte_to_char

Token = Union[bytes, str]
TIE_BREAKS = ("lexicographic", "hf")


class Vocabulary:
    """Specials plus tokens with ids; grows by :meth:`add_merge`."""

    def __init__(self, level: str, specials: Iterable[str], base: Iterable[Token]):
        self.level = level
        self.specials: dict[str, int] = {}
        for text in specials:
            self.specials.setdefault(text, len(self.specials))
        self.tokens: list[Token | None] = [None] * len(self.specials)
        self.ids: dict[Token, int] = {}
        self.reverse_keys: list[str] = [""] * len(self.specials)
        for token in base:
            self._add_base(token)
        self.base_size = len(self.tokens)

    def __len__(self) -> int:
        """Number of distinct entries: specials and tokens (what ``--vocab-size`` counts)."""
        return len(self.tokens)

    def _add_base(self, token: Token) -> None:
        special_id = self.specials.get(token) if isinstance(token, str) else None
        if special_id is None:
            self._append(token)
            return
        # A character that is also a special token shares its id, as in HF.
        self.tokens[special_id] = token
        self.ids[token] = special_id
        self.reverse_keys[special_id] = reverse_order_key(token.encode("utf-8"))

    def _append(self, token: Token) -> int:
        token_id = len(self.tokens)
        self.tokens.append(token)
        self.ids[token] = token_id
        self.reverse_keys.append(reverse_order_key(token if isinstance(token, bytes) else token.encode("utf-8")))
        return token_id

    def add_merge(self, left: int, right: int) -> int:
        """The id of ``left + right``, creating the token if it is new."""
        token = self.tokens[left] + self.tokens[right]  # type: ignore[operator]
        existing = self.ids.get(token)
        return existing if existing is not None else self._append(token)

    def token_bytes(self, token_id: int) -> bytes:
        token = self.tokens[token_id]
        if token is None:
            raise KeyError(token_id)
        return token if isinstance(token, bytes) else token.encode("utf-8")


def reverse_order_key(data: bytes) -> str:
    """A string whose order is the reverse of the byte-string order of ``data``.

    Byte ``c`` becomes ``chr(256 - c)`` (1..256) and a terminator ``chr(257)``
    sorts after every byte, so a proper prefix (smaller as bytes) gets the larger
    key.  A min-heap on ``(-count, key(left), key(right))`` therefore pops the
    most frequent pair and, among equal counts, the lexicographically greatest
    pair of byte strings, the CS336 tie-break (003, "Finding the Most Frequent
    Pair": ``max(counts, key=lambda p: (counts[p], p[0], p[1]))``).
    """
    return "".join([chr(256 - c) for c in data]) + "\u0101"


def byte_vocabulary(specials: Iterable[str], tie_break: str) -> Vocabulary:
    """Specials, then the 256 bytes (in HF's character order for the ``hf`` tie-break)."""
    order = list(range(256))
    if tie_break == "hf":
        table = byte_to_char()
        order.sort(key=lambda b: table[b])
    return Vocabulary("byte", specials, [bytes([b]) for b in order])


def char_vocabulary(specials: Iterable[str], chunks: Iterable[str], suffix: str | None) -> Vocabulary:
    """Specials, the corpus's characters sorted, then the suffixed word-final characters."""
    chunks = list(chunks)
    characters: set[str] = set()
    for chunk in chunks:
        characters.update(chunk)
    base: list[str] = sorted(characters)
    if suffix:
        finals = sorted({chunk[-1] for chunk in chunks})
        known = set(base)
        base += [c + suffix for c in finals if c + suffix not in known]
    return Vocabulary("char", specials, base)


ALPHABETS = ("bytes", "chars")
DEFAULT_PATTERNS = {"bytes": "gpt2", "chars": "whitespace"}  # the pre-tokenization each alphabet trains with by default


def unique_specials(special_tokens: Iterable[str]) -> list[str]:
    """The special tokens in order, each once; an empty one is refused."""
    specials: list[str] = []
    for text in special_tokens:
        if not text:
            raise BpefstError("a special token is empty")
        if text not in specials:
            specials.append(text)
    return specials


def check_tie_break(tie_break: str) -> None:
    if tie_break not in TIE_BREAKS:
        raise BpefstError(f"unknown tie-break {tie_break!r} (expected one of {', '.join(TIE_BREAKS)})")
