"""Chunk-boundary automata: where a pre-tokenization regex cuts a text, as a DFA.

A real BPE tokenizer (GPT-2, cl100k, o200k) first cuts the text with its pattern
``R`` (``regex.findall(R, s)``) and runs BPE on each chunk separately (seed 001
Sec. 1 and 6: pre-tokenization keeps BPE's inputs short; seed 000 Sec. 6.4-6.5
promote one chunk at a time).  To promote a pattern for such a tokenizer we
need the chunking of every matched string, as an automaton: the *chunker* of
``R`` accepts exactly the strings ``s`` with the symbol :data:`BOUNDARY`
inserted at every internal chunk boundary of ``findall(R, s)``.

**Character classes.**  The chunking only depends on which of a few classes
each character falls in (e.g. for cl100k: the apostrophe, each contraction
letter with its case variants as ``regex`` folds them, other letters,
numbers, ``\\r``, ``\\n``, space, other whitespace, everything else).  The
classes (*atoms*) are listed per preset as one-character regexes assigned
first-match-wins; the ``regex`` module evaluates them over all code points, so
they are exact.  Each atom is written as one letter below.

**Forms.**  Which chunk ``findall`` takes at a position depends only on the
text from there on.  For these patterns it is described by a short list of
*forms* ``(chunk, follow)``, two regexes over atom letters: the chunk at a
position is ``c`` exactly when ``c`` matches some form's ``chunk`` and the text
after it starts with a string of the form's ``follow`` (``#`` is the end of
the text; an empty ``follow`` asks nothing).  ``follow`` encodes maximality
(``\\p{L}++`` stops before a non-letter), the lookahead ``\\s+(?!\\S)``, the
``$`` of ``\\s++$`` and the earlier alternatives that must fail (an apostrophe
starts a contraction chunk when it can).  The forms were derived by hand from
the alternatives' order, greediness and possessiveness (o200k's quantifiers
are not possessive: its forms describe where backtracking ends, e.g. a run of
upper-case-class letters gives back its last Lm/Lo/mark when no lower-case
letter follows), and are *proved* by brute force against ``regex.findall``
with the real pattern (``tests/test_promotion_pretokenized.py``: every class
string up to length 5, for o200k up to length 4 plus random strings of length
5 and 6, random longer strings over all class members, corpus lines).

**Construction.**  An NFA guesses, at each chunk start, the form of the chunk;
it reads the chunk in the form's ``chunk`` DFA, emits :data:`BOUNDARY` when the
chunk is complete and then carries the form's ``follow`` as a pending
obligation that the next characters must meet (obligations can outlive the
next chunk: ``\\s+(?!\\S)`` looks two characters ahead).  The subset
construction over (form, chunk state, pending obligations) gives the DFA,
which is minimized.  Every text has one chunking, so the guesses die quickly
and the DFA is small (tens of states).

The class-level DFA is expanded to the tokenizer's base symbols by
:mod:`.pretokenized` (code points directly; bytes through a UTF-8 decoder
automaton whose exits are labelled with atoms, built from
:func:`bpefst.regex.utf8.utf8_dfa`).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

from ..automata import DFA, minimize
from ..errors import BpefstError
from ..regex import CharAlphabet, compile_regex
from ..regex.charsets import MAX_CODEPOINT, Ranges, normalize, scalar_ranges
from ..tokenizer.pretokenize import PRESETS

END_LETTER = "#"


@dataclass(frozen=True)
class ChunkRules:
    """A preset's atoms ``(letter, one-character regex)`` (first match wins) and forms ``(chunk, follow)``."""

    preset: str
    atoms: tuple[tuple[str, str], ...]
    forms: tuple[tuple[str, str], ...]


_CONTRACTION_LETTERS = "stremvld"

# GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+   (case-sensitive)
# atoms: ' s t r e m v l d (exactly), L other letter, N number, _ space, W other whitespace, P anything else
_GPT2_LETTERS = "[stremvldL]"
GPT2_RULES = ChunkRules(
    "gpt2",
    atoms=(("'", "'"), *((c, c) for c in _CONTRACTION_LETTERS), ("L", r"\p{L}"), ("N", r"\p{N}"), ("_", " "),
           ("W", r"\s"), ("P", r"[\s\S]")),
    forms=(
        ("'(s|t|re|ve|m|ll|d)", ""),  # contractions win wherever they start
        (f"_?{_GPT2_LETTERS}+", f"[^stremvldL]|{END_LETTER}"),  # maximal ' ?\p{L}+'
        ("_?N+", f"[^N]|{END_LETTER}"),
        ("_['P]+", f"[^'P]|{END_LETTER}"),  # ' ?[^\s\p{L}\p{N}]+' with the space
        ("P['P]*|'['P]+", f"[^'P]|{END_LETTER}"),  # ... without it
        ("'", f"{END_LETTER}|[eLN_W]|r([^e]|{END_LETTER})|v([^e]|{END_LETTER})|l([^l]|{END_LETTER})"),  # a lone ' that starts no contraction
        ("[_W]+", END_LETTER),  # \s+(?!\S) reaching the end
        ("[_W]+", f"[_W][^_W{END_LETTER}]"),  # \s+(?!\S): all but the last of a run before \S
        ("W", f"[^_W{END_LETTER}]"),  # \s+: one non-space whitespace before \S
    ),
)

# gpt2-digits: \p{N}|'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?![^\s\p{N}])|\s+
# GPT-2's atoms and forms, except that every number character is a chunk of its own (nothing takes a space
# before it), and that a whitespace run before one ends there whole, as at the end of the text
GPT2_DIGITS_RULES = ChunkRules(
    "gpt2-digits",
    atoms=GPT2_RULES.atoms,
    forms=(
        ("N", ""),
        ("'(s|t|re|ve|m|ll|d)", ""),
        (f"_?{_GPT2_LETTERS}+", f"[^stremvldL]|{END_LETTER}"),
        ("_['P]+", f"[^'P]|{END_LETTER}"),
        ("P['P]*|'['P]+", f"[^'P]|{END_LETTER}"),
        ("'", f"{END_LETTER}|[eLN_W]|r([^e]|{END_LETTER})|v([^e]|{END_LETTER})|l([^l]|{END_LETTER})"),
        ("[_W]+", f"N|{END_LETTER}"),  # \s+(?![^\s\p{N}]) reaching a number or the end
        ("[_W]+", f"[_W][^_WN{END_LETTER}]"),  # all but the last of a run before another \S
        ("W", f"[^_WN{END_LETTER}]"),  # \s+: one non-space whitespace before a non-number \S
    ),
)

# cl100k: '(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s
# atoms: ' s t r e m v l d (with their case variants, e.g. ſ for s), L, N, R \r, F \n, _ space, W other \s, P the rest
_CL100K_LETTERS = "[stremvldL]"
_CL100K_NOT_LETTER = "[^stremvldL]"
CL100K_RULES = ChunkRules(
    "cl100k",
    atoms=(("'", "'"), *((c, f"(?i:{c})") for c in _CONTRACTION_LETTERS), ("L", r"\p{L}"), ("N", r"\p{N}"),
           ("R", r"\r"), ("F", r"\n"), ("_", " "), ("W", r"\s"), ("P", r"[\s\S]")),
    forms=(
        ("'([sdmt]|ll|ve|re)", ""),
        # [^\r\n\p{L}\p{N}]?+\p{L}++ (the prefix is possessive; an apostrophe prefix only if no contraction starts)
        (f"[_WP]?{_CL100K_LETTERS}+", f"{_CL100K_NOT_LETTER}|{END_LETTER}"),
        (f"'([eL]|l[stremvdL]|[rv][strmvldL]){_CL100K_LETTERS}*", f"{_CL100K_NOT_LETTER}|{END_LETTER}"),
        ("'[lrv]", f"{_CL100K_NOT_LETTER}|{END_LETTER}"),
        ("NNN", ""),  # \p{N}{1,3}+
        ("NN?", f"[^N]|{END_LETTER}"),
        # ' ?[^\s\p{L}\p{N}]++[\r\n]*+' (without the space only when no letter follows the first character)
        ("_?['P]+[RF]+", f"[^RF]|{END_LETTER}"),
        ("_['P]+|['P]['P]+", f"[^'PRF]|{END_LETTER}"),
        ("['P]", f"[N_W]|{END_LETTER}"),
        ("[_WRF]+", END_LETTER),  # \s++$
        ("[_WRF]*[RF]", f"[_W]*[^_WRF{END_LETTER}]"),  # \s*[\r\n]: up to the last line break of a run before \S
        ("[_W]+", f"[_W][^_WRF{END_LETTER}]"),  # \s+(?!\S)
        ("_", "N"),  # \s: a single whitespace before \S that nothing above takes
        ("W", f"[N'P]"),
    ),
)

# o200k: [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
#       |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
#       |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+          (backtracking, not possessive)
# atoms: ' ; contraction letters by role and case: s (s t m d ſ, lower), S (upper), r (r v), R, e, E, l, L;
# a other lower-only (Ll), A other upper-only (Lu Lt), B both (Lm Lo), M marks (both letter classes, and also
# prefix/punctuation: \p{M} is not \p{L}), N, F \r or \n, / slash, _ space, W other \s, P the rest.
# Write "upper" = [SRELABM] (U), "lower" = [srelaBM] (Lw), letter-ish = their union.  With backtracking, the
# letter core U*Lw+ at a position is: the maximal U-run, plus a lower-only letter right after it and the
# maximal Lw-run from there (core A); else the U-run up to its last B/M (core B; exists only if it has one).
# The prefix is taken when a core follows it (M as prefix gives the same chunk as M starting the core); the
# second alternative is reached only for a run of upper-only letters not followed by lower-case or B/M.
_O200K_CASED = (("s", "stmd"), ("r", "rv"), ("e", "e"), ("l", "l"))
_O200K_LETTERISH = "SRELAsrelaBM"
_O200K_CORE_A = "[SRELABM]*[srela][srelaBM]*"  # followed by a non-lower character
_O200K_CORE_B = "[SRELABM]*[BM]"  # followed by upper-only letters and then a non-letter
_O200K_CONTRACTION = "'([sS]|[rR][eE]|[lL][lL])"
_O200K_NO_CONTRACTION = f"'([^sSrRlL]|{END_LETTER})|'[rR]([^eE]|{END_LETTER})|'[lL]([^lL]|{END_LETTER})"
O200K_RULES = ChunkRules(
    "o200k",
    atoms=(("'", "'"),
           # each contraction letter as (?i:...) folds it, split by case (its variants are all Ll or Lu)
           *(atom for letter, chars in _O200K_CASED
             for atom in ((letter, rf"(?=\p{{Ll}})(?i:[{chars}])"), (letter.upper(), f"(?i:[{chars}])"))),
           ("a", r"\p{Ll}"), ("A", r"[\p{Lu}\p{Lt}]"), ("B", r"[\p{Lm}\p{Lo}]"), ("M", r"\p{M}"), ("N", r"\p{N}"),
           ("F", r"[\r\n]"), ("/", "/"), ("_", " "), ("W", r"\s"), ("P", r"[\s\S]")),
    forms=(
        # first alternative ([^\r\n\p{L}\p{N}]? = ['M/_WP]), with or without a contraction suffix
        (f"['M/_WP]?({_O200K_CORE_A}|{_O200K_CORE_B}){_O200K_CONTRACTION}", ""),
        (f"['M/_WP]?{_O200K_CORE_A}", f"[^srelaBM']|{END_LETTER}|{_O200K_NO_CONTRACTION}"),
        (f"['M/_WP]?{_O200K_CORE_B}",
         f"[SRELA]+([^{_O200K_LETTERISH}]|{END_LETTER})|[^{_O200K_LETTERISH}']|{END_LETTER}|{_O200K_NO_CONTRACTION}"),
        # second alternative: upper-only letters (a prefix M would be a core of its own)
        (f"['/_WP]?[SRELA]+{_O200K_CONTRACTION}", ""),
        (f"['/_WP]?[SRELA]+", f"[^{_O200K_LETTERISH}']|{END_LETTER}|{_O200K_NO_CONTRACTION}"),
        ("NNN", ""),  # \p{N}{1,3}
        ("NN?", f"[^N]|{END_LETTER}"),
        # ' ?[^\s\p{L}\p{N}]+[\r\n/]*' (without the space only when no letter follows the first character)
        ("_['/P]['M/P]*|['/P]['/P]['M/P]*", f"[^'M/PF]|{END_LETTER}"),
        ("(_['/P]['M/P]*|['/P]['/P]['M/P]*|['/P])F[F/]*", f"[^F/]|{END_LETTER}"),
        ("['/P]", f"[N_W]|{END_LETTER}"),
        ("[_WF]*F", f"[_W]*([^_WF]|{END_LETTER})"),  # \s*[\r\n]+: up to the last line break of a run
        ("[_W]+", END_LETTER),  # \s+(?!\S) reaching the end
        ("[_W]+", f"[_W][^_WF{END_LETTER}]"),  # \s+(?!\S): all but the last of a run before \S
        ("_", "N"),  # \s+: a single whitespace before \S that nothing above takes
        ("W", "[N'/P]"),
    ),
)

RULES: dict[str, ChunkRules] = {"gpt2": GPT2_RULES, "cl100k": CL100K_RULES, "o200k": O200K_RULES,
                                "gpt2-digits": GPT2_DIGITS_RULES}
SUPPORTED_PRESETS = tuple(RULES)


def rules_for(pattern: str | None) -> ChunkRules | None:
    """The chunk rules of a pre-tokenization pattern (None: no pattern); BpefstError if unsupported."""
    if pattern is None:
        return None
    for name, rules in RULES.items():
        if PRESETS[name] == pattern:
            return rules
    known = next((name for name, text in PRESETS.items() if text == pattern), None)
    what = f"the {known} pre-tokenization pattern" if known else "a custom pre-tokenization pattern"
    raise BpefstError(f"promote cannot model {what} (supported: {', '.join(SUPPORTED_PRESETS)}); "
                      f"pass --no-pretokenize (pretokenize=False in Python) to treat each match as one chunk")


class Chunker:
    """The chunker of one preset: atoms of code points and the class-level DFA.

    ``dfa`` reads atom ids ``0..len(atoms)-1`` and :attr:`boundary` (= the atom
    count); see the module docstring.
    """

    def __init__(self, rules: ChunkRules):
        self.rules = rules
        self.letters = [letter for letter, _ in rules.atoms]
        self.boundary = len(self.letters)
        self.atom_ranges = _atom_ranges(rules.atoms)
        starts: list[tuple[int, int, int]] = sorted((lo, hi, k) for k, ranges in enumerate(self.atom_ranges) for lo, hi in ranges)
        self._starts = [lo for lo, _, _ in starts]
        self._spans = starts
        self.dfa = _chunker_dfa(rules, self.letters)

    def atom_of(self, codepoint: int) -> int | None:
        """The atom of a code point (None for a surrogate)."""
        i = bisect_right(self._starts, codepoint) - 1
        if i < 0:
            return None
        lo, hi, k = self._spans[i]
        return k if codepoint <= hi else None

    def atoms_of_text(self, text: str) -> list[int] | None:
        out = [self.atom_of(ord(c)) for c in text]
        return None if None in out else out  # type: ignore[return-value]


@lru_cache(maxsize=len(RULES))  # one per preset
def chunker_for(preset: str) -> Chunker:
    return Chunker(RULES[preset])


def _atom_ranges(atoms: tuple[tuple[str, str], ...]) -> list[Ranges]:
    """Disjoint code point ranges per atom: each atom minus the atoms listed before it."""
    taken: Ranges = ()
    out: list[Ranges] = []
    for _, source in atoms:
        own = _subtract(scalar_ranges(source), taken)
        out.append(own)
        taken = normalize(taken + own)
    return out


def _subtract(a: Ranges, b: Ranges) -> Ranges:
    """The code points of ``a`` not in ``b`` (both sorted, disjoint): one pass over both."""
    out: list[tuple[int, int]] = []
    first = 0  # b's ranges before it end below every range of a still to come
    for lo, hi in a:
        while first < len(b) and b[first][1] < lo:
            first += 1
        k = first
        while k < len(b) and b[k][0] <= hi and lo <= hi:
            blo, bhi = b[k]
            if blo > lo:
                out.append((lo, blo - 1))
            lo = max(lo, bhi + 1)
            k += 1
        if lo <= hi:
            out.append((lo, hi))
    return normalize(out)


def _chunker_dfa(rules: ChunkRules, letters: list[str]) -> DFA:
    """Subset construction over (form, chunk state, pending follow obligations); minimized."""
    end, boundary = len(letters) + 1, len(letters)
    alphabet = CharAlphabet({letter: k for k, letter in enumerate(letters)} | {END_LETTER: end})
    chunks = [compile_regex(chunk, alphabet) for chunk, _ in rules.forms]
    follows = [compile_regex(follow, alphabet) if follow else None for _, follow in rules.forms]
    for chunk, (source, _) in zip(chunks, rules.forms):
        if chunk.start in chunk.finals or end in chunk.alphabet():
            raise AssertionError(f"chunk form {source!r} must match non-empty text only")
    fresh = frozenset((f, chunks[f].start, frozenset()) for f in range(len(chunks)))

    def read(config, atom: int):
        form, state, pending = config
        state = chunks[form].step(state, atom)
        if state is None:
            return None
        kept = []
        for g, y in pending:
            y = follows[g].step(y, atom)
            if y is None:
                return None
            if y not in follows[g].finals:
                kept.append((g, y))
        return form, state, frozenset(kept)

    def cut(config) -> frozenset:
        form, state, pending = config
        if state not in chunks[form].finals:
            return frozenset()
        if follows[form] is not None:
            pending = pending | {(form, follows[form].start)}
        return frozenset((f, chunks[f].start, pending) for f in range(len(chunks)))

    def finishes(config) -> bool:
        form, state, pending = config
        if state not in chunks[form].finals:
            return False
        obligations = list(pending) + ([(form, follows[form].start)] if follows[form] is not None else [])
        return all(follows[g].step(y, end) in follows[g].finals for g, y in obligations)

    index = {fresh: 0}
    queue = [fresh]
    rows: list[dict[int, int]] = []
    finals = []
    for subset in queue:
        row: dict[int, int] = {}
        if any(finishes(c) for c in subset):
            finals.append(len(rows))
        moves = {atom: frozenset(filter(None, (read(c, atom) for c in subset))) for atom in range(len(letters))}
        moves[boundary] = frozenset().union(*(cut(c) for c in subset))
        for symbol, target in moves.items():
            if target:
                if target not in index:
                    index[target] = len(queue)
                    queue.append(target)
                row[symbol] = index[target]
        rows.append(row)
    return minimize(DFA(rows, 0, frozenset(finals), check=False))
