"""The tokenizer pipeline: special tokens, pre-tokenization, BPE through the transducer.

:class:`Tokenizer` applies a BPE model the way tiktoken and HF ``tokenizers`` do
(split off special tokens, cut the rest with the pre-tokenization regex, BPE each
chunk, concatenate), with the parts that matter for speed and for worst cases:

* a bounded dictionary cache ``chunk -> ids`` in front of everything (real text
  repeats its chunks; the hot loop is ``findall`` + a dictionary lookup + a list
  extend);
* a cache miss whose chunk is itself a (reachable) token costs one lookup;
  short chunks go through the textbook BPE of the reference encoder; long ones
  through the subsequential transducer of :mod:`bpefst.bpe.transducer`, which is
  linear in the chunk length (a megabyte of one letter is one chunk for the
  usual patterns);
* :class:`IncrementalEncoder` accepts text piece by piece and returns ids as soon
  as they are decided, cutting the text only where pre-tokenization is known
  not to depend on what follows (:func:`safe_cut`).

Exactness: every path gives the ids of :class:`~bpefst.tokenizer.ReferenceEncoder`.
Models in which one token is produced by two different merges fall outside the
theory of the transducer (the merge forest assumes one producer per token); for
those every miss goes through the reference BPE.
"""

from __future__ import annotations

import atexit
import gc
import multiprocessing
from array import array
from functools import partial
from itertools import chain, repeat
from operator import lshift, or_
from typing import Callable, Iterable, Iterator, Sequence

from ..bpe.transducer import DEFAULT_MAX_STATES, SubsequentialTransducer
from ..errors import BpefstError
from ..tokenizer import BPEModel, ReferenceEncoder
from ..tokenizer.pretokenize import check_disallowed, specials_regex
from ..tokenizer.safe_cuts import cut_rule_for, safe_cut
from ..tokenizer.splitter import Splitter
from ..tokenizer.reference import decode_input, encode_text
from .forking import ForkedCall, PieceQueue, fork_available

DEFAULT_CACHE = 262_144  # chunk -> ids entries kept before the cache is cleared
BLOCK = 16_384  # characters pre-tokenized at a time (see Tokenizer.encode_plain); 16-64K measured alike
SHORT_CHUNK = 128  # chunks up to this many symbols use the textbook BPE on a cache miss
UNCACHED_CHUNK = 4096  # longer chunks are not cached
_NO_PAIR = 1 << 62
# With jobs > 1, pieces per process: enough that a process slowed down by a busy core
# or copy-on-write faults hands pieces to the others, few enough that the wait for
# the last piece stays short.
PIECES_PER_JOB = 8


class _ChunkCache(dict):
    """``chunk -> ids``; looking up a missing chunk encodes it (and stores it, see ``Tokenizer._miss``).

    Hits stay in C (``dict.__getitem__``); only a miss calls back into Python.
    """

    __slots__ = ("_miss",)

    def __init__(self, miss: Callable[[str], Sequence[int]]):
        super().__init__()
        self._miss = miss

    def __missing__(self, chunk: str) -> Sequence[int]:
        return self._miss(chunk)


class Tokenizer:
    """Encode and decode text with one BPE model; exact, bounded memory, linear time.

    ``encode(text)`` follows tiktoken's special-token semantics, like the
    reference encoder: specials in ``allowed_special`` (a set or ``"all"``)
    become their ids, a special in ``disallowed_special`` (default: every special
    not allowed) found in the text raises BpefstError, any other is plain text.
    """

    def __init__(self, model: BPEModel, transducer: SubsequentialTransducer | None = None,
                 cache_size: int = DEFAULT_CACHE, max_states: int = DEFAULT_MAX_STATES):
        self.model = model
        self.reference = ReferenceEncoder(model)
        self._findall = Splitter(model.pattern).findall
        self.cache_size = max(1, int(cache_size))
        self._cache = _ChunkCache(self._miss)
        self.cut_rule = cut_rule_for(model.pattern, model.specials)
        unique_producers = len(set(model.merge_results)) == len(model.merges)
        if transducer is None and unique_producers:
            transducer = SubsequentialTransducer(model, max_states=max_states)
        self.transducer = transducer if unique_producers else None
        t = self.transducer
        self._byte_codes = bool(t is not None and t.byte_codes and not model.ignore_merges)
        self._trie_get = t.trie.get if t is not None else None
        if self._byte_codes:  # chunk bytes -> the reachable token they spell; byte -> its token id
            self._whole_token = {s.encode("latin-1"): i for i, s in enumerate(t.spelled) if s is not None}
            self._byte_ids = t.symbols[:256]
            self._byte_table = bytes(self._byte_ids) if max(self._byte_ids) < 256 else None
        # (left << shift | right) -> rank << 32 | result: an int key costs less to build and hash than a tuple
        self._pair_shift = max(model.vocab, default=1).bit_length()
        shift = self._pair_shift
        self._packed_merges = {(a << shift) | b: (rank << 32) | result for (a, b), (rank, result) in model.merge_table.items()}
        self._pool = None
        self._pool_jobs = 0

    @classmethod
    def load(cls, path: str, pattern: str | None = None, specials: dict[str, int] | None = None, **kwargs) -> "Tokenizer":
        """A tokenizer file in any supported format, or a transducer artifact.

        ``pattern`` (a preset name, ``none`` or a regex) overrides the file's,
        ``specials`` are added to its own (:mod:`..tokenizer.overrides`); a
        transducer artifact accepts neither unless it already has them.
        """
        from ..bpe.transducer_io import is_transducer_artifact, read_transducer
        from ..tokenizer import load_tokenizer, pattern_override
        from ..tokenizer.overrides import refuse_changes_to_compiled

        if is_transducer_artifact(path):
            model, transducer = read_transducer(path, max_states=kwargs.get("max_states"))
            refuse_changes_to_compiled(path, model, pattern, specials)
            return cls(model, transducer=transducer, **kwargs)
        model = load_tokenizer(path, pattern=pattern_override(pattern), specials=specials)
        return cls(model, **kwargs)

    # -- chunks ----------------------------------------------------------------------

    def encode_chunk(self, chunk: str) -> Sequence[int]:
        """BPE of one pre-tokenized chunk (cached)."""
        return self._cache[chunk]

    def _miss(self, chunk: str) -> Sequence[int]:
        if self._byte_codes:
            data = encode_text(chunk)
            whole = self._whole_token.get(data)
            if whole is not None:
                ids: Sequence[int] = (whole,)
            elif len(data) <= SHORT_CHUNK:
                table = self._byte_table
                symbols = list(data.translate(table)) if table is not None else list(map(self._byte_ids.__getitem__, data))
                ids = tuple(self.bpe_short(symbols))
            else:
                ids = self.transducer.transduce(data.decode("latin-1"))
        else:
            ids = self._bpe_symbols(self.reference.spell(chunk))
        if len(chunk) > UNCACHED_CHUNK:  # would rarely repeat; a copy to cache it costs a pass over megabytes
            return ids
        ids = tuple(ids)
        cache = self._cache
        if len(cache) >= self.cache_size:
            cache.clear()
        cache[chunk] = ids
        return ids

    def _bpe_symbols(self, symbols: list[int]) -> list[int]:
        if len(symbols) < 2 or self.transducer is None:
            return self.reference.bpe(symbols)
        codes = self.transducer.encode_codes(symbols)
        if codes is None:  # a symbol outside the base alphabet (e.g. the unknown token)
            return self.reference.bpe(symbols)
        v = self._trie_get(codes)
        if v is not None and v >= 0:
            return [v >> 1]
        if len(codes) <= SHORT_CHUNK:
            return self.bpe_short(symbols)
        return self.transducer.transduce(codes)

    def bpe_short(self, ids: list[int]) -> list[int]:
        """Textbook BPE for short chunks: lowest rank first, leftmost among equals, O(n^2) in C loops.

        ``pair[i]`` holds ``rank * 2**32 + result`` for the pair at ``i`` (or a
        sentinel), so ``min`` finds the lowest rank and ``index`` its leftmost
        occurrence, the order of the reference encoder's heap.
        """
        get = self._packed_merges.get
        none, shift = _NO_PAIR, self._pair_shift
        pair = list(map(get, map(or_, map(lshift, ids, repeat(shift)), ids[1:]), repeat(none)))
        while pair:
            best = min(pair)
            if best == none:
                break
            i = pair.index(best)
            ids[i] = best & 0xFFFFFFFF
            del ids[i + 1]
            del pair[i]
            if i > 0:
                pair[i - 1] = get((ids[i - 1] << shift) | ids[i], none)
            if i < len(pair):
                pair[i] = get((ids[i] << shift) | ids[i + 1], none)
        return ids

    def bpe_via_transducer(self, chunk: str) -> list[int]:
        """BPE of a chunk through the transducer only (no cache, no shortcuts); for tests."""
        symbols = self.reference.spell(chunk)
        if self.transducer is None or len(symbols) < 2:
            return self.reference.bpe(symbols)
        codes = self.transducer.encode_codes(symbols)
        if codes is None:
            return self.reference.bpe(symbols)
        return self.transducer.transduce(codes)

    # -- text --------------------------------------------------------------------------

    def encode_plain(self, text: str, out: list[int] | None = None) -> list[int]:
        """Ids of text that holds no special tokens (or whose specials are plain text).

        One C-level pass per block: ``findall``, a cache lookup per chunk (a
        missing chunk is encoded by the lookup itself, see :class:`_ChunkCache`)
        and a list extend.  The text goes through in blocks of about
        :data:`BLOCK` characters, cut at safe positions: the chunk strings of a
        block are freed before the next block is cut, so the next block reuses
        their memory.  Pre-tokenizing 5 MB at once allocates ~70 MB of chunk
        strings, and every fresh 4 KB page costs a fault (after a fork for
        ``jobs``, a copy), which made ``jobs=2`` 10-25% slower.
        """
        if out is None:
            out = []
        lookup, findall, extend = self._cache.__getitem__, self._findall, out.extend
        collect = gc.isenabled()
        if collect:  # cache misses allocate many small objects, none of them cyclic
            gc.disable()
        try:
            for block in self._blocks(text):
                extend(chain.from_iterable(map(lookup, findall(block))))
        finally:
            if collect:
                gc.enable()
        return out

    def _blocks(self, text: str) -> Iterator[str]:
        """``text`` in pieces of about :data:`BLOCK` characters, cut where pre-tokenization allows."""
        size, rule = len(text), self.cut_rule
        begin = 0
        while size - begin > BLOCK and rule is not None:
            cut = safe_cut(text, rule, begin + BLOCK, size, forward=True)
            if cut is None:
                break
            yield text[begin:cut]
            begin = cut
        yield text[begin:] if begin else text

    def special_policy(self, allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = "all") -> tuple[frozenset, frozenset]:
        specials = set(self.model.specials)
        allowed = specials if allowed_special == "all" else set(allowed_special)
        disallowed = specials - allowed if disallowed_special == "all" else set(disallowed_special)
        return frozenset(allowed & specials), frozenset(disallowed & specials)

    def encode(self, text: str, allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = "all",
               jobs: int = 1) -> list[int]:
        """Token ids of ``text`` (``jobs > 1``: split at safe boundaries across processes)."""
        allowed, disallowed = self.special_policy(allowed_special, disallowed_special)
        if jobs > 1 and len(text) > 1 << 16:
            return self._encode_parallel(text, allowed, disallowed, jobs)
        return self._encode_policy(text, allowed, disallowed)

    def _encode_policy(self, text: str, allowed: frozenset, disallowed: frozenset, offset: int = 0,
                       out: list[int] | None = None) -> list[int]:
        if out is None:
            out = []
        check_disallowed(text, disallowed, offset)
        matcher = specials_regex(allowed)
        if matcher is None:
            return self.encode_plain(text, out)
        pending = 0
        specials = self.model.specials
        for match in matcher.finditer(text):
            self.encode_plain(text[pending : match.start()], out)
            out.append(specials[match.group()])
            pending = match.end()
        self.encode_plain(text[pending:], out)
        return out

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of ``text`` with special tokens treated as plain text."""
        return self.encode_plain(text)

    def encode_bytes(self, data: bytes, **kwargs) -> list[int]:
        """Raw input: any bytes for byte-level models, UTF-8 (else BpefstError) for character-level."""
        return self.encode(decode_input(data, self.model.is_byte_level), **kwargs)

    def encode_batch(self, texts: Sequence[str], allowed_special: Iterable[str] | str = (),
                     disallowed_special: Iterable[str] | str = "all", jobs: int = 1) -> list[list[int]]:
        """``[encode(t) for t in texts]``, across ``jobs`` processes when asked."""
        allowed, disallowed = self.special_policy(allowed_special, disallowed_special)
        if jobs <= 1 or len(texts) < 2:
            return [self._encode_policy(t, allowed, disallowed) for t in texts]
        pool = self._get_pool(jobs)
        chunk = max(1, len(texts) // (jobs * 8))
        return pool.starmap(_worker_encode_list, [(t, allowed, disallowed, 0) for t in texts], chunksize=chunk)

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        return self.reference.decode_bytes(ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.reference.decode(ids)

    def incremental(self, allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = "all") -> "IncrementalEncoder":
        return IncrementalEncoder(self, *self.special_policy(allowed_special, disallowed_special))

    # -- processes -------------------------------------------------------------------

    def split_for_jobs(self, text: str, pieces: int) -> list[tuple[int, str]]:
        """Cut ``text`` at safe boundaries into about ``pieces`` parts of about equal size: ``(char offset, part)``."""
        size = max(1, len(text) // max(1, pieces))
        parts = []
        begin = 0
        target = size
        while begin < len(text):
            if target >= len(text):
                parts.append((begin, text[begin:]))
                break
            cut = safe_cut(text, self.cut_rule, target, len(text), forward=True)
            if cut is None:
                parts.append((begin, text[begin:]))
                break
            parts.append((begin, text[begin:cut]))
            begin = cut
            target = begin + size
        return parts

    def _encode_parallel(self, text: str, allowed: frozenset, disallowed: frozenset, jobs: int) -> list[int]:
        """The text cut into pieces, encoded here and in ``jobs - 1`` forked children (:mod:`.forking`).

        Every process takes the next unclaimed piece until none is left
        (:class:`~.forking.PieceQueue`), so a process that runs slower takes
        fewer pieces.  An error (a disallowed special token) is raised for the
        first piece, in text order, that has one.  Without ``os.fork`` the text
        is encoded here alone.
        """
        count = min(jobs * PIECES_PER_JOB, PieceQueue.LIMIT)
        pieces = self.split_for_jobs(text, count) if fork_available() else []
        if len(pieces) < 2:
            return self._encode_policy(text, allowed, disallowed)
        queue = PieceQueue(len(pieces))
        children = []
        try:
            for _ in range(min(jobs, len(pieces)) - 1):
                children.append(ForkedCall(partial(self._encode_pieces_packed, pieces, queue, allowed, disallowed)))
            done, failures = self._encode_pieces(pieces, queue, allowed, disallowed)
            for child in children:
                try:
                    done.update(_unpack_pieces(child.result()))
                except _PieceFailed as failed:
                    failures.append((failed.piece, failed.error))
        finally:
            queue.close()
            for child in children:
                child.cancel()
        if failures:
            raise min(failures, key=lambda failure: failure[0])[1]
        out: list[int] = []
        for i in range(len(pieces)):
            out.extend(done[i])
        return out

    def _encode_pieces(self, pieces: list[tuple[int, str]], queue: PieceQueue, allowed: frozenset,
                       disallowed: frozenset) -> tuple[dict[int, Sequence[int]], list[tuple[int, BpefstError]]]:
        """Encode pieces taken from ``queue`` until it is empty or one fails: ``({piece: ids}, [(piece, error)])``."""
        done: dict[int, Sequence[int]] = {}
        while (i := queue.take()) is not None:
            offset, part = pieces[i]
            try:
                done[i] = self._encode_policy(part, allowed, disallowed, offset)
            except BpefstError as error:
                return done, [(i, error)]
        return done, []

    def _encode_pieces_packed(self, pieces: list[tuple[int, str]], queue: PieceQueue, allowed: frozenset,
                              disallowed: frozenset) -> bytes:
        """:meth:`_encode_pieces` in a child: ``[count, (piece, length) * count, ids...]`` as 32-bit ints."""
        done, failures = self._encode_pieces(pieces, queue, allowed, disallowed)
        if failures:
            raise _PieceFailed(*failures[0])
        header = array("I", [len(done)])
        for i, ids in done.items():
            header.extend((i, len(ids)))
        return header.tobytes() + array("I", chain.from_iterable(done.values())).tobytes()

    def _get_pool(self, jobs: int):
        if self._pool is None or self._pool_jobs != jobs:
            self.close()
            global _WORKER_TOKENIZER
            _WORKER_TOKENIZER = self  # inherited by the forked workers
            context = multiprocessing.get_context("fork")
            # Objects the workers inherit stay shared (copy-on-write) only while nothing
            # writes to them; a collection in a worker would touch every one of them.
            gc.freeze()
            self._pool = context.Pool(jobs)
            gc.unfreeze()
            self._pool_jobs = jobs
            atexit.register(self.close)
        return self._pool

    def close(self) -> None:
        """Stop the worker processes (if any)."""
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None


# -- workers (fork start method: they inherit the parent's tokenizer) -------------------------

_WORKER_TOKENIZER: Tokenizer | None = None


def _worker_encode_list(text: str, allowed: frozenset, disallowed: frozenset, offset: int) -> list[int]:
    return _WORKER_TOKENIZER._encode_policy(text, allowed, disallowed, offset)


class _PieceFailed(Exception):
    """A child's error, with the piece it came from (so the first one in text order is raised)."""

    def __init__(self, piece: int, error: BpefstError):
        super().__init__(piece, error)
        self.piece, self.error = piece, error


def _unpack_pieces(data: bytes) -> dict[int, array]:
    """The inverse of ``Tokenizer._encode_pieces_packed``: ``{piece: ids}``."""
    values = array("I")
    values.frombytes(data)
    count = values[0]
    pieces = {}
    at = 1 + 2 * count
    for k in range(count):
        piece, length = values[1 + 2 * k], values[2 + 2 * k]
        pieces[piece] = values[at : at + length]
        at += length
    return pieces


class IncrementalEncoder:
    """Text in, ids out, piece by piece: ``feed(text)`` returns the ids already decided.

    The text is kept until a safe cut (see :func:`safe_cut`) appears; everything
    before the last safe cut is tokenized and returned.  ``finish()`` tokenizes
    the rest.  The concatenation of all returned lists equals ``encode`` of the
    concatenated text.  Memory is bounded by the longest stretch without a safe
    cut (for the usual patterns, the longest line).
    """

    def __init__(self, tokenizer: Tokenizer, allowed: frozenset, disallowed: frozenset):
        self.tokenizer = tokenizer
        self.allowed, self.disallowed = allowed, disallowed
        self.rule = tokenizer.cut_rule
        self._buffer = ""
        self._offset = 0  # characters consumed before the buffer
        self._scanned = 0  # no safe cut ends before this buffer position

    def feed(self, text: str) -> list[int]:
        if not text:
            return []
        buffer = self._buffer + text if self._buffer else text
        cut = safe_cut(buffer, self.rule, max(self._scanned, 1), len(buffer))
        if cut is None:
            self._buffer = buffer
            self._scanned = max(len(buffer) - 1, 0)
            return []
        head, self._buffer = buffer[:cut], buffer[cut:]
        ids = self.tokenizer._encode_policy(head, self.allowed, self.disallowed, self._offset)
        self._offset += cut
        self._scanned = 0
        return ids

    def take(self) -> tuple[str, int]:
        """Hand over the text before the last safe cut without encoding it: ``(text, char offset)``."""
        buffer = self._buffer
        cut = safe_cut(buffer, self.rule, max(self._scanned, 1), len(buffer))
        if cut is None:
            self._scanned = max(len(buffer) - 1, 0)
            return "", self._offset
        head, self._buffer = buffer[:cut], buffer[cut:]
        offset = self._offset
        self._offset += cut
        self._scanned = 0
        return head, offset

    def push(self, text: str) -> None:
        """Append text without encoding anything (see :meth:`take`)."""
        self._buffer += text

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def finish(self) -> list[int]:
        buffer, self._buffer = self._buffer, ""
        ids = self.tokenizer._encode_policy(buffer, self.allowed, self.disallowed, self._offset)
        self._offset += len(buffer)
        self._scanned = 0
        return ids
