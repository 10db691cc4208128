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

from .alphabets import Alphabet, ByteAlphabet, CharAlphabet, alphabet_for
from .compiler import NFA_STATE_LIMIT, compile_regex, to_nfa
from .syntax import RegexSyntaxError, parse

__all__ = [
    "compile_regex", "Alphabet", "ByteAlphabet", "CharAlphabet", "alphabet_for", "RegexSyntaxError",
    "parse", "to_nfa", "NFA_STATE_LIMIT",
]
