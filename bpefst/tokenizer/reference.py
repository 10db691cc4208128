"""The reference encoder: textbook priority-queue BPE, the oracle for every faster path.

For one pre-tokenized chunk (Sennrich et al. 2016; the "greedy" BPE of Zouhar et
al., 002 Sec. 2, and HF ``tokenizers``' ``Word::merge_all``):

1. spell the chunk in base symbols (bytes, or characters with the end-of-word
   suffix on the last one and the continuing-subword prefix on the others);
   a model that splits at missing bytes (llama.cpp's reading, from GGUF) first
   cuts the chunk at each byte it has no token for, and runs 1-3 on each piece
   alone (:mod:`.byte_barriers`);
2. put every adjacent pair that has a merge on a min-heap keyed by
   ``(merge rank, position)``;
3. pop the lowest; skip it if stale (a neighbour changed since it was pushed);
   otherwise merge the two symbols in a doubly linked list and push the two new
   pairs it forms with its neighbours.

Ties between equal ranks go to the leftmost position, as in tiktoken and HF.
Each merge costs O(log n), so a chunk of n symbols costs O(n log n).

Around it sits the pipeline every tokenizer applies: split off special tokens,
pre-tokenize with the pattern, BPE each chunk (memoized: real text repeats its
chunks), concatenate.
"""

from __future__ import annotations

import heapq
from typing import Iterable, Sequence

from ..errors import BpefstError
from .byte_barriers import ByteBarriers
from .model import BPEModel
from .pretokenize import Pretokenizer

_CACHE_LIMIT = 200_000


class ReferenceEncoder:
    """``encode`` / ``decode`` for a :class:`BPEModel`, by the textbook algorithm."""

    def __init__(self, model: BPEModel):
        self.model = model
        self.pretokenizer = Pretokenizer(model.pattern, model.specials)
        self._merges = model.merge_table
        self._symbols = model.token_to_id
        self._unk_id = model.token_to_id.get(model.unk_token) if model.unk_token is not None else None
        if model.unk_token is not None and self._unk_id is None:
            self._unk_id = model.specials.get(model.unk_token)
        self._cache: dict[str, tuple[int, ...]] = {}
        self._id_to_bytes = {i: model.token_bytes(i) for i in (*model.vocab, *model.specials.values())}
        self._barriers = ByteBarriers(model.barrier_bytes) if model.barrier_bytes else None

    # -- public API ----------------------------------------------------------------

    def encode(self, text: str, allowed_special: Iterable[str] | str = (), disallowed_special: Iterable[str] | str = "all") -> list[int]:
        """Token ids of ``text``.

        Special tokens in ``allowed_special`` (or ``"all"``) become their ids; a
        special token that occurs in the text and is in ``disallowed_special``
        (default: every special not allowed) raises BpefstError; the rest are
        tokenized as ordinary text.  These are tiktoken's semantics.
        """
        ids: list[int] = []
        for chunk, special_id in self.pretokenizer.split(text, allowed_special, disallowed_special):
            if special_id is not None:
                ids.append(special_id)
            else:
                ids.extend(self.encode_chunk(chunk))
        return ids

    def encode_ordinary(self, text: str) -> list[int]:
        """Token ids of ``text`` with special tokens treated as plain text."""
        return self.encode(text, allowed_special=(), disallowed_special=())

    def encode_bytes(self, data: bytes, errors: str = "surrogateescape", **kwargs) -> list[int]:
        """Encode raw input: any bytes for byte-level models (invalid UTF-8 bytes kept as bytes of their
        own, ``surrogateescape``, the only mode here), UTF-8 for character-level."""
        if errors != "surrogateescape":
            raise BpefstError(f'the reference encoder reads bytes with errors="surrogateescape" only, not {errors!r}')
        return self.encode(decode_input(data, self.model.is_byte_level), **kwargs)

    def encode_chunk(self, chunk: str) -> tuple[int, ...]:
        """BPE one pre-tokenized chunk (memoized)."""
        ids = self._cache.get(chunk)
        if ids is None:
            pieces = [chunk] if self._barriers is None else self._barriers.pieces(chunk)
            ids = tuple(token for piece in pieces for token in self.bpe(self.spell(piece)))
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[chunk] = ids
        return ids

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        try:
            return b"".join(self._id_to_bytes[i] for i in ids)
        except KeyError as exc:
            raise BpefstError(f"token id {exc.args[0]} is not in the vocabulary (ids go up to {self.model.max_id})") from None

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids``; invalid UTF-8 becomes U+FFFD; end-of-word suffixes become spaces."""
        text = self.decode_bytes(ids).decode("utf-8", errors="replace")
        if not self.model.is_byte_level:
            suffix, prefix = self.model.end_of_word_suffix, self.model.continuing_subword_prefix
            if suffix:
                text = text.replace(suffix, " ").rstrip(" ")
            if prefix:
                text = text.replace(prefix, "")
        return text

    # -- the algorithm -------------------------------------------------------------

    def spell(self, chunk: str) -> list[int]:
        """A chunk -> its base symbol ids (HF ``merge_word``'s unknown handling included)."""
        if self.model.ignore_merges:
            whole = self._lookup_whole(chunk)
            if whole is not None:
                return [whole]
        if self.model.is_byte_level:
            keys: Iterable = (bytes([b]) for b in encode_text(chunk))
        else:
            keys = self._char_symbols(chunk)
        ids: list[int] = []
        unk_run = False
        for key in keys:
            symbol = self._symbols.get(key)
            if symbol is not None:
                ids.append(symbol)
                unk_run = False
            elif self._unk_id is not None:
                # HF: with fuse_unk, consecutive unknowns become one unknown token.
                if not (self.model.fuse_unk and unk_run):
                    ids.append(self._unk_id)
                unk_run = True
            elif self.model.unk_token is not None:
                # HF refuses to encode when the named unknown token is missing; dropping would be a silent loss
                raise BpefstError(f"{key!r} is not in the vocabulary, and neither is the unknown token "
                                  f"{self.model.unk_token!r} that should stand for it")
            # Without an unknown token HF drops the symbol; so do we.
        return ids

    def _lookup_whole(self, chunk: str) -> int | None:
        key = encode_text(chunk) if self.model.is_byte_level else chunk
        return self._symbols.get(key)

    def _char_symbols(self, chunk: str) -> Iterable[str]:
        prefix, suffix = self.model.continuing_subword_prefix, self.model.end_of_word_suffix
        last = len(chunk) - 1
        for i, char in enumerate(chunk):
            if prefix and i > 0:
                char = prefix + char
            if suffix and i == last:
                char = char + suffix
            yield char

    def bpe(self, symbols: list[int]) -> list[int]:
        """Apply merges to a symbol sequence by rank, leftmost first (O(n log n))."""
        n = len(symbols)
        if n < 2:
            return list(symbols)
        merges = self._merges
        ids = list(symbols)
        nxt = list(range(1, n + 1))
        prv = list(range(-1, n - 1))
        alive = [True] * n
        heap = []
        for i in range(n - 1):
            found = merges.get((ids[i], ids[i + 1]))
            if found is not None:
                heap.append((found[0], i, found[1]))
        heapq.heapify(heap)
        while heap:
            rank, i, result = heapq.heappop(heap)
            j = nxt[i]
            if not alive[i] or j >= n:
                continue
            found = merges.get((ids[i], ids[j]))
            if found is None or found[0] != rank:
                continue  # stale: a neighbour was merged away since this entry was pushed
            ids[i] = result
            alive[j] = False
            nxt[i] = nxt[j]
            if nxt[j] < n:
                prv[nxt[j]] = i
            p = prv[i]
            if p >= 0:
                found = merges.get((ids[p], result))
                if found is not None:
                    heapq.heappush(heap, (found[0], p, found[1]))
            if nxt[i] < n:
                found = merges.get((result, ids[nxt[i]]))
                if found is not None:
                    heapq.heappush(heap, (found[0], i, found[1]))
        out = []
        i = 0
        while i < n:
            out.append(ids[i])
            i = nxt[i]
        return out


def encode_text(text: str) -> bytes:
    """Text -> bytes, passing through raw bytes smuggled in as lone surrogates."""
    return text.encode("utf-8", errors="surrogateescape")


def decode_input(data: bytes, byte_level: bool) -> str:
    """Raw input -> text.

    Byte-level tokenizers accept any bytes: invalid UTF-8 bytes are carried as
    lone surrogates (``surrogateescape``), which pre-tokenize as punctuation and
    turn back into the same bytes in :func:`encode_text`.  Character-level
    tokenizers need text, so invalid UTF-8 is an error naming the byte offset.
    """
    if byte_level:
        return data.decode("utf-8", errors="surrogateescape")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BpefstError(f"input is not valid UTF-8 at byte offset {exc.start}; this character-level tokenizer needs text") from None
