"""BPE of one pre-tokenized chunk on a cache miss, by the cheapest exact route.

The chunk cache of :class:`~bpefst.pipeline.encoder.Tokenizer` answers most
chunks of real text; this module answers the rest.  In English a miss is rare,
in most other scripts it is the common case (a run of Chinese letters is one
chunk, and Russian words rarely repeat within a few megabytes), so the miss
path decides speed on multilingual text.  Routes, cheapest first:

1. **A whole token.**  Many chunks are one token.  The token is BPE's answer
   exactly when it is *reachable* (BPE of its own bytes gives it), which the
   lazy merge forest decides once per token (:mod:`.lazy_forest`).
2. **Short chunks: textbook BPE** in C-level loops
   (:mod:`..tokenizer.packed_bpe`), about a microsecond per merge: quadratic,
   but below :data:`SHORT_CHUNK` bytes nothing we measured beats it (and so
   are the first few hundred chunks up to :data:`MEDIUM_CHUNK` bytes, which
   cost less than building route 3's tables);
3. **Longer chunks: tokens placed longest first** (:mod:`.backtracking`),
   about linear in the chunk, with a step budget;
4. over budget, or longer than :data:`LONG_CHUNK`: ``None``, and the caller
   runs its subsequential transducer, linear in the worst case but costly to
   build (which is why routes 1-3 come first: a cold tokenizer should not pay
   for it on ordinary text).

Every route gives the reference encoder's ids.  Route 1 needs to know which
tokens are reachable: the rank-file reader knows (every merge it recovers
fires), otherwise the lazy forest decides.  Routes 1 and 3 rest on the lazy
forest's facts, which hold only when every token comes from one merge and no
merge needs a token built at a later rank; :meth:`LazyForest.of` checks both,
and without them only the textbook route and the caller's transducer are used.
The forest is built on first need, so a cold tokenizer on ordinary text never
pays for it.

Tried and dropped, with figures in benchmarks/README.md: starting BPE from
characters, and joining per-character or greedy pieces repaired at failing
junctions.  Both are exact (the junction test is the 1-locality of the
canonical language) but their Python-level bookkeeping costs as much as the
merges they save.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Sequence

from ..tokenizer.packed_bpe import bpe_packed
from ..tokenizer.reference import encode_text
from .lazy_forest import LazyForest

if TYPE_CHECKING:
    from ..tokenizer import BPEModel
    from .backtracking import BacktrackingEncoder

SHORT_CHUNK = 128  # bytes: up to here textbook BPE (quadratic, but C-level loops)
MEDIUM_CHUNK = 512  # bytes: the first MEDIUM_BEFORE_FOREST chunks up to here also go to textbook BPE
MEDIUM_BEFORE_FOREST = 256  # (about 1 ms each at most; building the forest and prefix index costs 0.1-0.3 s)
LONG_CHUNK = 8192  # bytes: up to here tokens placed longest first; longer goes to the transducer


class ChunkEncoder:
    """``encode(chunk)`` -> BPE ids of a chunk of text, or None for the caller's transducer.

    For byte-level models with all 256 byte tokens whose tokens each come from
    one merge (``Tokenizer._byte_codes``).
    """

    def __init__(self, model: "BPEModel"):
        self.model = model
        packed, self._shift = model.packed_merges
        self._pair = packed.get
        self._byte_ids = [model.token_to_id[bytes([b])] for b in range(256)]
        self._byte_table = bytes(self._byte_ids) if max(self._byte_ids) < 256 else None
        self._token = model.token_to_id.get
        self._known_reachable = model.known_reachable  # from the reader (rank files), else None
        self._medium_before_forest = MEDIUM_BEFORE_FOREST

    @cached_property
    def forest(self) -> LazyForest | None:
        """Built when first needed (rank files need it only for long chunks)."""
        return LazyForest.of(self.model)

    @cached_property
    def backtracking(self) -> "BacktrackingEncoder":
        from .backtracking import BacktrackingEncoder

        return BacktrackingEncoder(self.model, self.forest)

    def encode(self, chunk: str) -> Sequence[int] | None:
        data = encode_text(chunk)
        whole = self._token(data)
        if whole is not None and self._reachable(whole):
            return (whole,)
        size = len(data)
        if size <= SHORT_CHUNK:
            return self.bpe_bytes(data)
        if size <= MEDIUM_CHUNK and self._medium_before_forest:
            # The few longer chunks of ordinary text do not pay for building the forest.
            self._medium_before_forest -= 1
            return self.bpe_bytes(data)
        if size > LONG_CHUNK or self.forest is None:
            return None
        return self.backtracking.encode(data)

    def _reachable(self, token: int) -> bool:
        known = self._known_reachable
        if known is not None:
            return token in known
        forest = self.forest
        return forest is not None and forest.reachable(token)

    def bpe_bytes(self, data: bytes) -> list[int]:
        """Textbook BPE from the bytes (:mod:`..tokenizer.packed_bpe`)."""
        table = self._byte_table
        symbols = list(data.translate(table)) if table is not None else list(map(self._byte_ids.__getitem__, data))
        return bpe_packed(symbols, self._pair, self._shift)
