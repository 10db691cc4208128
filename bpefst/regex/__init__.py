"""Layer 2: regular expressions -> minimal DFAs over a tokenizer's base alphabet.

>>> from bpefst.regex import compile_regex, ByteAlphabet
>>> dfa = compile_regex(r"\\d{4}-\\d{2}", ByteAlphabet())
>>> dfa.accepts(b"2024-05")
True

The pattern must match the *whole* string (``regex.fullmatch`` semantics).
Syntax: see :mod:`.syntax`; alphabets (bytes in UTF-8, characters, and the
end-of-word-suffix convention of the WikiText tokenizers): see
:mod:`.alphabets`.  Errors are :class:`RegexSyntaxError` (a ``BpefstError``
whose message ends with ``at position N``) and
:class:`~bpefst.automata.StateLimitExceeded`.  Two other input automata over
the same alphabets: :mod:`.wordlists` (a literal list of strings, ``promote
--words``) and :mod:`.edit_distance` (the edit-distance-one automaton of
Table 1 of seed 000).

This package is ``bpefst.regex``; the third-party ``regex`` module (the test
oracle, and the source of the Unicode tables) is imported absolutely and is
not shadowed.
"""

from __future__ import annotations

import importlib

# name -> the module of this package that defines it, imported on first use: tokenizing checks a
# pre-tokenization pattern with .syntax, and importing the compiler and the automata behind it as well made
# every bpefst command start later (importing the CLI's common module: 0.25 s instead of 0.17 s)
_HOMES = {
    "compile_regex": "compiler", "to_nfa": "compiler", "NFA_STATE_LIMIT": "compiler",
    "Alphabet": "alphabets", "ByteAlphabet": "alphabets", "CharAlphabet": "alphabets", "alphabet_for": "alphabets",
    "RegexSyntaxError": "syntax", "parse": "syntax",
}
__all__ = list(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
