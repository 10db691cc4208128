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
import os
from itertools import chain
from typing import Iterable, Sequence

import regex

from ..bpe.transducer import DEFAULT_MAX_STATES, SubsequentialTransducer
from ..errors import BpefstError
from ..tokenizer import BPEModel, ReferenceEncoder
from ..tokenizer.pretokenize import PRESETS, compile_pattern
from ..tokenizer.reference import decode_input, encode_text

DEFAULT_CACHE = 262_144  # chunk -> ids entries kept before the cache is cleared
SHORT_CHUNK = 128  # chunks up to this many symbols use the textbook BPE on a cache miss
_NO_PAIR = 1 << 62
_WS = regex.compile(r"\s")


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
        self._regex = compile_pattern(model.pattern) if model.pattern is not None else None
        self._findall = self._regex.findall if self._regex is not None else (lambda text: [text] if text else [])
        names = sorted(model.specials, key=lambda s: (-len(s), s))
        self._special_regex = regex.compile("|".join(regex.escape(s) for s in names)) if names else None
        self.cache_size = max(1, int(cache_size))
        self._cache: dict[str, tuple[int, ...]] = {}
        self.cut_rule = cut_rule_for(model.pattern, model.specials)
        unique_producers = len(set(model.merge_results)) == len(model.merges)
        if transducer is None and unique_producers:
            transducer = SubsequentialTransducer(model, max_states=max_states)
        self.transducer = transducer if unique_producers else None
        t = self.transducer
        self._byte_codes = bool(t is not None and t.byte_codes and not model.ignore_merges)
        self._trie_get = t.trie.get if t is not None else None
        self._byte_symbols = [t.symbols[b] for b in range(256)] if self._byte_codes else None
        self._packed_merges = {pair: (rank << 32) | result for pair, (rank, result) in model.merge_table.items()}
        self._pool = None
        self._pool_jobs = 0

    @classmethod
    def load(cls, path: str, pattern: str | None = None, specials: dict[str, int] | None = None, **kwargs) -> "Tokenizer":
        """A tokenizer file in any supported format, or a transducer artifact.

        ``pattern`` (a preset name or regex) and ``specials`` override what the
        file says, for formats that do not carry them (tiktoken rank files).
        """
        from ..bpe.transducer_io import is_transducer_artifact, read_transducer
        from ..tokenizer import load_tokenizer, resolve_pattern

        if is_transducer_artifact(path):
            model, transducer = read_transducer(path, max_states=kwargs.get("max_states"))
            return cls(model, transducer=transducer, **kwargs)
        model = load_tokenizer(path, pattern=resolve_pattern(pattern) if pattern else None, specials=specials)
        return cls(model, **kwargs)

    # -- chunks ----------------------------------------------------------------------

    def encode_chunk(self, chunk: str) -> tuple[int, ...]:
        """BPE of one pre-tokenized chunk (cached)."""
        ids = self._cache.get(chunk)
        if ids is None:
            ids = self._miss(chunk)
        return ids

    def _miss(self, chunk: str) -> tuple[int, ...]:
        if self._byte_codes:
            codes = encode_text(chunk).decode("latin-1")
            v = self._trie_get(codes)
            if v is not None and v >= 0:
                ids: tuple[int, ...] = (v >> 1,)
            elif len(codes) <= SHORT_CHUNK:
                sym = self._byte_symbols
                ids = tuple(self.bpe_short([sym[ord(c)] for c in codes]))
            else:
                ids = tuple(self.transducer.transduce(codes))
        else:
            ids = tuple(self._bpe_symbols(self.reference.spell(chunk)))
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
        none = _NO_PAIR
        pair = [get((a, b), none) for a, b in zip(ids, ids[1:])]
        while pair:
            best = min(pair)
            if best == none:
                break
            i = pair.index(best)
            ids[i] = best & 0xFFFFFFFF
            del ids[i + 1]
            del pair[i]
            if i > 0:
                pair[i - 1] = get((ids[i - 1], ids[i]), none)
            if i < len(pair):
                pair[i] = get((ids[i], ids[i + 1]), none)
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
        """Ids of text that holds no special tokens (or whose specials are plain text)."""
        if out is None:
            out = []
        chunks = self._findall(text)
        get = self._cache.get
        found = list(map(get, chunks))
        try:
            i = found.index(None)
        except ValueError:
            pass
        else:
            collect = len(chunks) > 4096 and gc.isenabled()
            if collect:  # cache misses allocate many small objects, none of them cyclic
                gc.disable()
            try:
                miss = self._miss
                while True:
                    chunk = chunks[i]
                    ids = get(chunk)
                    found[i] = ids if ids is not None else miss(chunk)
                    i = found.index(None, i + 1)
            except ValueError:
                pass
            finally:
                if collect:
                    gc.enable()
        out.extend(chain.from_iterable(found))
        return out

    def special_policy(self, allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = "all") -> tuple[frozenset, frozenset]:
        specials = set(self.model.specials)
        allowed = specials if allowed_special == "all" else set(allowed_special)
        disallowed = specials - allowed if disallowed_special == "all" else set(disallowed_special)
        return frozenset(allowed), frozenset(disallowed)

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
        if self._special_regex is None or not (allowed or disallowed):
            return self.encode_plain(text, out)
        pending = 0
        specials = self.model.specials
        for match in self._special_regex.finditer(text):
            name = match.group()
            if name in allowed:
                self.encode_plain(text[pending : match.start()], out)
                out.append(specials[name])
                pending = match.end()
            elif name in disallowed:
                raise BpefstError(
                    f"the text contains the special token {name!r} at character {offset + match.start()}, which is not "
                    f"allowed (allow it, e.g. --allowed-special all, or treat it as text with --allowed-special none)"
                )
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
        """Cut ``text`` at safe boundaries into about ``pieces`` parts: ``(char offset, part)``."""
        size = max(1, len(text) // max(1, pieces))
        parts = []
        begin = 0
        while begin < len(text):
            target = begin + size
            if target >= len(text):
                parts.append((begin, text[begin:]))
                break
            cut = safe_cut(text, self.cut_rule, target, len(text), forward=True)
            if cut is None:
                parts.append((begin, text[begin:]))
                break
            parts.append((begin, text[begin:cut]))
            begin = cut
        return parts

    def _encode_parallel(self, text: str, allowed: frozenset, disallowed: frozenset, jobs: int) -> list[int]:
        parts = self.split_for_jobs(text, jobs * 4)
        if len(parts) < 2:
            return self._encode_policy(text, allowed, disallowed)
        pool = self._get_pool(jobs)
        out: list[int] = []
        for packed in pool.imap(_worker_encode_packed, [(p, allowed, disallowed, off) for off, p in parts]):
            out.extend(_unpack(packed))
        return out

    def _get_pool(self, jobs: int):
        if self._pool is None or self._pool_jobs != jobs:
            self.close()
            global _WORKER_TOKENIZER
            _WORKER_TOKENIZER = self  # inherited by the forked workers
            context = multiprocessing.get_context("fork")
            self._pool = context.Pool(jobs)
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


def _worker_encode_packed(args) -> bytes:
    text, allowed, disallowed, offset = args
    from array import array

    return array("I", _WORKER_TOKENIZER._encode_policy(text, allowed, disallowed, offset)).tobytes()


def _unpack(data: bytes):
    from array import array

    arr = array("I")
    arr.frombytes(data)
    return arr


# -- safe cuts ------------------------------------------------------------------------

def cut_rule_for(pattern: str | None, specials: dict[str, int]) -> str | None:
    """How text may be cut without changing its pre-tokenization.

    * ``"newline"`` (cl100k, o200k): after a ``\\r`` or ``\\n`` that is followed
      by a non-whitespace character.  In these patterns no match continues past
      a line break into a non-space (the letter, number and punctuation
      alternatives exclude ``\\r\\n`` before their body and stop at them after),
      and the whitespace run before the cut matches the same way whether or not
      the text ends there (``\\s++$`` at the end of a piece and ``\\s*[\\r\\n]``
      in the whole text both take the entire run, which ends in a line break).
    * ``"single-newline"`` (gpt2, whitespace, custom patterns): after a lone
      ``\\n`` between two non-whitespace characters (GPT-2's ``\\s+(?!\\S)``
      splits a longer whitespace run differently when text follows).
    * None (no pre-tokenization, or a special token containing a line break):
      never cut; the text is one chunk between special tokens.
    """
    if pattern is None or any("\n" in s or "\r" in s for s in specials):
        return None
    if pattern in (PRESETS["cl100k"], PRESETS["o200k"]):
        return "newline"
    return "single-newline"


def safe_cut(text: str, rule: str | None, lo: int, hi: int, forward: bool = False) -> int | None:
    """A position ``c`` in ``[lo, hi)`` where ``text`` may be cut under ``rule``, or None.

    The last such position (the first with ``forward``).  ``text[c]`` must exist
    (the character after the cut is what makes it safe).
    """
    if rule is None:
        return None
    hi = min(hi, len(text) - 1)
    ws = _WS.match
    if forward:
        c = lo
        while c <= hi:
            k = text.find("\n", max(c - 1, 0), hi)
            if k < 0:
                return None
            if _ok(text, k, rule, ws):
                return k + 1
            c = k + 2
        return None
    end = hi
    while end > lo:
        k = text.rfind("\n", max(lo - 1, 0), end)
        if k < 0:
            return None
        if _ok(text, k, rule, ws):
            return k + 1
        end = k
    return None


def _ok(text: str, k: int, rule: str, ws) -> bool:
    """Is the cut right after the line feed at ``k`` safe?"""
    if k + 1 >= len(text) or ws(text[k + 1]):
        return False
    if rule == "newline":
        return True
    return k == 0 or not ws(text[k - 1])


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
