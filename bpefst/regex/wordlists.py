"""A literal list of strings -> the minimal DFA accepting exactly them (``--words FILE``).

Each word is spelled with the alphabet's conventions
(:meth:`bpefst.regex.Alphabet.encode`): UTF-8 bytes for byte-level
alphabets; characters for character-level ones, where an alphabet with an
end-of-word suffix spells the last character of each word with its suffixed
symbol (``"dim"`` -> ``d i m▁``) -- the same rule as a compiled pattern, so
``words_automaton(["ab", "c"], a)`` equals ``compile_regex("ab|c", a)``.

A word the alphabet cannot spell (a character with no base symbol, or the
empty word under an end-of-word suffix) is an error naming the word; with
``strict=False`` it is skipped instead, as a pattern branch that cannot be
spelled is empty.
"""

from __future__ import annotations

from typing import Iterable

from ..automata import DFA, minimize
from ..errors import BpefstError
from .alphabets import Alphabet


def words_automaton(words: Iterable[str], alphabet: Alphabet, *, strict: bool = True) -> DFA:
    """Minimal trim DFA over ``alphabet``'s symbols accepting exactly the spelled ``words``."""
    spelled = []
    for number, word in enumerate(words, 1):
        seq = alphabet.encode(word)
        if seq is None:
            if strict:
                raise BpefstError(f"word {number} ({word!r}) cannot be spelled in the tokenizer's base alphabet")
            continue
        spelled.append(seq)
    return minimize(DFA.from_strings(spelled))


def read_words(lines: Iterable[str]) -> list[str]:
    """Words from a ``--words`` file: one per line, trailing newline/CR removed, blank lines skipped."""
    return [w for w in (line.rstrip("\r\n") for line in lines) if w]
