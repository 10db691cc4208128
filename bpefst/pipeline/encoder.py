"""The tokenizer pipeline: special tokens, pre-tokenization, BPE through the transducer.

:class:`Tokenizer` applies a BPE model the way tiktoken and HF ``tokenizers`` do
(split off special tokens, cut the rest with the pre-tokenization regex, BPE each
chunk, concatenate), with the parts that matter for speed and for worst cases:

* the compiled core (:mod:`bpefst.native`, C in ``src/core``) where it is built
  and the model is byte-level: it pre-tokenizes the preset patterns itself,
  keeps its own bounded chunk cache and runs BPE on a miss, for a whole text
  per call, without the GIL for batches; for other patterns it runs the BPE of
  each cache miss.  Everything below is the pure-Python twin, the reference
  the compiled path is tested against and the path taken without a compiler;
* a bounded dictionary cache ``chunk -> ids`` in front of everything (real text
  repeats its chunks; the hot loop is ``findall`` + a dictionary lookup + a list
  extend);
* on a cache miss (byte-level models), the routes of :mod:`bpefst.bpe.chunk_encoder`:
  a whole reachable token, textbook BPE in C-level loops for short chunks
  (from characters where that is exact), tokens placed longest first for long
  ones, and for the longest (a megabyte of one letter is one chunk for the
  usual patterns) the subsequential transducer of :mod:`bpefst.bpe.transducer`,
  linear in the worst case;
* :class:`IncrementalEncoder` accepts text piece by piece and returns ids as soon
  as they are decided, cutting the text only where pre-tokenization is known
  not to depend on what follows (:func:`safe_cut`).

A model that cuts its chunks at the bytes it has no token for (from GGUF:
llama.cpp's reading, :mod:`bpefst.tokenizer.byte_barriers`) runs each piece
between such bytes through the routes above; a text that holds one never
goes to the compiled core's own scan, which does not know them (a regex
search for the few characters concerned keeps the rest on the core).

Exactness: every path gives the ids of :class:`~bpefst.tokenizer.ReferenceEncoder`.
Models in which one token is produced by two different merges fall outside the
theory of the transducer (the merge forest assumes one producer per token); for
those every miss goes through the reference BPE.
"""

from __future__ import annotations

import atexit
import gc
import multiprocessing
import os
from array import array
from functools import cached_property, partial
from collections import deque
from itertools import chain, islice, repeat
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

from .. import native
from ..errors import ArgumentTypeError, BpefstError, InvalidUTF8Error, TokenIdRangeError, UnknownTokenError
from ..tokenizer import BPEModel, ReferenceEncoder
from ..tokenizer.byte_barriers import ByteBarriers
from ..tokenizer.packed_bpe import bpe_packed
from ..tokenizer.pretokenize import check_disallowed, specials_regex
from ..tokenizer.safe_cuts import cut_rule_for, safe_cut
from ..tokenizer.splitter import Splitter
from ..tokenizer.reference import decode_input, encode_text
from ..tokenizer.surrogates import as_text, has_surrogates, split_trailing_high
from .forking import ForkedCall, PieceQueue, fork_available
from .tiktoken_api import TiktokenMethods, model_from_tiktoken_arguments

if TYPE_CHECKING:  # the bpe layer is imported when the first cache miss needs it
    from ..bpe.chunk_encoder import ChunkEncoder
    from ..bpe.transducer import SubsequentialTransducer

DEFAULT_CACHE = 262_144  # chunk -> ids entries kept (the older half is dropped when full; about 200 bytes per entry)
BLOCK = 16_384  # characters pre-tokenized at a time (see Tokenizer.encode_plain); 16-64K measured alike
SHORT_CHUNK = 128  # character-level models: chunks up to this many symbols use the textbook BPE on a cache miss
UNCACHED_CHUNK = 4096  # longer chunks are not cached
EOT_TEXT = "<|endoftext|>"
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


def _unpacked(data: bytes) -> array:
    ids = array("I")
    ids.frombytes(data)
    return ids


class Tokenizer(TiktokenMethods):
    """Encode and decode text with one BPE model; exact, bounded memory, linear time.

    ``encode(text)`` follows tiktoken's special-token semantics, like the
    reference encoder: specials in ``allowed_special`` (a set or ``"all"``)
    become their ids, a special in ``disallowed_special`` (default: every special
    not allowed) found in the text raises :class:`~bpefst.errors.DisallowedSpecialError`,
    any other is plain text.

    Construction is cheap: the tables the first ``encode`` needs (the packed
    merge table, the lazy merge forest) are built on first use, the transducer
    only when a chunk too long for the other routes misses the cache, the
    reference encoder only when asked for.  A tokenizer pickles as its model (the packed tables of a
    ``.bpefst`` artifact); caches and worker pools never travel.

    ``bpefst.Encoding`` is this class under tiktoken's name, and it takes
    tiktoken's constructor too: ``Encoding(name, pat_str=..., mergeable_ranks=...,
    special_tokens=..., explicit_n_vocab=...)`` builds the tokenizer from
    in-memory ranks (:mod:`.tiktoken_api`).
    """

    def __init__(self, model: BPEModel | str | None = None, transducer: "SubsequentialTransducer | None" = None,
                 cache_size: int = DEFAULT_CACHE, max_states: int | None = None, name: str = "", *,
                 pat_str: str | None = None, mergeable_ranks: dict[bytes, int] | None = None,
                 special_tokens: dict[str, int] | None = None, explicit_n_vocab: int | None = None,
                 engine: str | None = None):
        engine = native.choose(engine)
        if isinstance(model, str):  # tiktoken's Encoding(name, pat_str=..., ...)
            model, name = None, model
        if model is None or mergeable_ranks is not None or pat_str is not None or special_tokens is not None:
            if model is not None:
                raise ArgumentTypeError("pass either a BPE model or tiktoken's pat_str=, mergeable_ranks=, special_tokens=, not both")
            model = model_from_tiktoken_arguments(name, pat_str, mergeable_ranks, special_tokens, explicit_n_vocab)
            self._mergeable_ranks, self._special_tokens = mergeable_ranks, special_tokens  # the caller's objects, as tiktoken keeps them
        elif explicit_n_vocab is not None:
            raise ArgumentTypeError("explicit_n_vocab= goes with tiktoken's mergeable_ranks= constructor")
        self.model = model
        self._engine = engine
        self.name = name
        self.max_states = max_states
        self._given_transducer = transducer
        self._findall = Splitter(model.pattern).findall
        self.cache_size = max(1, int(cache_size))
        self._cache = _ChunkCache(self._miss)
        self.cut_rule = cut_rule_for(model.pattern, model.specials)
        self._pool = None
        self._pool_jobs = 0

    # -- tables built on first use ----------------------------------------------------

    @property
    def engine(self) -> str:
        """``"compiled"`` when the compiled core encodes for this tokenizer, else ``"pure"``."""
        return "compiled" if self._native is not None else "pure"

    @cached_property
    def _native(self):
        """The compiled core's encoder over this model, or None (pure path, or a model it does not take)."""
        if self._engine != "compiled" or not native.supports(self.model):
            return None
        self.model.check_dense()  # its tables are indexed by id, as the pure path's are
        return native.native_encoder(self.model, self.cache_size)

    @cached_property
    def _native_scans(self) -> bool:
        """Whether the compiled core also pre-tokenizes (a preset pattern, or none), so whole texts go to it."""
        return self._native is not None and native.preset_number(self.model.pattern) is not None

    @cached_property
    def _barriers(self) -> ByteBarriers | None:
        """The bytes that cut a chunk (a model read from GGUF that lacks some bytes), or None."""
        return ByteBarriers(self.model.barrier_bytes) if self.model.barrier_bytes else None

    def _core_takes(self, text: str) -> bool:
        """Whether the compiled core may scan ``text`` itself: it does not know barrier bytes."""
        return self._barriers is None or not self._barriers.in_text(text)

    @cached_property
    def reference(self) -> ReferenceEncoder:
        return ReferenceEncoder(self.model)

    @cached_property
    def _unique_producers(self) -> bool:
        """Whether every merge makes a different token (the transducer's theory needs it).

        Asked on the first cache miss, before any id is out: a vocabulary too
        sparse for the transducer's id-indexed tables (which a long chunk may
        need later) is refused here, not mid-stream.  Decoding needs no tables.
        """
        self.model.check_dense()
        return len(set(self.model.merge_results)) == len(self.model.merges)

    @cached_property
    def transducer(self) -> "SubsequentialTransducer | None":
        if not self._unique_producers:
            return None
        if self._given_transducer is not None:
            return self._given_transducer
        from ..bpe.transducer import DEFAULT_MAX_STATES, SubsequentialTransducer

        return SubsequentialTransducer(self.model, max_states=self.max_states or DEFAULT_MAX_STATES)

    @cached_property
    def _byte_codes(self) -> bool:
        """Whether a chunk's UTF-8 bytes are its base symbols (byte-level, all 256 byte tokens, plain merges)."""
        model = self.model
        return (model.is_byte_level and not model.ignore_merges and self._unique_producers
                and all(bytes([b]) in model.token_to_id for b in range(256)))

    @cached_property
    def _chunk_encoder(self) -> "ChunkEncoder":
        from ..bpe.chunk_encoder import ChunkEncoder

        return ChunkEncoder(self.model)

    @cached_property
    def _interned(self) -> list[int]:
        """One int object per id, shared by every cached tuple (an id above 256 is otherwise 28 bytes per copy)."""
        return list(range(self.model.max_id + 1))

    @cached_property
    def _pair_shift(self) -> int:
        return self.model.packed_merges[1]

    @cached_property
    def _packed_merges(self) -> dict[int, int]:
        return self.model.packed_merges[0]

    @cached_property
    def _trie_get(self):
        return self.transducer.trie.get

    # -- loading and pickling ---------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike, pattern: str | None = None, specials: dict[str, int] | None = None, **kwargs) -> "Tokenizer":
        """A tokenizer file in any supported format, or a compiled artifact (transducer or canonical DFA).

        ``pattern`` (a preset name, ``none`` or a regex) overrides the file's,
        ``specials`` are added to its own (:mod:`..tokenizer.overrides`); a
        compiled artifact accepts neither unless it already has them.
        """
        from ..artifact import head_kind
        from ..tokenizer import load_tokenizer, pattern_override
        from ..tokenizer.overrides import refuse_changes_to_compiled

        kwargs.setdefault("name", tokenizer_name(path))
        compiled = head_kind(path, ("transducer", "canonical-dfa"))
        if compiled == "transducer":
            from ..bpe.transducer_io import read_transducer

            model, transducer = read_transducer(path, max_states=kwargs.get("max_states"))
            refuse_changes_to_compiled(path, model, pattern, specials)
            return cls(model, transducer=transducer, **kwargs)
        if compiled == "canonical-dfa":  # the tokenizer it embeds
            from ..bpe.canonical_io import load_canonical

            model, _ = load_canonical(path)
            refuse_changes_to_compiled(path, model, pattern, specials)
            return cls(model, **kwargs)
        model = load_tokenizer(path, pattern=pattern_override(pattern), specials=specials)
        return cls(model, **kwargs)

    @classmethod
    def from_vocab_merges(cls, vocab: dict[int, bytes], merges: Sequence[tuple[bytes, bytes]], special_tokens: Iterable[str] = (),
                          pattern: str | None = "gpt2", name: str = "") -> "Tokenizer":
        """A byte-level tokenizer from CS336 / minbpe shapes: ``vocab`` id -> bytes, ``merges`` pairs of bytes in rank order.

        ``special_tokens`` keep the id their bytes have in ``vocab`` (or get the
        next free ids); ``pattern`` is a preset (``gpt2``, ``cl100k``, ``o200k``),
        a regex, or None for no pre-tokenization.
        """
        from ..tokenizer.byte_pairs import model_from_byte_pairs

        return cls(model_from_byte_pairs(vocab, merges, special_tokens, pattern), name=name)

    def __reduce__(self):
        from ..tokenizer.formats.native import model_to_bytes

        return (_unpickle_tokenizer, (model_to_bytes(self.model), self.name, self.cache_size, self.max_states,
                                      self._engine))

    def __repr__(self) -> str:
        return f"<bpefst.Tokenizer {self.name or 'unnamed'!r}: {self.model.level}-level BPE, n_vocab={self.n_vocab}>"

    # -- chunks ----------------------------------------------------------------------

    def encode_chunk(self, chunk: str) -> Sequence[int]:
        """BPE of one pre-tokenized chunk (cached)."""
        return self._cache[chunk]

    def _miss(self, chunk: str) -> Sequence[int]:
        if self._barriers is not None and self._barriers.in_text(chunk):
            ids = [token for piece in self._barriers.pieces(chunk) for token in self._bpe_chunk(piece)]
        else:
            ids = self._bpe_chunk(chunk)
        if len(chunk) > UNCACHED_CHUNK:  # would rarely repeat; a copy to cache it costs a pass over megabytes
            return ids
        ids = tuple(map(self._interned.__getitem__, ids))
        cache = self._cache
        if len(cache) >= self.cache_size:
            _forget_oldest_half(cache)
        cache[chunk] = ids
        return ids

    def _bpe_chunk(self, chunk: str) -> Sequence[int]:
        """BPE of one chunk (or piece between barrier bytes) by the fastest route this model allows."""
        if self._native is not None:
            ids = self._native.bpe_bytes(encode_text(chunk))
        elif self._byte_codes:
            ids = self._chunk_encoder.encode(chunk)  # see bpefst.bpe.chunk_encoder for the routes
            if ids is None:
                ids = self.transducer.transduce(encode_text(chunk).decode("latin-1"))
        else:
            ids = self._bpe_symbols(self.reference.spell(chunk))
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
        """Textbook BPE for short chunks in C-level loops (:mod:`..tokenizer.packed_bpe`)."""
        return bpe_packed(ids, self._packed_merges.get, self._pair_shift)

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
        if self._native_scans and self._core_takes(text):
            ids = self._native.encode(text)
            if ids is not None:  # None: a surrogate, or a chunk too long for the core (the pure path streams it)
                if out is None:
                    return ids
                out += ids
                return out
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
        """tiktoken's arguments -> (allowed, disallowed) specials of this tokenizer (unknown names are ignored, as there)."""
        specials = set(self.model.specials)
        allowed = specials if allowed_special == "all" else set(_names("allowed_special", allowed_special))
        disallowed = specials - allowed if disallowed_special == "all" else set(_names("disallowed_special", disallowed_special))
        return frozenset(allowed & specials), frozenset(disallowed & specials)

    # -- the public API (tiktoken's names) ---------------------------------------------

    def encode(self, text: str, allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = "all",
               jobs: int = 1) -> list[int]:
        """Token ids of ``text``, with tiktoken's rules for special tokens.

        A special token in ``allowed_special`` (a set of texts, or ``"all"``)
        becomes its id; one in ``disallowed_special`` (default ``"all"``: every
        special not allowed) raises :class:`~bpefst.errors.DisallowedSpecialError`;
        any other is plain text.  ``jobs > 1`` splits a long text at safe
        boundaries across forked processes.  Surrogates are read as tiktoken
        reads them (:mod:`..tokenizer.surrogates`).
        """
        allowed, disallowed = self.special_policy(allowed_special, disallowed_special)
        text = self._as_text("encode", text, disallowed)
        if jobs > 1 and len(text) > 1 << 16:
            if self._native_scans and not allowed:  # the core's threads: checked whole, so errors name the text's positions
                check_disallowed(text, disallowed, 0)
                parts = [part for _, part in self.split_for_jobs(text, jobs * PIECES_PER_JOB)]
                if self._barriers is None:
                    ids = self._native.encode_batch(parts, jobs, False, True)  # the pieces' ids as one list
                    if ids is not None:  # else a piece was declined (a surrogate, a very long chunk)
                        return ids
                return list(chain.from_iterable(self._encode_batch_native(parts, frozenset(), jobs)))
            return self._encode_parallel(text, allowed, disallowed, jobs)
        return self._encode_policy(text, allowed, disallowed)

    def _encode_policy(self, text: str, allowed: frozenset, disallowed: frozenset, offset: int = 0,
                       out: list[int] | None = None) -> list[int]:
        check_disallowed(text, disallowed, offset)
        matcher = specials_regex(allowed)
        if matcher is None:
            return self.encode_plain(text, out)  # with out=None the core's list itself, not a copy
        if out is None:
            out = []
        pending = 0
        specials = self.model.specials
        for match in matcher.finditer(text):
            self.encode_plain(text[pending : match.start()], out)
            out.append(specials[match.group()])
            pending = match.end()
        self.encode_plain(text[pending:], out)
        return out

    def _as_text(self, method: str, text: str, disallowed: frozenset = frozenset()) -> str:
        """The public methods' ``str`` argument, checked, with surrogates read as tiktoken reads them.

        A disallowed special token is looked for in the caller's own string first,
        so the error names its position there.
        """
        if not isinstance(text, str):
            hint = " (encode_bytes takes bytes)" if isinstance(text, (bytes, bytearray)) else ""
            raise ArgumentTypeError(f"{method}() takes a str, not {type(text).__name__}{hint}")
        if not has_surrogates(text):
            return text
        check_disallowed(text, disallowed)
        return as_text(text)

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of ``text`` with special tokens treated as plain text."""
        return self.encode_plain(self._as_text("encode_ordinary", text))

    def encode_bytes(self, data: bytes, allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = (),
                     errors: str = "tiktoken") -> list[int]:
        """Ids of raw bytes; special tokens are plain text unless allowed.

        What happens to bytes that are not UTF-8 is chosen by ``errors``:

        * ``"tiktoken"`` (the default): tiktoken's byte encoder
          (``Encoding._encode_bytes``): the text before the first invalid byte
          is encoded as usual, except its last chunk, which is byte-pair encoded
          together with everything from the invalid byte on, as one piece
          (:meth:`~.tiktoken_api.TiktokenMethods._encode_invalid_tail`);
        * ``"surrogateescape"``: every invalid byte stays a byte of its own
          place in the text (pre-tokenized as punctuation), so any file
          round-trips through ``decode_bytes``; this is what ``bpefst encode``
          and ``bpefst tokenize`` do.

        Character-level models need UTF-8 either way (else BpefstError).
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ArgumentTypeError(f"encode_bytes() takes bytes, not {type(data).__name__} (encode takes a str)")
        if errors not in ("tiktoken", "surrogateescape"):
            raise ArgumentTypeError(f'encode_bytes(errors=...) is "tiktoken" or "surrogateescape", not {errors!r}')
        data = bytes(data)
        allowed, disallowed = self.special_policy(allowed_special, disallowed_special)
        text = decode_input(data, self.model.is_byte_level)
        if errors == "tiktoken" and self.model.is_byte_level and has_surrogates(text):
            check_disallowed(text, disallowed)
            return self._encode_invalid_tail(data, allowed)
        return self._encode_policy(text, allowed, disallowed)

    def encode_batch(self, text: Sequence[str], allowed_special: Iterable[str] | str = (),
                     disallowed_special: Iterable[str] | str = "all", jobs: int = 1, *,
                     num_threads: int | None = None) -> list[list[int]]:
        """``[encode(t) for t in text]`` (tiktoken's name for the list), in parallel when asked.

        With the compiled core, ordinary texts (no allowed special tokens) run on
        ``max(jobs, num_threads)`` threads without the GIL; otherwise ``jobs``
        forked processes (``num_threads`` alone changes nothing there: Python
        threads would share one core).
        """
        allowed, disallowed = self.special_policy(allowed_special, disallowed_special)
        _check_threads(num_threads)
        texts = text if type(text) is list else list(text)  # noqa: E721
        if self._native_scans and not allowed and set(map(type, texts)) <= {str}:
            # surrogates are left to the core, which declines such a text: it is read as tiktoken reads it then
            return self._encode_batch_native(texts, disallowed, max(jobs, num_threads or 1), read_surrogates=True)
        return self.encode_escaped_batch([self._as_text("encode_batch", t, disallowed) for t in texts], allowed, disallowed,
                                         max(jobs, num_threads or 1) if self._native_scans else jobs)

    def encode_escaped_batch(self, texts: Sequence[str], allowed: frozenset, disallowed: frozenset, jobs: int = 1,
                             packed: bool = False) -> list[Sequence[int]]:
        """``encode_batch`` for texts of bpefst's streaming path, whose lone surrogates are raw bytes
        (``surrogateescape``) and stay so; ``allowed`` / ``disallowed`` as :meth:`special_policy` gives them.
        ``packed``: the compiled core may give each text's ids as an ``array('I')`` (no Python int per id;
        what a writer of binary files wants)."""
        if self._native_scans and not allowed:
            return self._encode_batch_native(list(texts), disallowed, jobs, packed=packed)
        if jobs <= 1 or len(texts) < 2 or not fork_available():
            return [self._encode_policy(t, allowed, disallowed) for t in texts]
        pool = self._get_pool(jobs)
        chunk = max(1, len(texts) // (jobs * 8))
        return pool.starmap(_worker_encode_list, [(t, allowed, disallowed, 0) for t in texts], chunksize=chunk)

    def _encode_batch_native(self, texts: list[str], disallowed: frozenset, threads: int,
                             read_surrogates: bool = False, packed: bool = False) -> list[Sequence[int]]:
        """Ordinary texts on ``threads`` threads of the compiled core (it releases the GIL).

        A text the core declines (a surrogate, a very long chunk) or must not scan (a barrier byte) takes
        the pure path; with ``read_surrogates`` its surrogates are first read as tiktoken reads them
        (``encode_batch``; the streaming path's surrogates are raw bytes and stay so).
        """
        if disallowed:
            for text in texts:
                check_disallowed(text, disallowed, 0)
        takes = None if self._barriers is None else [self._core_takes(text) for text in texts]
        scanned = texts if takes is None else [text if take else "" for text, take in zip(texts, takes)]
        results = self._native.encode_batch(scanned, max(1, threads), packed)
        if packed:
            results = [_unpacked(ids) if ids is not None else None for ids in results]
        if takes is None and None not in results:
            return results
        for i, ids in enumerate(results):
            if ids is None or (takes is not None and not takes[i]):
                results[i] = self.encode_plain(as_text(texts[i]) if read_surrogates else texts[i])
        return results

    def encode_iterable(self, texts: Iterable[str], allowed_special: Iterable[str] | str = (),
                        disallowed_special: Iterable[str] | str = "all") -> Iterator[int]:
        """The ids of the concatenation of ``texts``, lazily.

        Pieces may be cut anywhere (inside a chunk, a special token or a line);
        ids are yielded once the text before a safe cut is known, so memory is
        bounded by the longest stretch without one (for the preset patterns, a
        line).  The ids equal ``encode("".join(texts))``, surrogates included: a
        pair cut between two pieces is joined, as in the whole text.
        """
        stream = self.incremental(allowed_special, disallowed_special)
        high = ""  # a high surrogate that ended the last piece: the next piece may start with its pair's other half
        for text in texts:
            if not isinstance(text, str):
                raise ArgumentTypeError(f"encode_iterable() takes an iterable of str, found {type(text).__name__}")
            text, high = split_trailing_high(high + text)
            yield from stream.feed(as_text(text))
        yield from stream.feed(as_text(high))
        yield from stream.finish()

    def encode_to_numpy(self, text: str, allowed_special: Iterable[str] | str = (),
                        disallowed_special: Iterable[str] | str = "all"):
        """``encode`` as a numpy ``uint32`` array (needs numpy: ``pip install 'bpefst[numpy]'``)."""
        np = _numpy()
        ids = array("I", self.encode(text, allowed_special, disallowed_special))
        return np.frombuffer(ids, dtype=np.uint32) if ids else np.zeros(0, dtype=np.uint32)

    @cached_property
    def _decoder(self) -> dict[int, bytes]:
        """Id -> bytes for every ordinary and special token."""
        table = {i: self.model.token_bytes(i) for i in self.model.vocab} if not self.model.is_byte_level else dict(self.model.vocab)
        for text, sid in self.model.specials.items():
            table[sid] = text.encode("utf-8")
        return table

    def decode_bytes(self, tokens: Sequence[int]) -> bytes:
        """The bytes the ids ``tokens`` spell (for a character-level model, UTF-8 with end-of-word markers kept)."""
        try:
            return b"".join(map(self._decoder.__getitem__, tokens))
        except (KeyError, TypeError):
            bad = next(i for i in tokens if not isinstance(i, int) or i not in self._decoder)
            raise self._unknown_id(bad) from None

    def decode(self, tokens: Sequence[int], errors: str = "replace") -> str:
        """The text of the ids ``tokens``; invalid UTF-8 becomes U+FFFD (``errors`` as for ``bytes.decode``;
        with ``"strict"`` it raises :class:`~bpefst.errors.InvalidUTF8Error`, a ``UnicodeDecodeError``)."""
        if not self.model.is_byte_level:
            return self.reference.decode(tokens)
        try:
            return self.decode_bytes(tokens).decode("utf-8", errors=errors)
        except UnicodeDecodeError as error:
            raise InvalidUTF8Error.from_error(error) from None

    def decode_tokens_bytes(self, tokens: Sequence[int]) -> list[bytes]:
        """The bytes of each token."""
        return [self.token_bytes(i) for i in tokens]

    def decode_with_offsets(self, tokens: Sequence[int]) -> tuple[str, list[int]]:
        """The text of ``ids`` and the character offset where each token starts, as tiktoken gives them.

        A token's offset counts the characters whose first byte comes before
        the token's first byte.  A token that starts inside a multi-byte
        character (a continuation byte, 0x80-0xBF) is placed at that
        character, so every offset points at a character the token helps spell.
        Tokens that do not spell UTF-8 raise :class:`~bpefst.errors.InvalidUTF8Error`
        (a ``UnicodeDecodeError``), as tiktoken's do: offsets into text that is
        not there would mean nothing.
        """
        pieces = self.decode_tokens_bytes(tokens)
        offsets = []
        started = 0  # characters begun so far: bytes that are not UTF-8 continuation bytes
        for piece in pieces:
            inside = bool(piece) and 0x80 <= piece[0] < 0xC0
            offsets.append(max(0, started - inside))
            started += len(piece) - sum(1 for byte in piece if 0x80 <= byte < 0xC0)
        try:
            return b"".join(pieces).decode("utf-8"), offsets
        except UnicodeDecodeError as error:
            raise InvalidUTF8Error.from_error(error) from None

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes of one token (special tokens as their UTF-8 text)."""
        found = self._decoder.get(token_id) if isinstance(token_id, int) else None
        if found is None:
            raise self._unknown_id(token_id)
        return found

    def _unknown_id(self, token_id) -> BpefstError:
        """The error for an id that decodes to nothing, of the type tiktoken raises for it."""
        if not isinstance(token_id, int):
            return ArgumentTypeError(f"token ids are ints, found {token_id!r} ({type(token_id).__name__})")
        error = TokenIdRangeError if not 0 <= token_id < 1 << 32 else UnknownTokenError
        return error(f"token id {token_id} is not in the vocabulary (ids go up to {self.model.max_id})")

    def incremental(self, allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = "all") -> "IncrementalEncoder":
        """An :class:`IncrementalEncoder`: ``feed(text)`` returns the ids already decided, ``finish()`` the rest."""
        return IncrementalEncoder(self, *self.special_policy(allowed_special, disallowed_special))

    @property
    def n_vocab(self) -> int:
        """One more than the largest id, ordinary or special (tiktoken's ``n_vocab``)."""
        return self.model.max_id + 1

    @property
    def max_token_value(self) -> int:
        return self.model.max_id

    @property
    def eot_token(self) -> int | None:
        """The id of ``<|endoftext|>``, or None when the tokenizer has no such special token."""
        return self.model.specials.get(EOT_TEXT)

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self.model.specials)

    @property
    def vocab(self) -> dict[int, bytes]:
        """Id -> bytes of every ordinary token (CS336 / minbpe shape; special tokens are in ``special_tokens``)."""
        return {i: self.model.token_bytes(i) for i in sorted(self.model.vocab)}

    @property
    def merges(self) -> list[tuple[bytes, bytes]]:
        """The merges in rank order, as pairs of token bytes (CS336 / minbpe shape)."""
        token = self.model.token_bytes
        return [(token(a), token(b)) for a, b in self.model.merges]

    @property
    def special_tokens(self) -> dict[str, int]:
        return dict(self.model.specials)

    def save(self, path: str | os.PathLike, format: str = "bpefst") -> list:
        """Write the tokenizer as ``bpefst`` (default), ``hf`` (tokenizer.json), ``gpt2`` or ``tiktoken``; returns the files."""
        from ..tokenizer import save_tokenizer

        return save_tokenizer(self.model, path, format)

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
        self._build_tables()
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

    def _build_tables(self) -> None:
        """Build now what encoding builds on first use, so that forked processes share it instead of each building it."""
        if self._native is not None:
            return
        if self._byte_codes:
            # the transducer only takes the chunks the chunk encoder declines: rare, so it is built
            # where one is met rather than before every fork (0.7 s for cl100k, on one core)
            self._chunk_encoder, self._interned
        else:
            self.transducer

    def _get_pool(self, jobs: int):
        if self._pool is None or self._pool_jobs != jobs:
            self.close()
            self._build_tables()
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


def _forget_oldest_half(cache: dict) -> None:
    """Drop the older half of a full chunk cache (insertion order): cheaper than clearing it all, which
    forgets the frequent chunks too; each entry is still touched once per ``cache_size / 2`` misses."""
    # pop(key, None): a thread encoding beside this one may have dropped some of these keys already
    deque(map(cache.pop, list(islice(cache, max(1, len(cache) // 2))), repeat(None)), maxlen=0)


def _check_threads(num_threads: int | None) -> None:
    if num_threads is not None and (not isinstance(num_threads, int) or num_threads < 1):
        raise ArgumentTypeError(f"num_threads= takes a positive int, not {num_threads!r}")


def _names(argument: str, value: Iterable[str] | str) -> Iterable[str]:
    """``allowed_special`` / ``disallowed_special`` must be "all" or a collection of texts (a bare string is a mistake)."""
    if isinstance(value, str):
        raise ArgumentTypeError(f'{argument}= takes "all" or a collection of special-token texts, not the string {value!r} '
                          f'(write {argument}={{{value!r}}})')
    return value


def _numpy():
    try:
        import numpy
    except ImportError:
        raise BpefstError("this needs numpy, which is not installed: pip install 'bpefst[numpy]'") from None
    return numpy


def tokenizer_name(path: str | os.PathLike) -> str:
    """A tokenizer's name from its file: ``.../cl100k_base.tiktoken.gz`` -> ``cl100k_base``, ``gpt2/vocab.json`` -> ``gpt2``."""
    path = os.path.abspath(os.fspath(path))
    base = os.path.basename(path)
    if base in ("vocab.json", "tokenizer.json", "merges.txt") or os.path.isdir(path):
        return os.path.basename(os.path.dirname(path)) if not os.path.isdir(path) else base
    return base.split(".")[0]


def _unpickle_tokenizer(model_bytes: bytes, name: str, cache_size: int, max_states: int, engine: str | None = None) -> Tokenizer:
    from ..tokenizer.formats.native import model_from_bytes

    if engine == "compiled" and native.core is None:
        engine = None  # unpickled where the core is not built: the pure path
    return Tokenizer(model_from_bytes(model_bytes), cache_size=cache_size, max_states=max_states, name=name, engine=engine)


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


Encoding = Tokenizer  # tiktoken's name for the same class: ``import bpefst as tiktoken`` works

# The incremental encoder lives in its own module (it imports nothing from here at load time).
from .incremental import IncrementalEncoder  # noqa: E402
