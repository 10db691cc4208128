"""Pre-tokenization: cutting text into the chunks BPE works on.

BPE never merges across a chunk boundary.  A tokenizer first splits off its
special tokens, then cuts the remaining text with a regular expression and keeps
the matches (``regex.findall``), exactly as tiktoken does; text between matches
is dropped (HF's ``Whitespace`` pre-tokenizer drops whitespace that way, while
the GPT-2, cl100k and o200k patterns match every character).

The presets are the published patterns, character for character: ``gpt2`` from
GPT-2's ``encoder.py`` (also HF's ByteLevel pre-tokenizer), ``cl100k`` and
``o200k`` as tiktoken ships them, ``whitespace`` as HF's Whitespace
pre-tokenizer, ``gpt2-digits`` (GPT-2 with every digit a chunk of its own: SmolLM,
StarCoder), ``none`` for no pre-tokenization (each text segment between
special tokens is one chunk).
"""

from __future__ import annotations

import enum
from functools import lru_cache
from typing import Callable, Iterable, Iterator

import regex

from ..errors import BpefstError, DisallowedSpecialError
from ..regex.syntax import check_nesting

PRESETS: dict[str, str] = {
    "gpt2": r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""",
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "whitespace": r"""\w+|[^\w\s]+""",
    # GPT-2's pattern after cutting off every digit as a piece of its own (HF's Digits(individual_digits)
    # then ByteLevel; llama.cpp's "smollm", "starcoder", ...): \p{N} first, no number run, and a
    # whitespace run ends a piece before a digit as it does at the end of the text
    "gpt2-digits": r"""\p{N}|'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+""",
}


class FilePattern(enum.Enum):
    """The pattern override that keeps what the tokenizer file implies.

    A sentinel rather than None, because None already means "no
    pre-tokenization", which ``--pattern none`` must be able to ask for.
    """

    FROM_FILE = "from-file"


FROM_FILE = FilePattern.FROM_FILE

PatternOverride = str | None | FilePattern


def resolve_pattern(spec: str | None) -> str | None:
    """A preset name, ``none``, or a regex -> the regex string (None = no pre-tokenization)."""
    if spec is None or spec == "none":
        return None
    pattern = PRESETS.get(spec, spec)
    compile_pattern(pattern)
    return pattern


def pattern_override(spec: str | None) -> PatternOverride:
    """A ``--pattern`` value -> the override for :func:`load_tokenizer` (FROM_FILE when not given)."""
    return FROM_FILE if spec is None else resolve_pattern(spec)


def preset_name(pattern: str | None) -> str:
    """The preset name of a pattern, ``none``, or ``custom``."""
    if pattern is None:
        return "none"
    for name, text in PRESETS.items():
        if text == pattern:
            return name
    return "custom"


@lru_cache(maxsize=32)
def compile_pattern(pattern: str) -> regex.Pattern:
    try:
        check_nesting(pattern)
        return regex.compile(pattern)
    except regex.error as exc:
        raise BpefstError(f"invalid pre-tokenization pattern: {exc}") from None
    except BpefstError as exc:
        raise BpefstError(f"invalid pre-tokenization pattern: {exc}") from None
    except (RecursionError, OverflowError, ValueError) as exc:
        raise BpefstError(f"invalid pre-tokenization pattern: {type(exc).__name__}") from None


@lru_cache(maxsize=32)
def chunk_finder(pattern: str) -> Callable[[str], list[str]]:
    """``text -> the whole matches of pattern``: what tiktoken and HF's ``Split`` cut text into.

    ``regex.findall`` returns a pattern's groups instead of its matches when it
    has capturing groups (``(\\w)+|\\s+`` would give ``["o", "d", ""]`` for
    ``"hello world"``), which would lose text; groups never change the chunks.
    """
    compiled = compile_pattern(pattern)
    if compiled.groups == 0:
        return compiled.findall  # the fast path: one C-level call
    finditer = compiled.finditer
    return lambda text: [match.group() for match in finditer(text)]


@lru_cache(maxsize=64)
def specials_regex(names: frozenset[str]) -> regex.Pattern | None:
    """A search for any of ``names`` (None when there are none).

    Where two start at the same character the longer wins, as in HF tokenizers'
    added-token matching (tiktoken leaves that tie to a hash map's order).
    """
    if not names:
        return None
    ordered = sorted(names, key=lambda s: (-len(s), s))
    return regex.compile("|".join(regex.escape(s) for s in ordered))


def check_disallowed(text: str, disallowed: frozenset[str], offset: int = 0) -> None:
    """Raise BpefstError if any of ``disallowed`` occurs in ``text``, wherever it is.

    tiktoken's rule: the disallowed specials are searched on their own, before
    and apart from the split on allowed ones, so a disallowed special inside a
    longer allowed one is still found.  ``offset`` places ``text`` in the input
    for the message.
    """
    matcher = specials_regex(disallowed)
    found = matcher.search(text) if matcher is not None else None
    if found is not None:
        raise DisallowedSpecialError(found.group(), offset + found.start())


class Pretokenizer:
    """Special-token splitting followed by the pre-tokenization regex.

    ``split(text, allowed)`` yields ``(chunk, special_id)`` pairs in order:
    ordinary chunks come with ``special_id`` None, allowed special tokens with
    their id.  A special token in ``disallowed`` (default: every special not
    allowed) that occurs in the text raises BpefstError, even inside an allowed
    one; any other special is ordinary text.  These are tiktoken's rules: only
    allowed specials cut the text, so an ordinary-text special that contains an
    allowed one (or starts earlier and overlaps it) does not hide it.
    """

    def __init__(self, pattern: str | None, specials: dict[str, int]):
        self.pattern = pattern
        self.specials = dict(specials)
        self._findall = chunk_finder(pattern) if pattern is not None else None

    def chunks(self, text: str) -> list[str]:
        """Pre-tokenize text that contains no special tokens."""
        if not text:
            return []
        if self._findall is None:
            return [text]
        return self._findall(text)

    def split(self, text: str, allowed: Iterable[str] | str = (), disallowed: Iterable[str] | str = "all") -> Iterator[tuple[str, int | None]]:
        known = frozenset(self.specials)
        allowed_set = known if allowed == "all" else known & frozenset(allowed)
        check_disallowed(text, known - allowed_set if disallowed == "all" else known & frozenset(disallowed))
        pending = 0
        matcher = specials_regex(allowed_set)
        for match in matcher.finditer(text) if matcher is not None else ():
            for chunk in self.chunks(text[pending : match.start()]):
                yield chunk, None
            yield match.group(), self.specials[match.group()]
            pending = match.end()
        for chunk in self.chunks(text[pending:]):
            yield chunk, None
