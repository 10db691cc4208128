"""The base alphabets a pattern is compiled over.

An :class:`Alphabet` tells the compiler how one character of the pattern is
spelled in a tokenizer's base symbols.  The compiler works over *raw
symbols* (bytes for :class:`ByteAlphabet`, code points for
:class:`CharAlphabet`) and hands the finished raw DFA to :meth:`Alphabet.finish`,
which relabels it to symbol ids.

**Byte-level** (:class:`ByteAlphabet`): a character is its UTF-8 encoding;
the default symbols are the byte values 0..255, or the ids of the 256
single-byte tokens of a model (:meth:`ByteAlphabet.from_model`).

**Character-level** (:class:`CharAlphabet`): a character ``c`` is the symbol
whose text is ``c``; symbols whose text is longer are ignored, except for the
end-of-word rule below.  A character with no symbol cannot be spelled, so a
branch of the pattern that needs it is empty.

**End-of-word suffix** (``CharAlphabet(..., end_of_word_suffix="▁")``, as in
the WikiText tokenizers, whose base symbols include ``"s"`` and ``"s▁"``):
the pattern describes **one word**, and a matched string ``c1 ... cn`` (n >= 1)
is spelled ``c1 ... c(n-1) (cn + suffix)`` -- every character but the last
with its plain symbol, the last with its suffixed symbol.  The empty string
is not a word and is never accepted.  To match text with several words,
concatenate the word automata yourself (the tokenizer pre-splits text into
words before BPE anyway).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from typing import TYPE_CHECKING, Mapping

from ..automata import DFA, NFA, canonical, map_symbols, minimize, thompson
from ..errors import BpefstError
from . import charsets
from .utf8 import utf8_dfa

if TYPE_CHECKING:
    from ..tokenizer.model import BPEModel


class Alphabet(ABC):
    """How pattern characters become base symbols; see the module docstring."""

    @abstractmethod
    def literal(self, codepoint: int) -> NFA:
        """An NFA over raw symbols for exactly this character (empty if unspellable)."""

    @abstractmethod
    def charset(self, source: str, flags: str) -> NFA:
        """An NFA over raw symbols for one character matched by the regex atom ``source``."""

    def spelling(self, codepoint: int) -> bytes | tuple[int, ...] | None:
        """The raw symbols of this character when :meth:`literal` is their chain, one symbol after the
        other (the compiler writes a run of such characters as one chain); None where it is not."""
        return None

    @abstractmethod
    def finish(self, raw: DFA) -> DFA:
        """The minimal DFA over symbol ids for a minimal DFA over raw symbols."""

    def relabelling_table(self) -> bytes | None:
        """When :meth:`finish` only relabels raw symbols (and drops those without an id): the id of each
        raw symbol as packed int32, -1 for none (the compiled core relabels with it); else None."""
        return None

    @abstractmethod
    def encode(self, text: str) -> list[int] | None:
        """The symbol ids spelling ``text`` (with the alphabet's conventions), or None if unspellable."""

    @property
    @abstractmethod
    def symbols(self) -> frozenset[int]:
        """All symbol ids a compiled automaton may use."""


class ByteAlphabet(Alphabet):
    """Bytes: characters are spelled in UTF-8.

    ``byte_ids`` maps byte values to symbol ids (default: the identity on
    0..255); bytes missing from the map cannot be spelled.
    """

    def __init__(self, byte_ids: Mapping[int, int] | None = None) -> None:
        self._table: bytes | None = None  # relabelling_table(), made once
        if byte_ids is None:
            self.byte_ids: dict[int, int] | None = None
        else:
            self.byte_ids = {}
            for b, sid in byte_ids.items():
                if not (isinstance(b, int) and 0 <= b <= 255 and isinstance(sid, int) and sid >= 0):
                    raise BpefstError(f"byte alphabet: bad entry {b!r} -> {sid!r}")
                self.byte_ids[b] = sid
            if len(set(self.byte_ids.values())) != len(self.byte_ids):
                raise BpefstError("byte alphabet: two bytes share a symbol id")
            if all(b == sid for b, sid in self.byte_ids.items()) and len(self.byte_ids) == 256:
                self.byte_ids = None

    @classmethod
    def from_model(cls, model: "BPEModel") -> "ByteAlphabet":
        """The single-byte tokens of a byte-level model."""
        if model.level != "byte":
            raise BpefstError("ByteAlphabet.from_model needs a byte-level tokenizer")
        return cls({model.vocab[i][0]: i for i in model.base_ids})

    def __repr__(self) -> str:
        return "ByteAlphabet()" if self.byte_ids is None else f"ByteAlphabet({len(self.byte_ids)} bytes mapped)"

    @property
    def symbols(self) -> frozenset[int]:
        return frozenset(range(256)) if self.byte_ids is None else frozenset(self.byte_ids.values())

    def literal(self, codepoint: int) -> NFA:
        if charsets.SURROGATES[0] <= codepoint <= charsets.SURROGATES[1]:
            return thompson.empty()
        return thompson.literal(chr(codepoint).encode("utf-8"))

    def spelling(self, codepoint: int) -> bytes | None:
        if charsets.SURROGATES[0] <= codepoint <= charsets.SURROGATES[1]:
            return None
        return chr(codepoint).encode("utf-8")

    def charset(self, source: str, flags: str) -> NFA:
        return NFA.from_dfa(utf8_dfa(charsets.scalar_ranges(source, flags)))

    def finish(self, raw: DFA) -> DFA:
        if self.byte_ids is None:
            return raw
        byte_ids = self.byte_ids
        if len(byte_ids) == 256:
            # one distinct id per byte: the relabelled DFA is as minimal and trim as ``raw``, and only needs
            # numbering for the ids' order (what minimize would give, without its quotient)
            try:
                rows = [{byte_ids[b]: r for b, r in row.items()} for row in raw.transitions]
            except KeyError:  # a symbol that is no byte (an automaton read from a file) loses its arcs, below
                pass
            else:
                return canonical(DFA(rows, raw.start, raw.finals, check=False))
        return minimize(map_symbols(raw, byte_ids.get))  # bytes without an id drop their arcs: trimmed again

    def relabelling_table(self) -> bytes:
        if self._table is None:
            ids = self.byte_ids if self.byte_ids is not None else {b: b for b in range(256)}
            self._table = array("i", (ids.get(b, -1) for b in range(256))).tobytes()
        return self._table

    def encode(self, text: str) -> list[int] | None:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return None
        if self.byte_ids is None:
            return list(data)
        out = [self.byte_ids.get(b) for b in data]
        return None if None in out else out  # type: ignore[return-value]


class CharAlphabet(Alphabet):
    """Characters: ``symbol_ids`` maps symbol text to id; see the module docstring."""

    def __init__(self, symbol_ids: Mapping[str, int], end_of_word_suffix: str | None = None) -> None:
        if end_of_word_suffix == "":
            end_of_word_suffix = None
        self.end_of_word_suffix = end_of_word_suffix
        self.plain: dict[str, int] = {}
        self.marked: dict[str, int] = {}
        for text, sid in symbol_ids.items():
            if not isinstance(text, str) or not isinstance(sid, int) or sid < 0:
                raise BpefstError(f"character alphabet: bad entry {text!r} -> {sid!r}")
            if len(text) == 1:
                self.plain[text] = sid
            elif end_of_word_suffix and len(text) == 1 + len(end_of_word_suffix) and text.endswith(end_of_word_suffix):
                self.marked[text[0]] = sid
        ids = list(self.plain.values()) + list(self.marked.values())
        if len(set(ids)) != len(ids):
            raise BpefstError("character alphabet: two symbols share an id")
        self.domain = frozenset(self.plain) | frozenset(self.marked)

    @classmethod
    def from_model(cls, model: "BPEModel") -> "CharAlphabet":
        """The base symbols of a character-level model, with its end-of-word suffix."""
        if model.level != "char":
            raise BpefstError("CharAlphabet.from_model needs a character-level tokenizer")
        return cls({model.vocab[i]: i for i in model.base_ids}, model.end_of_word_suffix)  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"CharAlphabet({len(self.plain)} plain, {len(self.marked)} suffixed, suffix={self.end_of_word_suffix!r})"

    @property
    def symbols(self) -> frozenset[int]:
        return frozenset(self.plain.values()) | frozenset(self.marked.values())

    def literal(self, codepoint: int) -> NFA:
        if chr(codepoint) in self.domain:
            return thompson.symbols((codepoint,))
        return thompson.empty()

    def spelling(self, codepoint: int) -> tuple[int] | None:
        return (codepoint,) if chr(codepoint) in self.domain else None

    def charset(self, source: str, flags: str) -> NFA:
        return thompson.symbols(ord(c) for c in charsets.matching_chars(source, flags, self.domain))

    def finish(self, raw: DFA) -> DFA:
        plain = {ord(c): sid for c, sid in self.plain.items()}
        if not self.end_of_word_suffix:
            return minimize(map_symbols(raw, lambda cp: plain.get(cp)))
        marked = {ord(c): sid for c, sid in self.marked.items()}
        accept = raw.num_states  # a new final state with no arcs: the word is over
        rows: list[dict[int, int]] = []
        for row in raw.transitions:
            new_row: dict[int, int] = {}
            for cp, target in row.items():
                if cp in plain:
                    new_row[plain[cp]] = target
                if target in raw.finals and cp in marked:
                    new_row[marked[cp]] = accept
            rows.append(new_row)
        rows.append({})
        return minimize(DFA(rows, raw.start, frozenset((accept,)), check=False))

    def encode(self, text: str) -> list[int] | None:
        if not self.end_of_word_suffix:
            out = [self.plain.get(c) for c in text]
            return None if None in out else out  # type: ignore[return-value]
        if not text:
            return None
        out = [self.plain.get(c) for c in text[:-1]]
        out.append(self.marked.get(text[-1]))
        return None if None in out else out  # type: ignore[return-value]


def alphabet_for(model: "BPEModel") -> Alphabet:
    """The base alphabet of a model: bytes for byte-level, characters for character-level (made once per model)."""
    return model.base_alphabet
