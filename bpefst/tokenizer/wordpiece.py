"""WordPiece (MaxMatch) tokenizers: the model, its readers, and the reference encoder.

A WordPiece model is a vocabulary ``token string -> id`` plus three settings:

* ``continuing_subword_prefix`` (``"##"`` for BERT): every piece of a word but
  the first is looked up with this prefix;
* ``unk_token`` (``"[UNK]"``): what a word becomes when MaxMatch cannot cover it;
* ``max_input_chars_per_word`` (100): longer words become ``unk_token`` outright.

**MaxMatch** (Devlin et al. 2019; Algorithm 1 of seed 000), the reference
encoder of one word, as HF ``tokenizers``' ``WordPiece`` model does it: from the
start of the word take the longest prefix that is a vocabulary entry (looked up
*literally* for the first piece, with the prefix for later pieces), emit it,
continue after it.  If at some position no entry matches, the whole word is
``unk_token``.  Lengths count Unicode code points.

The first piece is looked up as the literal string, so a vocabulary entry that
happens to start with the prefix (``"##s"``) can be a first piece of a word
that itself starts with ``##``; this is HF's behaviour, and BERT's
pre-tokenizer never hands such a word to the model anyway (``#`` is
punctuation).  Empty vocabulary strings are never matched.

**The text pipeline** around the model, as HF's BERT tokenizers configure it
(needed to compare with HF end to end):

1. added tokens whose ``normalized`` flag is false (``[CLS]``, ``[MASK]``...)
   are split off the raw text first (leftmost, longest match) and map to their
   ids;
2. :class:`BertNormalizer`: clean text (drop U+0000, U+FFFD and control
   characters -- general category C* except tab, newline and carriage return --
   then map whitespace to a space), put spaces around CJK ideographs, strip
   accents (NFD, then drop category Mn) when ``strip_accents`` is true or is
   unset and ``lowercase`` is set, and lowercase character by character;
3. :class:`BertPreTokenizer`: split on whitespace (removed) and isolate every
   punctuation character (ASCII 33-47, 58-64, 91-96, 123-126, or category P*);
4. MaxMatch per word.

Whitespace is Unicode's ``White_Space`` property plus tab, newline and CR, as
Rust's ``char::is_whitespace`` (not Python's ``str.isspace``, which also
counts U+001C..U+001F).  Character categories come from Python's
``unicodedata``; HF's tables may be of another Unicode version, which only
matters for code points assigned between the two versions.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import msgpack

from ..errors import BpefstError
from .formats.common import parse_json, read_raw

DEFAULT_UNK = "[UNK]"
DEFAULT_PREFIX = "##"
DEFAULT_MAX_CHARS = 100
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# Unicode White_Space (stable since Unicode 6.3); tab, LF, VT, FF, CR are among them.
WHITESPACE = frozenset(
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)

# The CJK ideograph blocks BERT treats as Chinese characters (each gets spaces around it).
CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)


# Code points HF tokenizers (0.23) treats as plain letters although Python's unicodedata
# gives them a category that matters here (control, Mn, punctuation) or a
# decomposition: HF's category tables are of an older Unicode version (about 8.0),
# in which these code points were unassigned.  Measured against HF over every
# code point by tests/test_wordpiece.py (test_every_code_point_like_hf); see the
# module docstring.
_HF_PLAIN_RANGES: tuple[tuple[int, int], ...] = (
    (0x61D, 0x61D), (0x7FD, 0x7FD), (0x890, 0x891), (0x898, 0x89F), (0x8CA, 0x8E2), (0x9FD, 0x9FE), (0xA76, 0xA76),
    (0xAFA, 0xAFF), (0xB55, 0xB55), (0xC04, 0xC04), (0xC3C, 0xC3C), (0xC77, 0xC77), (0xC84, 0xC84), (0xD00, 0xD00),
    (0xD3B, 0xD3C), (0xD81, 0xD81), (0xEBA, 0xEBA), (0x180F, 0x180F), (0x1885, 0x1886), (0x1ABF, 0x1ACE),
    (0x1B7D, 0x1B7E), (0x1DF6, 0x1DFB), (0x2E43, 0x2E4F), (0x2E52, 0x2E5D), (0xA82C, 0xA82C), (0xA8C5, 0xA8C5),
    (0xA8FF, 0xA8FF), (0xA9BD, 0xA9BD), (0x10D24, 0x10D27), (0x10EAB, 0x10EAD), (0x10F46, 0x10F50),
    (0x10F55, 0x10F59), (0x10F82, 0x10F89), (0x11070, 0x11070), (0x11073, 0x11074), (0x110C2, 0x110C2),
    (0x110CD, 0x110CD), (0x111C9, 0x111C9), (0x111CF, 0x111CF), (0x1123E, 0x1123E), (0x1133B, 0x1133B),
    (0x11438, 0x1143F), (0x11442, 0x11444), (0x11446, 0x11446), (0x1144B, 0x1144F), (0x1145A, 0x1145B),
    (0x1145D, 0x1145E), (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1182F, 0x11837), (0x11839, 0x1183B),
    (0x11938, 0x11938), (0x1193B, 0x1193C), (0x1193E, 0x1193E), (0x11943, 0x11946), (0x119D4, 0x119D7),
    (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x119E2, 0x119E2), (0x11A01, 0x11A0A), (0x11A33, 0x11A38),
    (0x11A3B, 0x11A47), (0x11A51, 0x11A56), (0x11A59, 0x11A5B), (0x11A8A, 0x11A96), (0x11A98, 0x11A9C),
    (0x11A9E, 0x11AA2), (0x11C30, 0x11C36), (0x11C38, 0x11C3D), (0x11C3F, 0x11C3F), (0x11C41, 0x11C45),
    (0x11C70, 0x11C71), (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0), (0x11CB2, 0x11CB3), (0x11CB5, 0x11CB6),
    (0x11D31, 0x11D36), (0x11D3A, 0x11D3A), (0x11D3C, 0x11D3D), (0x11D3F, 0x11D45), (0x11D47, 0x11D47),
    (0x11D90, 0x11D91), (0x11D95, 0x11D95), (0x11D97, 0x11D97), (0x11EF3, 0x11EF4), (0x11EF7, 0x11EF8),
    (0x11FFF, 0x11FFF), (0x12FF1, 0x12FF2), (0x13430, 0x13438), (0x16E97, 0x16E9A), (0x16F4F, 0x16F4F),
    (0x16FE2, 0x16FE2), (0x16FE4, 0x16FE4), (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E000, 0x1E006),
    (0x1E008, 0x1E018), (0x1E01B, 0x1E021), (0x1E023, 0x1E024), (0x1E026, 0x1E02A), (0x1E130, 0x1E136),
    (0x1E2AE, 0x1E2AE), (0x1E2EC, 0x1E2EF), (0x1E944, 0x1E94A), (0x1E95E, 0x1E95F),
)
_HF_PLAIN_STARTS = [lo for lo, _ in _HF_PLAIN_RANGES]
_HF_PLAIN_MIN = chr(_HF_PLAIN_RANGES[0][0])
# ... and the reverse: categories that changed since (U+166D and U+111C9 were Po, U+1734 was Mn).
_HF_EXTRA_PUNCT = frozenset("\u166d\U000111c9")
_HF_EXTRA_MN = frozenset("\u1734")
# Uppercase letters newer than Python's unicodedata that HF (Rust's char::to_lowercase) lowercases.
_HF_EXTRA_LOWER: dict[str, str] = {
    chr(cp): chr(cp + offset)
    for lo, hi, offset in (
        (0x1C89, 0x1C89, 1), (0xA7CC, 0xA7CC, 1), (0xA7CE, 0xA7CE, 1), (0xA7D2, 0xA7D2, 1), (0xA7D4, 0xA7D4, 1),
        (0xA7DA, 0xA7DA, 1), (0x10D50, 0x10D65, 0x20), (0x16EA0, 0x16EB8, 0x1B),
    )
    for cp in range(lo, hi + 1)
}
_HF_EXTRA_LOWER.update({"\ua7cb": "\u0264", "\ua7dc": "\u019b"})


def lowercase(text: str) -> str:
    """Character by character, as Rust's ``char::to_lowercase`` (no final-sigma context rule)."""
    return "".join(_HF_EXTRA_LOWER.get(c) or c.lower() for c in text)


def _hf_plain(char: str) -> bool:
    cp = ord(char)
    i = bisect_right(_HF_PLAIN_STARTS, cp) - 1
    return i >= 0 and cp <= _HF_PLAIN_RANGES[i][1]


def is_whitespace(char: str) -> bool:
    return char in WHITESPACE


def is_control(char: str) -> bool:
    """General category Cc, Cf, Co or Cs, except tab, newline and carriage return.

    Unassigned code points (Cn) are not controls (HF keeps them).
    """
    if char in "\t\n\r":
        return False
    return unicodedata.category(char) in _CONTROL_CATEGORIES and not _hf_plain(char)


_CONTROL_CATEGORIES = frozenset(("Cc", "Cf", "Co", "Cs"))


def is_cjk(char: str) -> bool:
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


def is_punctuation(char: str) -> bool:
    """ASCII punctuation (33-47, 58-64, 91-96, 123-126) or general category P*."""
    cp = ord(char)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126 or char in _HF_EXTRA_PUNCT:
        return True
    return unicodedata.category(char)[0] == "P" and not _hf_plain(char)


def strip_accents(text: str) -> str:
    """NFD, then drop nonspacing marks (category Mn)."""
    if text.isascii():
        return text
    out: list[str] = []
    start = 0
    for i, c in enumerate(text):
        if c >= _HF_PLAIN_MIN and _hf_plain(c):  # an opaque starter: normalize around it
            out.append(_nfd_without_marks(text[start:i]))
            out.append(c)
            start = i + 1
    out.append(_nfd_without_marks(text[start:]))
    return "".join(out)


def _nfd_without_marks(text: str) -> str:
    return "".join(
        c for c in unicodedata.normalize("NFD", text) if c not in _HF_EXTRA_MN and unicodedata.category(c) != "Mn"
    )


@dataclass(frozen=True)
class BertNormalizer:
    """HF's ``BertNormalizer`` (see the module docstring for the steps and their order)."""

    clean_text: bool = True
    handle_chinese_chars: bool = True
    strip_accents: bool | None = None
    lowercase: bool = True

    def normalize(self, text: str) -> str:
        if self.clean_text:
            text = "".join(
                " " if c in WHITESPACE else c
                for c in text
                if not (c == "\0" or c == "\ufffd" or is_control(c))
            )
        if self.handle_chinese_chars:
            text = "".join(f" {c} " if is_cjk(c) else c for c in text)
        strip = self.lowercase if self.strip_accents is None else self.strip_accents
        if strip:
            text = strip_accents(text)
        if self.lowercase:
            text = lowercase(text)
        return text

    def to_json(self) -> dict:
        return {"type": "BertNormalizer", "clean_text": self.clean_text, "handle_chinese_chars": self.handle_chinese_chars,
                "strip_accents": self.strip_accents, "lowercase": self.lowercase}


class BertPreTokenizer:
    """HF's ``BertPreTokenizer``: split on whitespace, isolate each punctuation character."""

    def split(self, text: str) -> list[str]:
        words: list[str] = []
        current: list[str] = []
        for c in text:
            if c in WHITESPACE:
                if current:
                    words.append("".join(current))
                    current = []
            elif is_punctuation(c):
                if current:
                    words.append("".join(current))
                    current = []
                words.append(c)
            else:
                current.append(c)
        if current:
            words.append("".join(current))
        return words

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BertPreTokenizer)

    def __hash__(self) -> int:
        return hash(BertPreTokenizer)


@dataclass(frozen=True)
class AddedToken:
    """An entry of ``added_tokens`` in ``tokenizer.json`` (split off before normalization)."""

    content: str
    id: int
    special: bool = True
    normalized: bool = False
    single_word: bool = False
    lstrip: bool = False
    rstrip: bool = False


@dataclass
class WordPieceModel:
    """A WordPiece vocabulary with its settings and (optionally) the BERT text pipeline."""

    vocab: dict[str, int]
    unk_token: str = DEFAULT_UNK
    continuing_subword_prefix: str = DEFAULT_PREFIX
    max_input_chars_per_word: int = DEFAULT_MAX_CHARS
    normalizer: BertNormalizer | None = field(default_factory=BertNormalizer)
    pre_tokenizer: BertPreTokenizer | None = field(default_factory=BertPreTokenizer)
    added_tokens: tuple[AddedToken, ...] = ()
    source: str = "<memory>"

    def __post_init__(self) -> None:
        name = self.source
        if not isinstance(self.vocab, dict) or not self.vocab:
            raise BpefstError(f"{name}: empty WordPiece vocabulary")
        seen: dict[int, str] = {}
        for token, tid in self.vocab.items():
            if not isinstance(token, str) or not isinstance(tid, int) or isinstance(tid, bool) or tid < 0:
                raise BpefstError(f"{name}: bad vocabulary entry {token!r}: {tid!r}")
            if tid in seen:
                raise BpefstError(f"{name}: tokens {seen[tid]!r} and {token!r} share the id {tid}")
            seen[tid] = token
        if self.unk_token not in self.vocab:
            raise BpefstError(f"{name}: the unknown token {self.unk_token!r} is not in the vocabulary")
        if not isinstance(self.continuing_subword_prefix, str):
            raise BpefstError(f"{name}: continuing_subword_prefix must be a string")
        if not isinstance(self.max_input_chars_per_word, int) or self.max_input_chars_per_word < 0:
            raise BpefstError(f"{name}: max_input_chars_per_word must be a non-negative integer")
        for added in self.added_tokens:
            if not added.content:
                raise BpefstError(f"{name}: an added token has empty content")
            if added.id in seen and seen[added.id] != added.content:
                raise BpefstError(f"{name}: added token {added.content!r} has the id {added.id} of {seen[added.id]!r}")

    # -- lookups --------------------------------------------------------------------

    @cached_property
    def id_to_token(self) -> dict[int, str]:
        table = {tid: token for token, tid in self.vocab.items()}
        for added in self.added_tokens:
            table.setdefault(added.id, added.content)
        return table

    @property
    def unk_id(self) -> int:
        return self.vocab[self.unk_token]

    @cached_property
    def first_pieces(self) -> dict[str, int]:
        """Entries a word may start with: every non-empty vocabulary string, literally."""
        return {token: tid for token, tid in self.vocab.items() if token}

    @cached_property
    def continuation_pieces(self) -> dict[str, int]:
        """Entries for later pieces, keyed without the prefix (``"ing" -> id("##ing")``)."""
        prefix = self.continuing_subword_prefix
        cut = len(prefix)
        return {token[cut:]: tid for token, tid in self.vocab.items() if token.startswith(prefix) and len(token) > cut}

    @cached_property
    def max_piece_chars(self) -> int:
        return max(max(map(len, self.first_pieces), default=0), max(map(len, self.continuation_pieces), default=0))

    @cached_property
    def characters(self) -> frozenset[str]:
        """Every character of every piece (continuation pieces without their prefix)."""
        chars: set[str] = set()
        for piece in self.first_pieces:
            chars.update(piece)
        for piece in self.continuation_pieces:
            chars.update(piece)
        return frozenset(chars)

    # -- the reference MaxMatch encoder ----------------------------------------------

    def max_match(self, word: str) -> list[int] | None:
        """Greedy longest-match-first pieces of ``word``, or None if some position cannot be matched.

        Ignores ``max_input_chars_per_word`` (see :meth:`encode_word`); the
        empty word has no pieces (``[]``).
        """
        first, cont = self.first_pieces, self.continuation_pieces
        longest = self.max_piece_chars
        out: list[int] = []
        start, n = 0, len(word)
        table = first
        while start < n:
            end = min(n, start + longest)
            while end > start:
                tid = table.get(word[start:end])
                if tid is not None:
                    break
                end -= 1
            else:
                return None
            out.append(tid)
            start = end
            table = cont
        return out

    def encode_word(self, word: str) -> list[int]:
        """MaxMatch ids for one pre-tokenized word, with HF's unknown-word rules."""
        if len(word) > self.max_input_chars_per_word:
            return [self.unk_id]
        ids = self.max_match(word)
        return [self.unk_id] if ids is None else ids

    # -- the text pipeline -----------------------------------------------------------

    def pre_tokenize(self, text: str) -> list[str]:
        """Normalize and split a text without added tokens into words."""
        if self.normalizer is not None:
            text = self.normalizer.normalize(text)
        if self.pre_tokenizer is not None:
            return self.pre_tokenizer.split(text)
        return [text] if text else []

    def encode(self, text: str, word_cache: dict[str, list[int]] | None = None) -> list[int]:
        """Ids of a whole text, like HF's ``encode(text, add_special_tokens=False).ids``."""
        for added in self.added_tokens:
            if added.normalized or added.single_word or added.lstrip or added.rstrip:
                raise BpefstError(
                    f"{self.source}: added token {added.content!r} uses normalized/single_word/lstrip/rstrip, "
                    "which bpefst's WordPiece pipeline does not support"
                )
        cache = {} if word_cache is None else word_cache
        out: list[int] = []
        for piece, added_id in self._split_added(text):
            if added_id is not None:
                out.append(added_id)
                continue
            for word in self.pre_tokenize(piece):
                ids = cache.get(word)
                if ids is None:
                    ids = cache[word] = self.encode_word(word)
                out.extend(ids)
        return out

    def _split_added(self, text: str) -> list[tuple[str, int | None]]:
        """Leftmost-longest split of ``text`` on the added tokens."""
        if not self.added_tokens:
            return [(text, None)]
        by_first: dict[str, list[AddedToken]] = {}
        for added in sorted(self.added_tokens, key=lambda a: -len(a.content)):
            by_first.setdefault(added.content[0], []).append(added)
        pieces: list[tuple[str, int | None]] = []
        start = i = 0
        n = len(text)
        while i < n:
            hit = None
            for added in by_first.get(text[i], ()):
                if text.startswith(added.content, i):
                    hit = added
                    break
            if hit is None:
                i += 1
                continue
            if start < i:
                pieces.append((text[start:i], None))
            pieces.append((hit.content, hit.id))
            i = start = i + len(hit.content)
        if start < n:
            pieces.append((text[start:], None))
        return pieces

    def decode(self, ids: list[int]) -> str:
        """Token strings joined into words (continuation pieces glued on without their prefix)."""
        words: list[str] = []
        prefix = self.continuing_subword_prefix
        for tid in ids:
            token = self.id_to_token.get(tid)
            if token is None:
                raise BpefstError(f"unknown token id {tid}")
            if words and prefix and token.startswith(prefix) and len(token) > len(prefix):
                words[-1] += token[len(prefix):]
            else:
                words.append(token)
        return " ".join(words)

    def token_text(self, tid: int) -> str:
        token = self.id_to_token.get(tid)
        if token is None:
            raise BpefstError(f"unknown token id {tid}")
        return token

    # -- identity --------------------------------------------------------------------

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 over everything that decides how text is tokenized."""
        canonical = [
            "wordpiece",
            sorted(self.vocab.items()),
            self.unk_token,
            self.continuing_subword_prefix,
            self.max_input_chars_per_word,
            self.normalizer.to_json() if self.normalizer else None,
            "BertPreTokenizer" if self.pre_tokenizer else None,
            sorted((a.content, a.id, a.normalized, a.single_word, a.lstrip, a.rstrip) for a in self.added_tokens),
        ]
        return hashlib.sha256(msgpack.packb(canonical, use_bin_type=True)).hexdigest()

    def summary(self) -> dict[str, object]:
        return {
            "kind": "WordPiece (MaxMatch)",
            "vocab_size": len(self.id_to_token),
            "continuation_pieces": len(self.continuation_pieces),
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "unk_token": self.unk_token,
            "max_input_chars_per_word": self.max_input_chars_per_word,
            "normalizer": self.normalizer.to_json() if self.normalizer else None,
            "pre_tokenizer": "BertPreTokenizer" if self.pre_tokenizer else None,
            "added_tokens": {a.content: a.id for a in self.added_tokens},
            "fingerprint": self.fingerprint,
        }

    # -- readers ---------------------------------------------------------------------

    @classmethod
    def from_vocab_txt(
        cls,
        path: str | os.PathLike,
        *,
        unk_token: str = DEFAULT_UNK,
        continuing_subword_prefix: str = DEFAULT_PREFIX,
        max_input_chars_per_word: int = DEFAULT_MAX_CHARS,
        lowercase: bool = True,
    ) -> "WordPieceModel":
        """A BERT ``vocab.txt``: one token per line, id = line number (from 0).

        Trailing whitespace is trimmed from each line (as HF does); a repeated
        line keeps its last line number.  The file carries no pipeline, so the
        BERT one is assumed (``lowercase`` selects uncased or cased), with the
        BERT special tokens that occur in the vocabulary as added tokens.
        """
        data = read_raw(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BpefstError(f"{path}: not UTF-8 text (bad byte at offset {exc.start})") from None
        vocab: dict[str, int] = {}
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        for index, line in enumerate(lines):
            vocab.pop(line.rstrip(), None)
            vocab[line.rstrip()] = index
        added = tuple(AddedToken(s, vocab[s]) for s in BERT_SPECIALS if s in vocab)
        return cls(
            vocab, unk_token, continuing_subword_prefix, max_input_chars_per_word,
            BertNormalizer(lowercase=lowercase), BertPreTokenizer(), added, str(path),
        )

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike) -> "WordPieceModel":
        """An HF ``tokenizer.json`` whose model is ``WordPiece``."""
        return cls.from_document(parse_json(read_raw(path), path), str(path))

    @classmethod
    def from_document(cls, doc: dict, name: str = "tokenizer.json") -> "WordPieceModel":
        model = doc.get("model")
        if not isinstance(model, dict):
            raise BpefstError(f"{name}: no 'model' object; not an HF tokenizer.json")
        if model.get("type") != "WordPiece":
            raise BpefstError(f"{name}: model type {model.get('type')!r} is not WordPiece")
        vocab = model.get("vocab")
        if not isinstance(vocab, dict):
            raise BpefstError(f"{name}: model.vocab must be an object token -> id")
        unk = model.get("unk_token", DEFAULT_UNK)
        prefix = model.get("continuing_subword_prefix", DEFAULT_PREFIX)
        max_chars = model.get("max_input_chars_per_word", DEFAULT_MAX_CHARS)
        if not isinstance(unk, str) or not isinstance(prefix, str):
            raise BpefstError(f"{name}: unk_token and continuing_subword_prefix must be strings")
        normalizer = _read_normalizer(doc.get("normalizer"), name)
        pre = doc.get("pre_tokenizer")
        if pre is None:
            pre_tokenizer = None
        elif isinstance(pre, dict) and pre.get("type") == "BertPreTokenizer":
            pre_tokenizer = BertPreTokenizer()
        else:
            kind = pre.get("type") if isinstance(pre, dict) else pre
            raise BpefstError(f"{name}: unsupported pre-tokenizer {kind!r} for WordPiece (BertPreTokenizer or none)")
        added = []
        for entry in doc.get("added_tokens") or []:
            if not isinstance(entry, dict) or not isinstance(entry.get("content"), str) or not isinstance(entry.get("id"), int):
                raise BpefstError(f"{name}: malformed added_tokens entry {entry!r}")
            added.append(AddedToken(
                entry["content"], entry["id"], bool(entry.get("special", False)), bool(entry.get("normalized", False)),
                bool(entry.get("single_word", False)), bool(entry.get("lstrip", False)), bool(entry.get("rstrip", False)),
            ))
        return cls(dict(vocab), unk, prefix, max_chars, normalizer, pre_tokenizer, tuple(added), name)


def _read_normalizer(spec, name: str) -> BertNormalizer | None:
    if spec is None:
        return None
    if not isinstance(spec, dict) or spec.get("type") != "BertNormalizer":
        kind = spec.get("type") if isinstance(spec, dict) else spec
        raise BpefstError(f"{name}: unsupported normalizer {kind!r} for WordPiece (BertNormalizer or none)")
    flags = {}
    for key, default in (("clean_text", True), ("handle_chinese_chars", True), ("lowercase", True)):
        value = spec.get(key, default)
        if not isinstance(value, bool):
            raise BpefstError(f"{name}: normalizer.{key} must be true or false")
        flags[key] = value
    strip = spec.get("strip_accents")
    if strip is not None and not isinstance(strip, bool):
        raise BpefstError(f"{name}: normalizer.strip_accents must be true, false or null")
    return BertNormalizer(flags["clean_text"], flags["handle_chinese_chars"], strip, flags["lowercase"])


def is_wordpiece_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` looks like a WordPiece tokenizer (a ``vocab.txt`` or an HF WordPiece ``tokenizer.json``).

    Cheap and never raises: for the CLI to decide between BPE and WordPiece loading.
    """
    path = Path(path)
    try:
        if path.is_dir():
            if (path / "tokenizer.json").is_file():
                return is_wordpiece_file(path / "tokenizer.json")
            return (path / "vocab.txt").is_file() and not (path / "merges.txt").exists()
        if path.name == "vocab.txt":
            return True
        with open(path, "rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return False
    return head.lstrip()[:1] == b"{" and b'"WordPiece"' in head and b'"model"' in head


def load_wordpiece(path: str | os.PathLike) -> WordPieceModel:
    """A WordPiece model from ``vocab.txt``, an HF ``tokenizer.json``, or a directory holding one of them."""
    path = Path(path)
    if path.is_dir():
        if (path / "tokenizer.json").is_file():
            return WordPieceModel.from_tokenizer_json(path / "tokenizer.json")
        if (path / "vocab.txt").is_file():
            return WordPieceModel.from_vocab_txt(path / "vocab.txt")
        raise BpefstError(f"{path}: no tokenizer.json or vocab.txt in this directory")
    raw = read_raw(path)
    if raw.lstrip()[:1] == b"{":
        return WordPieceModel.from_document(parse_json(raw, path), str(path))
    return WordPieceModel.from_vocab_txt(path)
