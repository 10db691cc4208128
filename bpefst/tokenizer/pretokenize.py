"""Pre-tokenization: cutting text into the chunks BPE works on.

BPE never merges across a chunk boundary.  A tokenizer first splits off its
special tokens, then cuts the remaining text with a regular expression and keeps
the matches (``regex.findall``), exactly as tiktoken does; text between matches
is dropped (HF's ``Whitespace`` pre-tokenizer drops whitespace that way, while
the GPT-2, cl100k and o200k patterns match every character).

The presets are the published patterns, character for character: ``gpt2`` from
GPT-2's ``encoder.py`` (also HF's ByteLevel pre-tokenizer), ``cl100k`` and
``o200k`` as tiktoken ships them, ``whitespace`` as HF's Whitespace
pre-tokenizer, ``none`` for no pre-tokenization (each text segment between
special tokens is one chunk).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Iterable, Iterator

import regex

from ..errors import BpefstError

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
}


def resolve_pattern(spec: str | None) -> str | None:
    """A preset name, ``none``, or a regex -> the regex string (None = no pre-tokenization)."""
    if spec is None or spec == "none":
        return None
    pattern = PRESETS.get(spec, spec)
    compile_pattern(pattern)
    return pattern


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
        return regex.compile(pattern)
    except regex.error as exc:
        raise BpefstError(f"invalid pre-tokenization pattern: {exc}") from None


class Pretokenizer:
    """Special-token splitting followed by the pre-tokenization regex.

    ``split(text, allowed)`` yields ``(chunk, special_id)`` pairs in order:
    ordinary chunks come with ``special_id`` None, allowed special tokens with
    their id.  A special token that occurs in the text but is not allowed raises
    BpefstError, like tiktoken's ``disallowed_special`` default, unless it is in
    ``ignored`` (then it is treated as ordinary text).
    """

    def __init__(self, pattern: str | None, specials: dict[str, int]):
        self.pattern = pattern
        self.specials = dict(specials)
        self._regex = compile_pattern(pattern) if pattern is not None else None
        # Longest first, so that a special that is a prefix of another loses.
        names = sorted(self.specials, key=lambda s: (-len(s), s))
        self._special_regex = regex.compile("|".join(regex.escape(s) for s in names)) if names else None

    def chunks(self, text: str) -> list[str]:
        """Pre-tokenize text that contains no special tokens."""
        if not text:
            return []
        if self._regex is None:
            return [text]
        return self._regex.findall(text)

    def split(self, text: str, allowed: Iterable[str] | str = (), ignored: Iterable[str] | str = ()) -> Iterator[tuple[str, int | None]]:
        allowed_set = set(self.specials) if allowed == "all" else set(allowed)
        ignored_set = set(self.specials) if ignored == "all" else set(ignored)
        if self._special_regex is None:
            for chunk in self.chunks(text):
                yield chunk, None
            return
        pending = 0
        for match in self._special_regex.finditer(text):
            name = match.group()
            if name in allowed_set:
                for chunk in self.chunks(text[pending : match.start()]):
                    yield chunk, None
                yield name, self.specials[name]
                pending = match.end()
            elif name not in ignored_set:
                raise BpefstError(
                    f"the text contains the special token {name!r} at character {match.start()}, which is not allowed "
                    f"(allow it, e.g. --allowed-special all, or treat it as text with --allowed-special none)"
                )
        for chunk in self.chunks(text[pending:]):
            yield chunk, None
