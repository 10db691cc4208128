"""Canonical promotion aware of pre-tokenization (GPT-2, cl100k, o200k).

**The rule.**  A real tokenizer cuts a text ``s`` with its pattern ``R``
(``regex.findall(R, s)``) and runs BPE on each chunk.  So the token sequences
it produces for the matches of a pattern are exactly the sequences that

1. spell a string ``s`` the pattern matches,
2. have no token spanning a chunk boundary of ``findall(R, s)``, and
3. inside each chunk, have every adjacent token pair canonical (and every
   token reachable): A_BPE is 1-local (seed 000 Sec. 6.5), so this says each
   chunk's tokens are BPE of that chunk.  Pairs across a chunk boundary are
   exempt; A_BPE restarts after a boundary.

Special tokens are never produced: pattern text is ordinary text.  The result
accepts ``{Tokenizer.encode_ordinary(s) : s matches the pattern}``; with a
pattern that never crosses a chunk boundary it equals the whole-match
canonical promotion (Eq. 5 of seed 000).

**Construction.**

1. *Chunked pattern* ``D``: the pattern DFA times the preset's chunker
   (:mod:`.chunking`), over the base symbols plus :data:`BOUNDARY`;
   ``BOUNDARY`` moves only the chunker.  For byte-level tokenizers the chunker
   reads characters through a UTF-8 decoder automaton whose exits name the
   character's class, so ``D`` is deterministic and ``BOUNDARY`` can only
   occur between whole characters.  Built lazily from the start and trimmed.
2. *Token lattice*: the arcs of the agnostic promotion (Eq. 3) of ``D``
   ignoring ``BOUNDARY`` (:func:`.agnostic.token_arcs`): a token's spelling
   stays inside one chunk because it cannot read ``BOUNDARY``.
3. *Canonical subset construction*: a configuration is a lattice state plus
   what A_BPE remembers of the last token, as in :mod:`.canonical` (the tokens
   the state could read that the last token bans).  A token continues the
   chunk (pair check against the previous token) and, where ``D`` has a
   ``BOUNDARY`` arc, the next token may instead start a new chunk (nothing
   banned).  Both can be alive at once until the text decides, so the
   configurations are grouped into subsets; subsets stay small because the
   chunking is a function of the text.  It reads the lattice with its
   liveness solved (:mod:`.on_demand`: each row kept to the tokens after
   which a final state can still be reached), so every subset it makes can
   reach a final state.  The result is trim, its rows shared
   (:class:`~bpefst.automata.shared_rows.SharedRowDFA`); it is the
   ``shared_rows()`` view of a :class:`~.token_language.TokenLanguage`.
"""

from __future__ import annotations

from functools import lru_cache

from .. import native
from ..automata import DFA, difference, shortest_accepted, trim
from ..automata.trimming import accessible, coaccessible
from ..automata.numbering import Numbering
from ..automata.shared_rows import SharedRowDFA
from ..automata.errors import ArcLimitExceeded, StateLimitExceeded
from ..bpe import CanonicalAutomaton
from ..errors import BpefstError
from ..regex import alphabet_for, compile_regex
from ..regex.utf8 import utf8_decoder as utf8_class_decoder
from ..tokenizer import PRESETS, BPEModel
from .agnostic import LATTICE, SpellingTrie
from .canonical import banned_view, set_bits, token_mask
from .chunking import RULES, Chunker, chunker_for, rules_for

BOUNDARY = 1 << 40  # larger than any token id; never in a spelling trie


def chunker_or_whole(pattern: DFA, model: BPEModel, pretokenizer: str | None) -> Chunker | None:
    """The chunker for ``pretokenizer``, or None when every match is one chunk anyway.

    None for no pre-tokenization, and for HF's ``whitespace`` pattern
    (``\\w+|[^\\w\\s]+``) when every match is a single ``\\w`` run or a
    single run of other non-space characters (that pattern drops text, which
    a token automaton cannot model, so other patterns are refused).
    """
    if pretokenizer is None:
        return None
    if pretokenizer == PRESETS["whitespace"]:
        _require_single_whitespace_chunk(pattern, model)
        return None
    return chunker_for(rules_for(pretokenizer).preset)  # type: ignore[union-attr]


def _require_single_whitespace_chunk(pattern: DFA, model: BPEModel) -> None:
    one_chunk = compile_regex(PRESETS["whitespace"], alphabet_for(model))
    witness = shortest_accepted(difference(pattern, one_chunk))
    if witness is not None:
        text = "".join(model.vocab[i] if isinstance(model.vocab[i], str) else model.vocab[i].decode("utf-8", "replace") for i in witness)
        raise BpefstError(f"the pattern matches {text!r}, which the whitespace pre-tokenizer splits or trims, and promote "
                          f"cannot model that; pass --no-pretokenize (pretokenize=False in Python) to treat each match as one chunk")


# ---------------------------------------------------------------- step 1: the chunked pattern
# Chunked pattern arcs -> token lattice arcs: the fewest seen on the JSONSchemaBench sample (320 schemas, seed
# 27) among chunked patterns of 100,000 arcs or more, the mid-character states merged: 6.05 over GPT-2 (most
# 8.0-8.2), 8.40 over cl100k (most 11-11.2), lattice arcs counted after A_BPE's unreachable tokens are dropped.
# A chunked pattern whose arcs times this pass max_arcs has its lattice counted before its rows are made
# (chunk_product), and promote's cuts of a JSON Schema refuse on the estimate alone (promotion.schema_fallback).
LATTICE_PER_CHUNKED_ARC = 6.0


def chunked_pattern(pattern: DFA, model: BPEModel, chunker: Chunker, max_states: int | None = None,
                    max_arcs: int | None = None, trie: SpellingTrie | None = None) -> DFA:
    """``pattern x chunker`` over base symbols and :data:`BOUNDARY` (trimmed, mid-character states merged).

    A state is ``(pattern state, chunker state, decoder state)``; the decoder
    state is 0 between characters (character-level models always).  The
    empty text is zero chunks: it is accepted when the pattern accepts it.
    Inside a character the product keys a state on the first chunker state
    that moves alike on the atoms left (:func:`mid_character_chunks`), and
    the states with the same future left after that are merged
    (:func:`_merged_mid_character`).  On the compiled core the product, the
    trim and the merge run there (``bpefst._core.chunk_product``);
    :func:`_chunked_pattern` is its pure twin.

    ``max_arcs`` bounds the token lattice promotion builds next, and every
    arc of the chunked pattern on a symbol is one of its arcs (base symbols
    are tokens): past it the lattice's ArcLimitExceeded is raised here, before
    the rows are made (a JSON Schema's chunked pattern can have 40 million).  Given the tokenizer's ``trie``,
    a chunked pattern whose arcs times :data:`LATTICE_PER_CHUNKED_ARC` pass ``max_arcs`` has its lattice
    counted there too (on the compiled core, the same refusal the walk would give, without the rows).
    """
    values, decoder = _symbol_values(model, chunker)
    if native.core is not None:
        walker = trie.native_walker() if trie is not None and max_arcs is not None else None
        symbol_map = model.base_byte_table if model.level == "byte" else native.symbol_table(values)
        chunked = _chunked_natively(pattern, symbol_map, decoder, chunker, max_states, max_arcs, walker)
        if chunked is not None:
            return chunked
    chunked = _chunked_pattern(pattern, _symbol_stepper(values, decoder, chunker), chunker, max_states)
    if max_arcs is not None and sum(len(row) - (BOUNDARY in row) for row in chunked.transitions) > max_arcs:
        raise ArcLimitExceeded(LATTICE, max_arcs, written_out=False)
    return chunked


def _chunked_pattern(pattern: DFA, step_symbol, chunker: Chunker, max_states: int | None) -> DFA:
    """:func:`chunked_pattern` in Python: states numbered breadth first, then trimmed and merged."""
    chunks = chunker.dfa.transitions
    cut = chunker.boundary
    number = Numbering(CHUNKED, max_states)
    states: list[tuple[int, int, int]] = number.keys
    rows: list[dict[int, int]] = []
    number((pattern.start, chunker.dfa.start, 0))
    finals = []
    for p, c, d in states:  # grows while we iterate
        row: dict[int, int] = {}
        for symbol, p_next in pattern.transitions[p].items():
            moved = step_symbol(c, d, symbol)
            if moved is not None:
                row[symbol] = number((p_next, *moved))
        if d == 0 and cut in chunks[c]:
            row[BOUNDARY] = number((p, chunks[c][cut], 0))
        if d == 0 and p in pattern.finals and c in chunker.dfa.finals:
            finals.append(len(rows))
        rows.append(row)
    start = 0
    if pattern.start in pattern.finals and 0 not in finals:
        # The empty text is zero chunks, which the chunker (one chunk or more) does not accept.
        # A fresh start keeps that acceptance off the chunker's start state, which later text can reach.
        start = len(rows)
        rows.append(dict(rows[0]))
        finals.append(start)
    product = DFA(rows, start, frozenset(finals), check=False)
    acc, coacc = accessible(product), coaccessible(product)
    if not coacc[start]:
        return DFA.empty_language()
    inside = [d != 0 for _, _, d in states] + [False] * (len(rows) - len(states))  # (a fresh start is between characters)
    mid = [is_mid for q, is_mid in enumerate(inside) if acc[q] and coacc[q]]
    return _merged_mid_character(trim(product), mid)


MERGE_MAX_SYMBOL = 1 << 22  # symbols past this (no vocabulary has them) leave a chunked pattern unmerged
MERGE_ROUNDS = 8  # rounds of merging (a character's states merge in four at most)


def _merged_mid_character(dfa: DFA, mid: list[bool]) -> DFA:
    """``dfa`` with its mid-character states of the same future merged (``mid``: a flag per state).

    A state inside a character reads continuation bytes only and reaches a
    state between characters within three bytes, so its future is its row:
    states whose rows read the same symbols to the same (merged) targets are
    equivalent, and each is merged into the first of them, round after round
    until nothing merges.  A JSON string's mid-character states, one per
    decoder state, chunker state and string, mostly agree (over GPT-2 a
    schema's 66k trimmed states became 20k; keyed as
    :func:`mid_character_chunks` says, the product makes 21k and this merges
    them to the same 20k), and the lattice promotion walks next shrinks with
    them.  States between characters are left apart (merging
    them is the whole minimization, which costs more than the walk it saves).
    The states left keep their order and their rows' order.  The compiled
    twin is ``chunk_merge_mid`` in ``src/core/promote.h``.
    """
    rows = dfa.transitions
    if max((max(row, default=0) for row, is_mid in zip(rows, mid) if is_mid), default=0) > MERGE_MAX_SYMBOL:
        return dfa
    merged = list(range(len(rows)))
    for _ in range(MERGE_ROUNDS):
        first: dict[frozenset, int] = {}
        found = [first.setdefault(frozenset((symbol, merged[r]) for symbol, r in row.items()), q) if is_mid else q
                 for q, (row, is_mid) in enumerate(zip(rows, mid))]
        if found == merged:
            break
        merged = found
    left = [q for q, m in enumerate(merged) if m == q]
    if len(left) == len(rows):
        return dfa
    number = {q: k for k, q in enumerate(left)}
    return DFA([{symbol: number[merged[r]] for symbol, r in rows[q].items()} for q in left], number[merged[dfa.start]],
               frozenset(number[merged[q]] for q in dfa.finals), check=False)


CHUNKED = "the chunked pattern"


def _core_limit(limit: int | None) -> int:
    """A state or arc limit as the core's routines take it: -1 for none, else within 0 .. 2**62 (64-bit)."""
    return -1 if limit is None else min(max(limit, 0), 1 << 62)


def _chunked_natively(pattern: DFA, symbol_map, decoder: list[dict[int, int]] | None, chunker: Chunker,
                      max_states: int | None, max_arcs: int | None = None, walker=None) -> DFA | None:
    """:func:`_chunked_pattern` on the compiled core, the same DFA; None where the core cannot take the symbols
    (``symbol_map``: :func:`bpefst.native.symbol_table` of what each symbol stands for, None when it had none).

    Its rows are a ``bpefst._core.PackedRows``: arrays the compiled walks read as they are, seen from Python
    as the list of dicts, each dict made when first asked for (a decoder asks for a few hundred of a JSON
    Schema's 20,000-150,000 states; making them all, then packing them back for each walk, was a fifth of
    the set-up)."""
    if symbol_map is None:
        return None
    packed_decoder, packed_chunks, packed_inside = _packed_chunker(chunker.rules.preset, decoder is not None)
    finals = bytearray(len(pattern.transitions))
    for q in pattern.finals:
        finals[q] = 1
    chunk_finals = bytearray(len(chunker.dfa.transitions))
    for c in chunker.dfa.finals:
        chunk_finals[c] = 1
    limit, arcs_limit = _core_limit(max_states), _core_limit(max_arcs)
    found = native.core.chunk_product(pattern.transitions, pattern.start, finals, symbol_map, packed_decoder,
                                      packed_chunks, packed_inside, chunker.boundary, chunker.dfa.start, chunk_finals,
                                      BOUNDARY, limit, arcs_limit, walker, LATTICE_PER_CHUNKED_ARC)
    if found is None:
        raise StateLimitExceeded(CHUNKED, max_states)
    if found is False:
        raise ArcLimitExceeded(LATTICE, max_arcs, written_out=False)
    rows, start, finals_found = found
    if rows is None:
        return DFA.empty_language()
    return DFA(rows, start, frozenset(finals_found), check=False)


@lru_cache(maxsize=2 * len(RULES))  # per preset, bytes or characters
def _packed_chunker(preset: str, byte_level: bool) -> tuple[bytes, bytes, bytes]:
    chunker = chunker_for(preset)
    if not byte_level:
        return native.chunker_tables(None, chunker.dfa.transitions, chunker.boundary, None)
    return native.chunker_tables(utf8_decoder(preset), chunker.dfa.transitions, chunker.boundary,
                                 mid_character_chunks(preset))


def _symbol_values(model: BPEModel, chunker: Chunker) -> tuple[dict[int, int], list[dict[int, int]] | None]:
    """What the chunking reads of each base symbol: its byte and the UTF-8 decoder (byte-level models), or
    its atom and None (character-level models; symbols of no atom are left out)."""
    if model.level == "byte":
        return model.base_bytes, utf8_decoder(chunker.rules.preset)
    if model.end_of_word_suffix:
        raise BpefstError("pre-tokenization-aware promotion does not support end-of-word suffixes; pass --no-pretokenize (pretokenize=False in Python)")
    atoms = {}
    for i in model.base_ids:
        text = model.vocab[i]
        if isinstance(text, str) and len(text) == 1:
            atom = chunker.atom_of(ord(text))
            if atom is not None:
                atoms[i] = atom
    return atoms, None


def _symbol_stepper(values: dict[int, int], decoder: list[dict[int, int]] | None, chunker: Chunker):
    """``(chunker state, decoder state, base symbol) -> (chunker state, decoder state)`` or None."""
    chunks = chunker.dfa.transitions
    if decoder is not None:
        inside = mid_character_chunks(chunker.rules.preset)

        def step(c: int, d: int, symbol: int):
            b = values.get(symbol)
            nxt = None if b is None else decoder[d].get(b)
            if nxt is None:
                return None
            if nxt >= 0:
                c = inside[nxt][c]
                return None if c < 0 else (c, nxt)
            c = chunks[c].get(-1 - nxt)
            return None if c is None else (c, 0)

        return step

    def step_char(c: int, d: int, symbol: int):
        atom = values.get(symbol)
        c = None if atom is None else chunks[c].get(atom)
        return None if c is None else (c, 0)

    return step_char


@lru_cache(maxsize=len(RULES))  # one per preset
def utf8_decoder(preset: str) -> list[dict[int, int]]:
    """A DFA reading one UTF-8 character: ``rows[d][byte]`` is the next state, or ``-1 - atom`` at its end.

    The preset's atoms are disjoint classes of code points, and
    :func:`bpefst.regex.utf8.utf8_decoder` builds the minimal such DFA
    directly (7 ms over GPT-2's 14 atoms; the union of one UTF-8 DFA per
    atom, determinized, took 26 ms and gave the same automaton).  Invalid
    UTF-8 has no path.
    """
    return utf8_class_decoder(chunker_for(preset).atom_ranges)


@lru_cache(maxsize=len(RULES))  # one per preset
def mid_character_chunks(preset: str) -> list[list[int]]:
    """``table[d][c]``: the chunker state the product keeps inside a character (decoder state ``d``) for ``c``, or -1.

    Inside a character the chunker only waits: its next move is ``chunks[c][atom]``
    for the atom the character ends in, and after decoder state ``d`` only some
    atoms are left (:func:`decoder_endings`).  Chunker states that move alike on
    each of them have the same future there, so the product keys the state on
    the first of them; where ``c`` takes none of them (-1) the character leads
    nowhere and its states are not made.  Both would go anyway (the merge of
    :func:`_merged_mid_character` finds the first, the trim the second), and
    the states left out have rows equal to the ones kept, so the DFA is the
    same, state for state; but they were most of the work.  A JSON Schema over
    GPT-2 (JSONSchemaBench's ``Github_easy---o68325``): the product numbered
    102,211 states and 3.3M arcs, of which the trim kept 65,881 and the merge
    19,783; keyed so, it numbers 20,844 states and 0.8M arcs (cl100k: 111,938
    -> 32,196 for 29,830 kept).
    """
    decoder = utf8_decoder(preset)
    chunks = chunker_for(preset).dfa.transitions
    by_endings: dict[tuple[int, ...], list[int]] = {}
    table = []
    for endings in decoder_endings(decoder):
        if endings not in by_endings:
            first: dict[tuple[int, ...], int] = {}
            moves = [tuple(row.get(atom, -1) for atom in endings) for row in chunks]
            by_endings[endings] = [first.setdefault(move, c) if max(move, default=-1) >= 0 else -1
                                   for c, move in enumerate(moves)]
        table.append(by_endings[endings])
    return table


def decoder_endings(decoder: list[dict[int, int]]) -> list[tuple[int, ...]]:
    """Per state of a :func:`utf8_decoder`, the atoms the character read so far can end in, ascending."""
    endings: dict[int, frozenset[int]] = {}

    def of(d: int) -> frozenset[int]:  # (a character is at most four bytes: the recursion is as deep)
        if d not in endings:
            endings[d] = frozenset().union(*(of(v) if v >= 0 else {-1 - v} for v in decoder[d].values()))
        return endings[d]

    return [tuple(sorted(of(d))) for d in range(len(decoder))]


# ---------------------------------------------------------------- steps 2-3: lattice and subsets
class _BanSpace:
    """Banned sets as bitsets over the numbering of :func:`.canonical.banned_view`.

    That is the explicit encoding's own bitsets over token ids, or the implicit
    one's restricted to the lattice's tokens.  A configuration keeps its banned
    set as such an int: for GPT-2's e-mail or JSON patterns there are some
    50,000 configurations banning about 700 tokens each, and listing them
    would take most of the time.  Tokens are listed only when a caller asks
    (:class:`BannedTokens`).
    """

    def __init__(self, lattice: list[dict[int, int]], automaton: CanonicalAutomaton):
        self.lattice = lattice
        self.token_class, self.class_banned, self.bit_of, self.token_of_bit = banned_view(lattice, automaton)
        self._out: list[int | None] = [None] * len(lattice)
        self._within: dict[tuple[int, int], int] = {}
        self._sets: dict[int, BannedTokens] = {}
        self.last_bytes: tuple[BannedTokens | None, bytes] = (None, b"")  # see BannedTokens.__contains__
        self._row_masks: dict[int, tuple[dict, int]] = {}  # id(row) -> (row, its bitset)

    def within(self, t: int, r: int) -> int:
        """``BANNED(t) ∩ out(r)`` (memoized by token class and ``r``)."""
        c = self.token_class[t]
        found = self._within.get((c, r))
        if found is None:
            out = self._out[r]
            if out is None:
                out = self._out[r] = self.mask_of(self.lattice[r])
            found = self._within[(c, r)] = out & self.class_banned[c]
        return found

    def bit(self, t: int) -> int:
        """The bit of token ``t``, or -1 (a token no lattice row reads)."""
        if self.bit_of is None:
            return t
        return self.bit_of.get(t, -1)

    def mask_of(self, tokens) -> int:
        return token_mask(tokens if self.bit_of is None else map(self.bit_of.__getitem__, tokens))

    def row_mask(self, row: dict[int, int]) -> int:
        found = self._row_masks.get(id(row))
        if found is None or found[0] is not row:  # the row is kept, so its id is not reused
            found = self._row_masks[id(row)] = (row, self.mask_of(row))
        return found[1]

    def tokens(self, mask: int) -> list[int]:
        bits = set_bits(mask)
        return bits if self.token_of_bit is None else [self.token_of_bit[b] for b in bits]

    def tokens_of(self, mask: int) -> "BannedTokens":
        """``mask`` as a set of tokens, one object per distinct mask."""
        found = self._sets.get(mask)
        if found is None:
            found = self._sets[mask] = BannedTokens(mask, self)
        return found


class BannedTokens:
    """A banned set as a read-only set of tokens; the tokens are listed the first time they are iterated."""

    __slots__ = ("mask", "space", "_listed")

    def __init__(self, mask: int, space: _BanSpace):
        self.mask, self.space = mask, space
        self._listed: frozenset[int] | None = None

    def __contains__(self, token: int) -> bool:
        listed = self._listed
        if listed is not None:
            return token in listed
        space = self.space
        bit = space.bit(token)
        if bit < 0:
            return False
        # Tests come in runs on one set (a row checked against it); shifting a
        # 50k-bit int costs a microsecond, so its bytes are kept for the run.
        owner, data = space.last_bytes
        if owner is not self:
            data = self.mask.to_bytes((self.mask.bit_length() + 7) >> 3, "little")
            space.last_bytes = (self, data)
        index = bit >> 3
        return index < len(data) and (data[index] >> (bit & 7)) & 1 == 1

    def __iter__(self):
        if self._listed is None:
            self._listed = frozenset(self.space.tokens(self.mask))
        return iter(self._listed)

    def __len__(self) -> int:
        return self.mask.bit_count()

    def __bool__(self) -> bool:
        return self.mask != 0

    def count_in(self, row: dict[int, int]) -> int:
        """How many tokens of ``row`` are in the set."""
        return (self.mask & self.space.row_mask(row)).bit_count()


def shared_canonical_subsets(product, max_states: int | None = None, max_arcs: int | None = None) -> SharedRowDFA:
    """The canonical token DFA over the chunked pattern, trim, with its rows shared (not minimized).

    Built over ``product``, the canonical product with its liveness solved
    (:class:`.on_demand.OnDemandCanonical`: the token lattice of the chunked
    pattern, each row kept to ``good[q]``, the tokens that lead somewhere a
    final state can still be reached from).  Every state it makes is then
    live, so only reachability is searched to trim it (:func:`_trimmed`): a
    state is entered by a token ``t`` of some part's ``good[q]``, and ``t`` is
    there because one of the configurations it leads to can still reach a
    final state.

    ``max_states`` bounds its states, ``max_arcs`` the arcs it would write
    out (StateLimitExceeded / ArcLimitExceeded).  For ``max_arcs`` each state
    counts the arcs of its largest part (its lattice row minus what that
    part bans), a lower bound, so that ``.*`` over cl100k (2.5 billion arcs)
    is refused while it is being built, not after.

    A configuration is ``(q, banned)``: lattice state ``q`` and the tokens
    ``q`` can read that the previous token of the chunk bans (a bitset, see
    :class:`_BanSpace`).  Reading ``t`` on the arc ``q -t-> r`` leads to
    ``(r, BANNED(t) ∩ out(r))`` and, if ``r`` has a ``BOUNDARY`` arc to
    ``r'``, also to ``(r', {})``.

    Where an arc ``q -t-> r`` leads depends only on ``r`` and the class of
    ``t``, not on the configuration it leaves from, so each lattice state's
    arcs are resolved once into a shared row (:class:`SharedRowDFA`).  A
    subset of configurations is the tuple of its ``(q, banned)``: its arcs
    are the shared rows of its lattice states minus their banned tokens, and
    a token that several configurations read leads to the union of its
    successors (an override).  Nothing is copied per state, so automata with
    hundreds of millions of arcs (e-mail or JSON patterns over cl100k) take
    time in proportion to their states and the lattice, not their arcs.

    On the compiled core (:func:`_subsets_natively`) the same states come out
    numbered alike; :func:`_subsets_in_python` is its pure twin.
    """
    if product.start is None:  # no canonical sequence spells a match
        return SharedRowDFA([{} for _ in product.cut], [()], [None], 0, frozenset(), [True])
    compiled = _subsets_natively(product, max_states, max_arcs)
    return compiled if compiled is not None else _subsets_in_python(product, max_states, max_arcs)


def _subsets_in_python(product, max_states: int | None = None, max_arcs: int | None = None) -> SharedRowDFA:
    """:func:`shared_canonical_subsets` in Python, for a product whose start is not None.

    Its order is the specification the compiled twin follows step for step:
    states in the order numbered, a state's configurations sorted (by ``q``,
    then the banned bitset as an int), a row's tokens in the lattice's order,
    pending and overridden tokens ascending.
    """
    automaton, cut, lattice_finals = product.automaton, product.cut, product.finals_q
    lattice = [product.lattice_row(q) for q in range(len(cut))]
    space = _BanSpace(lattice, automaton)
    within, token_class = space.within, space.token_class

    def successors(t: int, r: int) -> tuple[tuple[int, int], ...]:
        """The configurations the arc ``-t-> r`` leads to."""
        banned = within(t, r)
        after = cut[r]
        return ((r, banned),) if after is None else ((r, banned), (after, 0))

    number = Numbering(SUBSETS, max_states)
    queue: list[frozenset] = number.keys
    arc_target: dict[int, int] = {}  # class of t * len(lattice) + r -> the subset after -t-> r
    width = len(lattice)

    def target(t: int, r: int) -> int:
        key = token_class[t] * width + r
        k = arc_target.get(key)
        if k is None:
            k = arc_target[key] = number(frozenset(successors(t, r)))
        return k

    # resolved[q]: token -> subset for the arcs of q resolved so far.  Arcs banned at
    # the first visit of q wait in pending[q] (a bitset), so no subset is created that
    # no allowed arc reaches; a later visitor that allows them resolves them.
    resolved: list[dict[int, int] | None] = [None] * len(lattice)
    pending: list[int] = [0] * len(lattice)

    def resolve(q: int, banned: int) -> None:
        done = resolved[q]
        if done is None:
            done = resolved[q] = {}
            pending[q] = banned
            skip = set(space.tokens(banned)) if banned else ()
            known = arc_target.get  # (target() inlined: this loop is every arc of the lattice)
            for t, r in lattice[q].items():
                if t not in skip:
                    k = known(token_class[t] * width + r)
                    done[t] = target(t, r) if k is None else k
        elif pending[q]:
            now = pending[q] & ~banned
            if now:
                row = lattice[q]
                for t in sorted(space.tokens(now)):
                    done[t] = target(t, row[t])
                pending[q] &= banned

    shared_tokens = _SharedTokens(lattice)

    def overrides(parts: tuple) -> dict[int, int | None] | None:
        """Tokens that several configurations read -> the union of their successors."""
        over: dict[int, int | None] = {}
        for t in sorted(shared_tokens(frozenset(q for q, _ in parts))):
            targets = set()
            readers = 0
            bit = space.bit(t)
            for q, banned in parts:
                r = lattice[q].get(t)
                if r is not None and not (banned >> bit) & 1:
                    readers += 1
                    targets.update(successors(t, r))
            if readers > 1:
                over[t] = number(frozenset(targets))
        return over or None

    number(frozenset({(product.start_q, 0)}))
    parts_of: list[tuple] = []
    overrides_of: list[dict[int, int | None] | None] = []
    banned_tokens = space.tokens_of
    at_least = 0  # arcs the states so far will write, at least
    for subset in queue:  # grows while we iterate
        parts = tuple(sorted(subset))
        for q, banned in parts:
            resolve(q, banned)
        if max_arcs is not None:
            at_least += max(len(lattice[q]) - banned.bit_count() for q, banned in parts)
            if at_least > max_arcs:
                raise ArcLimitExceeded(CANONICAL_AUTOMATON, max_arcs)
        parts_of.append(tuple((q, banned_tokens(banned)) for q, banned in parts))
        overrides_of.append(overrides(parts) if len(parts) > 1 else None)
    finals = frozenset(k for k, subset in enumerate(queue) if any(q in lattice_finals for q, _ in subset))
    shared = [row if row is not None else {} for row in resolved]
    return _trimmed(SharedRowDFA(shared, parts_of, overrides_of, 0, finals))


SUBSETS, CANONICAL_AUTOMATON = "pre-tokenized canonical promotion", "the canonical automaton"


def _subsets_natively(product, max_states: int | None, max_arcs: int | None) -> SharedRowDFA | None:
    """:func:`shared_canonical_subsets` on the compiled core (``bpefst._core.canonical_subsets``, the same
    states numbered alike), reading the lattice as liveness filed it and BANNED(t) off the tokenizer's
    ``BannedIndex``; None where the core does not run."""
    index = product.automaton.banned_index()
    if index is None:
        return None
    found = native.core.canonical_subsets(index, product.filed, product.cut, sorted(product.finals_q), product.start_q,
                                          _core_limit(max_states), _core_limit(max_arcs))
    if found is None:
        raise StateLimitExceeded(SUBSETS, max_states)
    if found is False:
        raise ArcLimitExceeded(CANONICAL_AUTOMATON, max_arcs)
    return SharedRowDFA.from_core(found)


class _SharedTokens:
    """``qs -> the tokens that at least two of the lattice states qs read`` (memoized; usually a few)."""

    def __init__(self, lattice: list[dict[int, int]]):
        self.lattice = lattice
        self.memo: dict[frozenset, frozenset[int]] = {}

    def __call__(self, qs: frozenset) -> frozenset[int]:
        found = self.memo.get(qs)
        if found is None:
            seen: set[int] = set()
            common: set[int] = set()
            for q in qs:
                row = self.lattice[q]
                common.update(seen.intersection(row))
                seen.update(row)
            found = self.memo[qs] = frozenset(common)
        return found


def _trimmed(automaton: SharedRowDFA) -> SharedRowDFA:
    """Mark the states that are not reachable dead; drop every arc into them.

    Every state reaches a final state (see :func:`shared_canonical_subsets`), but a
    shared row's target may be reached only through tokens that every state over
    it overrides, so some are not reached at all.  A state's parts share rows
    with other states, so the search works on lattice states: a part ``(q,
    banned)`` reads every target of ``q``'s row except the few that only banned
    tokens lead to (:class:`_RowTargets`), and each target is checked through a
    part over ``q`` only until some state reaches it that way.
    """
    shared, parts_of, overrides_of = automaton.shared, automaton.parts, automaton.overrides
    targets = _RowTargets(shared)
    useful = _reachable(automaton, targets)
    if all(useful):
        return automaton
    for q, row in enumerate(shared):
        if not all(useful[x] for x in targets.distinct(q)):
            shared[q] = {t: x for t, x in row.items() if useful[x]}
    for s, alive in enumerate(useful):
        if not alive:
            parts_of[s], overrides_of[s] = (), None
        elif overrides_of[s]:
            overrides_of[s] = {t: (x if x is not None and useful[x] else None) for t, x in overrides_of[s].items()}
    finals = frozenset(s for s in automaton.finals if useful[s])
    return SharedRowDFA(shared, parts_of, overrides_of, automaton.start, finals, [not alive for alive in useful])


class _RowTargets:
    """Per shared row: its distinct targets, and the tokens that lead to each (built once per row)."""

    def __init__(self, shared: list[dict[int, int]]):
        self.shared = shared
        self._distinct: dict[int, frozenset[int]] = {}
        self._tokens_to: dict[int, dict[int, list[int]]] = {}

    def distinct(self, q: int) -> frozenset[int]:
        found = self._distinct.get(q)
        if found is None:
            found = self._distinct[q] = frozenset(self.shared[q].values())
        return found

    def reads(self, q: int, x: int, excluded, shadowed=()) -> bool:
        """Whether a part ``(q, excluded)`` reads a token leading to ``x`` (not excluded, not shadowed)."""
        tokens_to = self._tokens_to.get(q)
        if tokens_to is None:
            tokens_to = self._tokens_to[q] = {}
            for t, target in self.shared[q].items():
                tokens_to.setdefault(target, []).append(t)
        for t in tokens_to.get(x, ()):
            if t not in excluded and t not in shadowed:
                return True
        return False


def _reachable(automaton: SharedRowDFA, targets: _RowTargets) -> bytearray:
    """Forward search; a token that an override shadows does not lead to its part's target.

    What a row still has to contribute is kept per lattice state: after the
    first part over ``q``, only the few targets that part could not read.
    A part ``(q, B)`` without overrides whose banned bitset ``B`` contains the
    intersection of those of the parts over ``q`` looked at so far reaches
    nothing new (a target its tokens reach is reached by a part banning
    less), so it is skipped: GPT-2 numbers have 284 parts over each digit
    state, and few of them shrink the intersection.  Parts that ban nothing
    go first, and the others wait until the queue runs dry: by then a part
    banning nothing has often reached their whole row (LIFO, which measured
    better than FIFO on e-mail).
    """
    parts_of, overrides_of = automaton.parts, automaton.overrides
    seen = bytearray(len(parts_of))
    seen[automaton.start] = 1
    queue = [automaton.start]
    unmarked: dict[int, set[int]] = {}  # lattice state -> targets of its row not yet reached through it
    meet: dict[int, int] = {}  # lattice state -> intersection of the bitsets of its parts looked at so far
    waiting: list[tuple[int, object, dict]] = []  # parts that ban tokens, looked at once the queue runs dry

    def reach(q: int, banned, over: dict) -> list[int]:
        """The targets of ``q``'s row first reached through the part ``(q, banned)``."""
        todo = unmarked.get(q)
        if todo is None:
            todo = unmarked[q] = set(targets.distinct(q))
        if not todo:
            return []
        if not banned and not over:
            unmarked[q] = set()
            return list(todo)
        if isinstance(banned, BannedTokens) and not over:
            before = meet.get(q)
            common = banned.mask if before is None else before & banned.mask
            if common == before:
                return []
            meet[q] = common
            new = [x for x in todo if targets.reads(q, x, banned)]
        else:
            new = [x for x in todo if targets.reads(q, x, banned, over)]
        todo.difference_update(new)
        return new

    def visit(found: list[int]) -> None:
        for x in found:
            if not seen[x]:
                seen[x] = 1
                queue.append(x)

    done = 0
    while done < len(queue) or waiting:
        if done == len(queue):
            visit(reach(*waiting.pop()))
            continue
        s = queue[done]
        done += 1
        over = overrides_of[s] or {}
        found = [x for x in over.values() if x is not None]
        for q, banned in parts_of[s]:
            if banned or over:
                waiting.append((q, banned, over))
            else:
                found.extend(reach(q, banned, over))
        visit(found)
    return seen


