"""Is a stream of token ids exactly what the tokenizer would produce?

The question a user would otherwise answer with "decode, re-encode, compare"
(``encode(decode(ids), allowed_special="all") == ids``), answered in one pass
for byte-level tokenizers:

* every id must exist, and an ordinary token must be reachable;
* special-token ids are hard boundaries, and the text of a special token must
  not appear inside ordinary text (re-encoding would turn it into the special);
* the pre-tokenization chunks of the decoded text must begin and end on token
  boundaries (BPE never merges across a chunk);
* inside a chunk every adjacent pair must be canonical, which A_BPE decides in
  O(1) per pair (1-locality, seed 000 Sec. 6.5); pairs that straddle a chunk
  boundary are exempt.

Two checkers decide this.  :class:`Validator` (the one to use) reads a stream
at the token level for the gpt2, cl100k and o200k patterns: the chunk-boundary
automaton lifted to token ids (:mod:`.token_chunks`) is walked over each block,
which decides the chunk boundaries, the reachability and the special-token
texts without decoding anything and marks the gaps that lie inside a chunk;
the pairs at those gaps are then tested in a batch against a growing set of
pairs known to be canonical (only new pairs go through the pair walk).  Both
loops run in the compiled core where it is built (``src/core/validate.h``:
``walk_rows`` and ``PairChecker``); their pure twins are
:meth:`TokenChunks.walk` (``itertools.accumulate`` over the rows) and
:meth:`Validator._bad_pairs`.  Where the walk kept both readings of a gap (a
boundary or not, pending right context) and the pair there is not canonical,
the walk is corrected to "boundary" and resumed until it meets the first walk
again.  Where the stream cannot be canonical, the check restarts a little
before the failure, at a gap that is a chunk boundary of every text, with
:class:`DecodingValidator`, whose verdict and diagnostic are returned: the
messages are exactly the decoding checker's.

:class:`DecodingValidator` serves every pattern: a block is decoded once,
pre-tokenized once, and checked with set operations (token end offsets against
chunk end offsets, pair keys against the set of known canonical pairs).
Pre-tokenization needs right context (``\\s+(?!\\S)``, ``\\s++$``), so the last
two chunks of a block, and the tokens they cover, are carried into the next
block; this assumes, as holds for the gpt2, cl100k and o200k patterns, that
where a match ends depends on at most the next match's worth of text.  Memory
stays bounded by the block size.

Character-level tokenizers decode to text in which end-of-word suffixes
became spaces, so for them the check is literally decode-and-re-encode, word
by word.  ``pretokenize=False`` checks BPE canonicity only: every adjacent pair
between special tokens must be canonical.
"""

from __future__ import annotations

import bisect
import itertools
import json
import operator
import sys
import weakref
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Iterable, Iterator, Sequence

import regex

from .. import native
from ..bpe import CanonicalAutomaton
from ..bpe.compatibility import compatible_before
from ..errors import BpefstError
from ..promotion.chunking import RULES
from ..tokenizer import BPEModel, ReferenceEncoder
from ..tokenizer.pretokenize import preset_name
from ..tokenizer.splitter import Splitter
from .token_chunks import TokenChunks

CARRY_CHUNKS = 2
RESTART_MARGIN = 64  # tokens: more than a special token's text and the chunker's look-ahead in canonical streams


@dataclass
class Violation:
    """Where a stream stops being canonical."""

    position: int  # stream index of the first token that cannot stand where it is
    previous: int | None  # the token before it (None at the start of the stream)
    token: int
    reason: str
    span: bytes  # the text around the violation
    canonical: list[int]  # how the tokenizer encodes that text

    def describe(self, model: BPEModel) -> str:
        def show(t: int | None) -> str:
            if t is None:
                return "the start of the stream"
            return f"{t} {model.token_bytes(t).decode('utf-8', 'replace')!r}"

        return (
            f"not canonical at token {self.position}: {show(self.token)} after {show(self.previous)} ({self.reason}); "
            f"the tokenizer encodes {self.span.decode('utf-8', 'replace')!r} as {self.canonical}"
        )


class _StreamChecker:
    """What both validators hold: the model, its canonical automaton, the options, the pairs known good."""

    def __init__(self, model: BPEModel, automaton: CanonicalAutomaton, pretokenize: bool = True, block_tokens: int = 1 << 16):
        model.check_dense()
        self.model = model
        self.automaton = automaton
        self.pretokenize = pretokenize
        self.block_tokens = block_tokens
        self.size = max(model.max_id + 1, 1)
        self.good_pairs: set[int] = set()  # pair keys u * size + v known to be canonical
        self.tokens_seen = 0

    def check(self, ids: Sequence[int]) -> Violation | None:
        """First violation in a whole sequence, or None if it is canonical."""
        return self.check_stream([ids])  # type: ignore[attr-defined]


class DecodingValidator(_StreamChecker):
    """Checks id streams by decoding them in blocks and re-running the pattern (any pattern; the exact
    diagnostic for :class:`Validator`, which falls back to it where a stream stops being canonical)."""

    def __init__(self, model: BPEModel, automaton: CanonicalAutomaton, pretokenize: bool = True, block_tokens: int = 1 << 16):
        super().__init__(model, automaton, pretokenize, block_tokens)
        self.special_ids = set(model.specials.values()) - set(model.vocab)
        self.token_bytes = [b""] * self.size
        self.known = [False] * self.size
        for i in model.vocab:
            self.token_bytes[i] = model.token_bytes(i)
            self.known[i] = True
        for text, i in model.specials.items():
            self.token_bytes[i] = text.encode("utf-8")
            self.known[i] = True
        self.token_length = list(map(len, self.token_bytes))
        self.holes = {i for i in range(self.size) if not self.known[i]}
        self.unreachable = {i for i in model.vocab if not automaton.reachable[i]}
        self._pattern = Splitter(model.pattern) if pretokenize and model.pattern is not None else None
        names = sorted(model.specials, key=len, reverse=True)
        self._specials = regex.compile("|".join(regex.escape(s) for s in names)) if names else None
        self._special_margin = max(map(len, (s.encode() for s in names)), default=1)
        self._settled_last: int | None = None  # the token just before the ids still pending (None: none yet)

    # -- public API ------------------------------------------------------------------------------

    def check_stream(self, blocks: Iterable[Sequence[int]], offset: int = 0, previous: int | None = None) -> Violation | None:
        """Like :meth:`check` for a stream given as blocks of ids (any sizes).

        ``offset`` and ``previous`` resume a check at a chunk boundary: the stream index of the first id
        and the token before it (for messages)."""
        if not self.model.is_byte_level and self.pretokenize:
            return self._check_words(blocks)
        self.tokens_seen = 0
        self._settled_last = previous
        pending = []
        for block in blocks:
            self._check_known(block, offset + len(pending))
            pending.extend(block)
            if len(pending) >= self.block_tokens:
                violation, settled = self._check_pending(pending, offset, final=False)
                if violation:
                    return violation
                if settled:
                    self._settled_last = pending[settled - 1]
                offset += settled
                del pending[:settled]
        violation, _ = self._check_pending(pending, offset, final=True)
        self.tokens_seen = offset + len(pending)
        return violation

    # -- byte-level --------------------------------------------------------------------------------

    def _check_known(self, ids: Sequence[int], start: int) -> None:
        known, size = self.known, self.size
        if not ids or (min(ids) >= 0 and max(ids) < size and self.holes.isdisjoint(ids)):
            return
        k = next(k for k, t in enumerate(ids) if not (0 <= t < size and known[t]))
        raise BpefstError(f"token {start + k}: id {ids[k]} is not in the vocabulary (ids go up to {self.size - 1})")

    def _check_pending(self, ids: list[int], offset: int, final: bool) -> tuple[Violation | None, int]:
        """Check ``ids`` (split at special tokens); returns (violation, how many leading ids are settled)."""
        lo = 0
        specials = [] if self.special_ids.isdisjoint(ids) else [k for k, t in enumerate(ids) if t in self.special_ids]
        for k in specials:
            violation, _ = self._check_run(ids, lo, k, offset, final=True)
            if violation:
                return violation, lo
            lo = k + 1
        return self._check_run(ids, lo, len(ids), offset, final)

    def _check_run(self, ids: list[int], lo: int, hi: int, offset: int, final: bool) -> tuple[Violation | None, int]:
        """Check the ordinary tokens ``ids[lo:hi]``; returns (violation, index into ids settled so far)."""
        run = ids[lo:hi]
        if not run:
            return None, hi
        if self.unreachable and not self.unreachable.isdisjoint(run):
            k = next(k for k, t in enumerate(run) if t in self.unreachable)
            return self._violation(ids, lo + k, offset, "BPE never produces this token", lo, hi), lo
        data = b"".join(map(self.token_bytes.__getitem__, run))
        text = data.decode("utf-8", errors="surrogateescape")
        ends = list(itertools.accumulate(map(self.token_length.__getitem__, run)))
        chunk_ends = self._chunk_ends(text) if self._pattern is not None else []
        token_end_set = set(ends)
        if final:
            settle_at, settled = len(data), len(run)
        else:
            settle_at = self._settle_point(data, ends, token_end_set, chunk_ends)
            if settle_at == 0:
                return None, lo
            settled = ends.index(settle_at) + 1
            del chunk_ends[bisect.bisect_right(chunk_ends, settle_at) :]
        chunk_end_set = set(chunk_ends)
        if not chunk_end_set.issubset(token_end_set):
            bad = min(chunk_end_set.difference(token_end_set))
            k = next(k for k, e in enumerate(ends) if e > bad)
            return self._violation(ids, lo + k, offset, "it crosses a pre-tokenization boundary", lo, hi, wide=True), lo
        inner = list(map(operator.not_, map(chunk_end_set.__contains__, ends[: settled - 1])))
        violation = self._check_pairs(ids, lo, run[:settled], inner, offset, hi)
        if violation:
            return violation, lo
        if self._specials is not None:
            found = self._specials.search(text)
            if found and (final or len(text[: found.start()].encode("utf-8", "surrogateescape")) < settle_at):
                position = len(text[: found.start()].encode("utf-8", "surrogateescape"))
                k = next(k for k, e in enumerate(ends) if e > position)
                end = position + len(found.group().encode("utf-8"))
                last = next((j for j, e in enumerate(ends) if e >= end), len(ends) - 1)
                reason = f"its text is part of the special token {found.group()!r}"
                return self._violation(ids, lo + k, offset, reason, lo, hi, through=lo + last), lo
        return None, lo + settled

    def _chunk_ends(self, text: str) -> list[int]:
        chunks = self._pattern.findall(text)
        if text.isascii():
            return list(itertools.accumulate(map(len, chunks)))
        try:
            return list(itertools.accumulate(map(len, map(str.encode, chunks))))
        except UnicodeEncodeError:  # raw bytes carried as lone surrogates
            return list(itertools.accumulate(len(c.encode("utf-8", "surrogateescape")) for c in chunks))

    def _settle_point(self, data: bytes, ends: list[int], token_end_set: set[int], chunk_ends: list[int]) -> int:
        """Byte offset up to which a non-final run can be decided (0: nothing yet)."""
        limit = len(data) - self._special_margin  # a special's text may still be arriving after it
        candidates = ends[:-1] if self._pattern is None else chunk_ends[:-CARRY_CHUNKS]
        for end in reversed(candidates):
            if end <= limit and end in token_end_set:
                return end
        return 0

    def _check_pairs(self, ids: list[int], lo: int, run: list[int], inner: list[bool], offset: int, hi: int) -> Violation | None:
        """Check the pairs (run[k], run[k+1]) where ``inner[k]`` (inside a chunk); memoized in ``good_pairs``."""
        size = self.size
        lefts = itertools.compress(run, inner)
        rights = itertools.compress(itertools.islice(run, 1, None), inner)
        keys = list(map(operator.add, map(operator.mul, lefts, itertools.repeat(size)), rights))
        if self.good_pairs.issuperset(keys):
            return None
        bad = set()
        for key in set(keys).difference(self.good_pairs):
            if self.automaton.allowed(key // size, key % size):
                self.good_pairs.add(key)
            else:
                bad.add(key)
        if not bad:
            return None
        positions = itertools.compress(itertools.count(), inner)
        k = next(k for k, key in zip(positions, keys) if key in bad)
        return self._violation(ids, lo + k + 1, offset, "BPE merges across this pair", lo, hi)

    @cached_property
    def encoder(self) -> ReferenceEncoder:
        """The encoder whose output the check stands for: without pre-tokenization under --no-pretokenize,
        so that a violation's suggested encoding is BPE's, not the pattern's (built on first use)."""
        if self.pretokenize or self.model.pattern is None:
            return ReferenceEncoder(self.model)
        return ReferenceEncoder(replace(self.model, pattern=None))

    def _violation(self, ids: list[int], k: int, offset: int, reason: str, lo: int, hi: int, wide: bool = False,
                   through: int | None = None) -> Violation:
        """The violation at ``ids[k]``, shown with its neighbours (``wide``: one more after it;
        ``through``: every token up to that index, so that a special token's whole text shows)."""
        first = max(lo, k - 1)
        last = through + 1 if through is not None else min(hi, k + 2) if wide else k + 1
        span = b"".join(self.token_bytes[t] for t in ids[first:last])
        canonical = self.encoder.encode_bytes(span, allowed_special="all", errors="surrogateescape")
        previous = ids[k - 1] if k > 0 else self._settled_last
        return Violation(offset + k, previous, ids[k], reason, span, canonical)

    # -- character-level -------------------------------------------------------------------------

    def _check_words(self, blocks: Iterable[Sequence[int]]) -> Violation | None:
        """Decode and re-encode word by word (a word ends with an end-of-word-suffix token)."""
        suffix = self.model.end_of_word_suffix
        offset, word = 0, []
        previous = None
        for block in blocks:
            self._check_known(block, offset + len(word))
            for token in block:
                word.append(token)
                text = self.model.vocab.get(token)
                if token in self.special_ids or (suffix and isinstance(text, str) and text.endswith(suffix)):
                    violation = self._check_word(word, offset, previous)
                    if violation:
                        return violation
                    offset += len(word)
                    previous = word[-1]
                    word = []
        self.tokens_seen = offset + len(word)
        return self._check_word(word, offset, previous) if word else None

    def _check_word(self, word: list[int], offset: int, previous: int | None) -> Violation | None:
        text = self.encoder.decode(word)
        expected = self.encoder.encode(text, allowed_special="all")
        if expected == word:
            return None
        k = next((k for k, (a, b) in enumerate(zip(word, expected)) if a != b), min(len(word), len(expected)) - 1)
        k = max(k, 0)
        before = word[k - 1] if k > 0 else previous
        return Violation(offset + k, before, word[k], "re-encoding the decoded word gives other tokens", text.encode("utf-8"), expected)


class Validator(_StreamChecker):
    """Checks id streams against one tokenizer and its canonical automaton.

    For the gpt2, cl100k and o200k patterns the stream is read at the token
    level (:class:`~bpefst.pipeline.token_chunks.TokenChunks`): one walk of the
    token-level chunk automaton per block, then one batched pair test for the
    gaps it marks as inside a chunk.  Where that walk finds the stream cannot be
    canonical (or cannot decide: invalid UTF-8), the check restarts with
    :class:`DecodingValidator` at a gap that is a chunk boundary of every text,
    at least ``RESTART_MARGIN`` tokens before the failure, and that check's
    verdict and diagnostic are the answer.  Other patterns, character-level
    tokenizers and ``pretokenize=False`` use :class:`DecodingValidator` alone.
    """

    def __init__(self, model: BPEModel, automaton: CanonicalAutomaton, pretokenize: bool = True, block_tokens: int = 1 << 16,
                 engine: str | None = None):
        super().__init__(model, automaton, pretokenize, block_tokens)
        supported = model.is_byte_level and pretokenize and model.pattern is not None and preset_name(model.pattern) in RULES
        self.chunks = token_chunks_for(model, automaton) if supported else None
        self.engine = native.choose(engine)
        # the compiled core walks the rows and tests the pairs (src/core/validate.h); the pure twins are
        # TokenChunks.walk and _bad_pairs
        self.pairs = pair_checker_for(automaton) if self.chunks is not None and self.engine == "compiled" else None
        self.longest_history = 0  # the most ids held for a restart (bounded: a block plus a little)

    @cached_property
    def decoding(self) -> DecodingValidator:
        """The decoding checker (built on first use: streams that are canonical never need it)."""
        decoding = DecodingValidator(self.model, self.automaton, self.pretokenize, self.block_tokens)
        decoding.good_pairs = self.good_pairs
        return decoding

    def check_stream(self, blocks: Iterable[Sequence[int]], nonnegative: bool = False) -> Violation | None:
        """Like :meth:`check` for a stream given as blocks of ids (any sizes); ``nonnegative``: the caller
        guarantees no id is negative (they were parsed from digits), which saves a pass."""
        self.tokens_seen = 0
        if self.chunks is None:
            violation = self.decoding.check_stream(blocks)
            self.tokens_seen = self.decoding.tokens_seen
            return violation
        chunks, size = self.chunks, self.size
        blocks = iter(blocks)
        row = chunks.initial
        offset, last = 0, None  # stream index of the block; the token before it
        history: list[int] = []  # the ids from stream index `base` on, where `base` is a restart point
        base, before, scanned = 0, None, 0  # `before`: the token before history[0]; no restart point in history[:scanned]
        compiled = self.pairs is not None
        for block in blocks:
            if not block:
                continue
            if compiled:
                block = block if type(block) is list else list(block)  # noqa: E721 (the core takes lists)
            elif max(block) >= size or (not nonnegative and min(block) < 0):
                self.decoding._check_known(block, offset)  # raises the error naming the bad id
            history.extend(block)
            self.longest_history = max(self.longest_history, len(history))
            try:
                row, failure = self._walk_block(block, row, last)
            except IndexError:  # the core met an id outside the vocabulary
                self.decoding._check_known(block, offset)  # raises the error naming it
                raise
            if failure is not None:
                return self._restart(history, base, before, offset + failure, blocks)
            offset += len(block)
            last = block[-1]
            # keep the history from the last restart point at least RESTART_MARGIN tokens before the end
            k = len(history) - RESTART_MARGIN
            while k > scanned and not chunks.is_hard_gap(history[k - 1], history[k]):
                k -= 1
            if k > scanned:
                before = history[k - 1]
                del history[:k]
                base += k
                scanned = 0
            else:
                scanned = max(scanned, len(history) - RESTART_MARGIN)
        if not chunks.accepts_end(row):
            return self._restart(history, base, before, offset, blocks)
        self.tokens_seen = offset
        return None

    def _walk_block(self, block: list[int], row, last: int | None) -> tuple[object, int | None]:
        """Walk one block from ``row``; returns (the row after it, None) or (None, index of a failure)."""
        chunks = self.chunks
        flag = chunks.flag_index
        pairs = self.pairs
        seq = chunks.walk(block, row) if pairs is None else chunks.walk_compiled(block, row)
        stop = chunks.first_stop(seq)
        end = len(block) if stop is None else stop - 1  # the walk fails at block[end]
        bad_gaps = self._bad_pairs(block, seq, end, last) if pairs is None else pairs.bad_gaps(block, seq, flag, end, last)
        for bad in bad_gaps:
            if not seq[bad + 1][flag]:
                continue  # an earlier correction showed this gap is a chunk boundary
            # The walk kept both readings of this gap (boundary or not); the pair rules out "not".
            corrected = chunks.boundary_row(seq[bad], block[bad])
            if corrected is None:
                return None, bad
            # walk on from the corrected row until it meets the first walk again (it does within a few tokens)
            row = seq[bad + 1] = corrected
            for k in range(bad + 1, end):
                row = chunks.advance(row, block[k])
                if row is seq[k + 1]:
                    break
                if row is chunks.stop:
                    return None, k
                seq[k + 1] = row
        return (seq[-1], None) if stop is None else (None, end)

    def _bad_pairs(self, block: list[int], seq: list, end: int, last: int | None) -> list[int]:
        """The ``j < end`` (in order) whose gap before them the walk marks as inside a chunk and whose pair
        ``(block[j - 1], block[j])`` is not canonical (``last`` stands before ``block[0]``)."""
        flags = list(map(operator.itemgetter(self.chunks.flag_index), seq))  # flags[j + 1]: the gap before block[j]
        del flags[end + 1 :]
        flags[0] = 0
        if not any(flags):
            return []
        size = self.size
        lefts = itertools.compress(itertools.chain((None, last), block), flags)
        rights = itertools.compress(itertools.chain((None,), block), flags)
        keys = list(map(operator.add, map(operator.mul, lefts, itertools.repeat(size)), rights))
        good = self.good_pairs
        if good.issuperset(keys):
            return []
        # both tokens of each pair are reachable (the walk stops at any other), so the pair walk alone decides
        new = list(set(keys).difference(good))
        lefts, rights = map(operator.floordiv, new, itertools.repeat(size)), map(operator.mod, new, itertools.repeat(size))
        canonical = list(map(compatible_before, itertools.repeat(self.automaton.forest), lefts, rights))
        good.update(itertools.compress(new, canonical))
        bad = set(itertools.compress(new, map(operator.not_, canonical)))
        if not bad:
            return []
        return list(itertools.compress(itertools.compress(itertools.count(-1), flags), map(bad.__contains__, keys)))

    def _restart(self, history: list[int], base: int, before: int | None, failure: int, blocks) -> Violation | None:
        """Check from a restart point before ``failure`` (a stream index) to the end with the decoding checker."""
        k = min(failure - base - RESTART_MARGIN, len(history))
        while k > 0 and not self.chunks.is_hard_gap(history[k - 1], history[k]):
            k -= 1
        k = max(k, 0)
        previous = history[k - 1] if k > 0 else before
        violation = self.decoding.check_stream(itertools.chain([history[k:]], blocks), offset=base + k, previous=previous)
        self.tokens_seen = self.decoding.tokens_seen
        return violation


_TOKEN_CHUNKS: "weakref.WeakKeyDictionary[CanonicalAutomaton, tuple[BPEModel, TokenChunks]]" = weakref.WeakKeyDictionary()
_PAIR_CHECKERS: "weakref.WeakKeyDictionary[CanonicalAutomaton, object]" = weakref.WeakKeyDictionary()


def token_chunks_for(model: BPEModel, automaton: CanonicalAutomaton) -> TokenChunks:
    """The token-level chunk automaton of a model, shared by the validators of one automaton (its rows
    fill in as streams need them)."""
    cached = _TOKEN_CHUNKS.get(automaton)
    if cached is None or cached[0] is not model:
        cached = _TOKEN_CHUNKS[automaton] = (model, TokenChunks(model, automaton.reachable, preset_name(model.pattern)))
    return cached[1]


def pair_checker_for(automaton: CanonicalAutomaton):
    """The compiled core's pair test over an automaton's merge forest, shared by its validators (the set
    of pairs known canonical it keeps is a fact about the forest, and bounded)."""
    checker = _PAIR_CHECKERS.get(automaton)
    if checker is None:
        checker = _PAIR_CHECKERS[automaton] = native.pair_checker(automaton.forest)
    return checker


# Ids are below 2**32 (10 digits); more than this many digits is refused before int() sees it
# (Python refuses 4,301 digits with a traceback, and converting long strings takes quadratic time).
MAX_ID_DIGITS = 20


def parse_id_blocks(pieces: Iterable[bytes]) -> Iterator[list[int]]:
    """Whitespace-separated ids from a byte stream, in blocks; BpefstError on a bad id."""
    carry = b""
    index = 0
    for piece in pieces:
        data = carry + piece
        cut = len(data)
        while cut > 0 and not data[cut - 1 : cut].isspace():
            cut -= 1
        carry = data[cut:]
        if len(carry) > MAX_ID_DIGITS:  # one word longer than any id: refuse it now rather than hold it all
            words = data.split()
            k = next(k for k, w in enumerate(words) if len(w) > MAX_ID_DIGITS or not w.isdigit())
            parse_words(words[: k + 1], index)
        ids = _parse_plain_ids(data[:cut])
        if ids is None:
            words = data[:cut].split()
            ids = parse_words(words, index) if words else []
        if ids:
            yield ids
            index += len(ids)
    if carry.strip():
        yield parse_words(carry.split(), index)


_NOT_ID_TEXT = b"0123456789 \t\n\r\x0b\x0c"
_TO_SPACE = bytes.maketrans(b"\t\n\r\x0b\x0c", b"     ")
_DIGIT_TO_D = bytes.maketrans(b"0123456789", b"dddddddddd")
_TOO_LONG = b"d" * (MAX_ID_DIGITS + 1)
_BEYOND_INT64 = b"d" * 19  # numpy reads into int64: 19 digits may not fit, so those go to the JSON parser
_NUMPY_FROM = 1 << 16  # smaller blocks are not worth the call's overhead


def _numpy():
    """numpy if this process has already imported it, else None.  numpy is an optional extra and only a
    faster id parser here: importing it costs about 0.1 s, what its reader saves on 30 MB of ids, so a
    one-shot ``bpefst validate`` does without and library users (who have numpy loaded) gain."""
    return sys.modules.get("numpy")


def _parse_plain_ids(data: bytes) -> list[int] | None:
    """The ids of text made of ids of at most MAX_ID_DIGITS digits between whitespace, or None for anything
    else (then :func:`parse_words` says what is wrong).  A C-level parser reads the integers: numpy's
    text reader where numpy is loaded (1.3x faster again on large blocks), else the JSON parser
    with separators turned into commas (about twice as fast as ``map(int, data.split())``); before
    them the compiled core's parser where it is built."""
    if native.core is not None:  # the compiled core's parser (src/core/validate.h): None sends us on
        ids = native.core.parse_ids(data)
        if ids is not None:
            return ids
    if data.translate(None, _NOT_ID_TEXT):
        return None
    digits = data.translate(_DIGIT_TO_D)
    if _TOO_LONG in digits:
        return None
    if len(data) >= _NUMPY_FROM and _BEYOND_INT64 not in digits:
        numpy = _numpy()
        if numpy is not None:
            return numpy.fromstring(data, dtype=numpy.int64, sep=" ").tolist()  # any whitespace separates
    text = data.translate(_TO_SPACE).strip()
    if not text:
        return []
    if b"  " in text:
        text = b" ".join(text.split())
    try:
        return json.loads(b"[" + text.replace(b" ", b",") + b"]")
    except ValueError:  # JSON refuses leading zeros ("007"), which int() reads
        return None


def parse_words(words: list[bytes], index: int = 0) -> list[int]:
    """Ids from whitespace-separated words; ``index`` numbers the first word in messages."""
    if all(map(bytes.isdigit, words)) and max(map(len, words), default=0) <= MAX_ID_DIGITS:
        return list(map(int, words))
    k = next(k for k, w in enumerate(words) if not w.isdigit() or len(w) > MAX_ID_DIGITS)
    if words[k].isdigit():
        raise BpefstError(f"token {index + k}: an id of more than {MAX_ID_DIGITS} digits is far too large (ids are below 2**32)")
    raise BpefstError(f"token {index + k}: {words[k][:20].decode('utf-8', 'replace')!r} is not a non-negative integer id")


def _json_id(text: str) -> int:
    """``parse_int`` for JSON id arrays: refuse absurdly long integers before converting them."""
    if len(text.lstrip("-")) > MAX_ID_DIGITS:
        raise BpefstError(f"an id of more than {MAX_ID_DIGITS} digits is far too large (ids are below 2**32)")
    return int(text)


def parse_json_ids(line: bytes) -> list[int]:
    """One JSON array of non-negative integer ids (a ``--format jsonl`` line); BpefstError otherwise."""
    try:
        value = json.loads(line, parse_int=_json_id)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BpefstError("not a JSON array of ids (use --format ids for whitespace-separated ids)") from None
    except RecursionError:
        raise BpefstError("JSON nested too deeply; expected a flat array of ids") from None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise BpefstError("expected a JSON array of integer ids")
    negative = next((v for v in value if v < 0), None)
    if negative is not None:
        raise BpefstError(f"id {negative} is negative")
    return value
