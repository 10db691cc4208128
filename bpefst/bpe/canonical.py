"""The canonical token automaton A_BPE and its two encodings.

A_BPE accepts exactly the token sequences BPE produces (seed 000 Sec. 6.4).  It
is 1-local (seed 000 Sec. 6.5): the state after a token depends only on that
token, so its states are ``q_0`` (the start) and ``q_u`` for each reachable
token ``u``, all accepting, with ``q_u -v-> q_v`` unless ``v`` is in
``BANNED(u)``.  Two states are equal in the minimal DFA exactly when their
banned sets are equal (every single token is accepted from every state, so
different allowed sets mean different languages); the start state is the
state with the empty banned set.

* **explicit** encoding: tokens grouped by banned set; one bitset per group
  (computed by :mod:`.banned` from the merge structure).  Arc lookup is a bit
  test; the group count is the minimal state count.
* **implicit** encoding: the merge forest and pair ranks only; arcs are decided
  on demand by the pair walk of :mod:`.compatibility` and memoized.  Fits any
  vocabulary (cl100k, o200k) in a few MB.

Both answer the same questions through one API: ``step``, ``allowed``,
``allowed_next``, ``is_canonical``, ``first_violation``.  A state is the last
token read, or :data:`START`.
"""

from __future__ import annotations

import time
import zlib
from array import array
from functools import cached_property
from typing import Iterable, Sequence

from ..artifact import pack_ints, unpack_ints
from ..automata import DFA
from .banned import SingleBanned, banned_masks
from .compatibility import compatible_before
from .merge_forest import MergeForest

START = -1
ENCODINGS = ("explicit", "implicit")
AUTO_EXPLICIT_LIMIT = 65_536  # largest vocabulary `--encoding auto` stores explicitly
_MEMO_LIMIT = 1 << 21
CLASS_WINDOW = 16_384  # follower ids per pass when grouping tokens by banned set (memory: one window's bitsets)
_BANNED_MEMO_LIMIT = 4096  # banned bitsets kept by the implicit encoding (each up to vocabulary/8 bytes)


def _mask_of(tokens) -> int:
    buffer = bytearray((max(tokens, default=0) >> 3) + 1)
    for t in tokens:
        buffer[t >> 3] |= 1 << (t & 7)
    return int.from_bytes(buffer, "little")


class CanonicalAutomaton:
    """A_BPE over the ordinary token ids of one tokenizer (specials excluded)."""

    encoding = "abstract"

    def __init__(self, forest: MergeForest):
        self.forest = forest
        self.reachable = forest.reachable
        self.stats: dict[str, object] = {}
        self._pair_checker = None
        self._banned_index = None

    @cached_property
    def reachable_flags(self) -> bytes:
        """``reachable`` as one byte per token (what the compiled walks take), made once."""
        return bytes(self.reachable)

    def pair_checker(self):
        """The compiled canonical-pair test over this forest (``bpefst._core.PairChecker``, the twin of
        :func:`~.compatibility.compatible_before`), built on first use; None without the compiled core
        or for a forest past its id range."""
        from .. import native

        if self._pair_checker is None and native.core is not None and self.forest.size <= native.CORE_MAX_ID:
            self._pair_checker = native.pair_checker(self.forest)
        return self._pair_checker

    def banned_index(self):
        """The compiled index of single banned sets over this forest (``bpefst._core.BannedIndex``, the
        twin of :class:`~.banned.SingleBanned`), built on first use; None without the compiled core or for a
        forest past its id range.  Decoding masks of the implicit encoding read it, and promotion's shared
        rows read BANNED(t) restricted to a lattice's tokens off it, whichever the encoding."""
        from .. import native

        if self._banned_index is None and native.core is not None and self.forest.size <= native.CORE_MAX_ID:
            self._banned_index = native.banned_index(self.forest)
        return self._banned_index

    # -- the automaton ------------------------------------------------------------------

    @property
    def start(self) -> int:
        return START

    def allowed(self, u: int, v: int) -> bool:
        """May ``v`` follow ``u`` (``u`` may be START)?"""
        raise NotImplementedError

    def step(self, state: int, token: int) -> int | None:
        """The state after reading ``token`` from ``state``; None when rejected."""
        if 0 <= token < self.forest.size and self.allowed(state, token):
            return token
        return None

    def is_canonical(self, ids: Sequence[int]) -> bool:
        return self.first_violation(ids) is None

    def first_violation(self, ids: Sequence[int]) -> int | None:
        """Index of the first token that cannot follow its predecessor (or cannot occur), else None."""
        state = START
        for i, token in enumerate(ids):
            state = self.step(state, token)
            if state is None:
                return i
        return None

    def allowed_next(self, state: int) -> list[int]:
        """Every token id that may follow ``state``."""
        return [v for v in range(self.forest.size) if self.reachable[v] and self.allowed(state, v)]

    def banned_mask(self, u: int) -> int:
        """``BANNED(u)`` as a bitset over token ids (bit ``v`` set iff ``v`` may not follow ``u``).

        Every bit for a token that cannot occur (nothing may follow it, as in :meth:`allowed`).
        """
        raise NotImplementedError

    def banned_bytes(self, u: int) -> bytes | None:
        """``BANNED(u)`` as little-endian bytes where an encoding keeps it so (for masks made as bytes), else None."""
        return None

    def allowed_mask(self, state: int) -> int:
        """``allowed_next`` as a bitset (bit ``v`` set iff ``v`` may follow)."""
        mask = 0
        for v in self.allowed_next(state):
            mask |= 1 << v
        return mask

    # -- structure ------------------------------------------------------------------------

    def token_classes(self, window: int = CLASS_WINDOW) -> tuple[list[int], list[int]]:
        """``(class of each token or -1, banned bitset of each class)``; the minimal states, numbered by first
        occurrence in merge-rank order.  On the compiled core each token's whole set is read off the compiled
        index of single banned sets (:meth:`_classes_by_single_sets`: GPT-2 1.3 -> 0.3 s); else by windows of
        all the sets at once (:meth:`_classes_by_windows`, the pure twin)."""
        index = self.banned_index()
        if index is not None:
            return self._classes_by_single_sets(index)
        return self._classes_by_windows(window)

    def _classes_by_single_sets(self, index) -> tuple[list[int], list[int]]:
        """:meth:`token_classes` from ``index.mask(u)``, BANNED(u) as bytes (``bpefst._core.BannedIndex``):
        equal sets are equal bytes, so a dict numbers them; each distinct set is held once as bytes, then
        as the int the explicit encoding keeps."""
        forest = self.forest
        token_class = [-1] * forest.size
        numbers: dict[bytes, int] = {}
        for u in sorted(forest.reachable_ids, key=forest.rank.__getitem__):
            token_class[u] = numbers.setdefault(index.mask(u), len(numbers))
        return token_class, [int.from_bytes(mask, "little") for mask in numbers]

    def _classes_by_windows(self, window: int = CLASS_WINDOW) -> tuple[list[int], list[int]]:
        """:meth:`token_classes` from :func:`.banned.banned_masks`, all tokens' sets at once (pure Python).

        Classes are refined one window of follower ids at a time: after a
        window a token's class is the pair (its class so far, its banned bits
        in the window), so memory holds one window's follower sets and the
        distinct pieces, not every token's whole bitset at once (GPT-2: 320 MB
        at the peak instead of 800).  Classes are numbered by first occurrence
        in merge-rank order, as a single pass over whole bitsets numbers them.
        """
        forest = self.forest
        token_class = [-1] * forest.size
        pieces: list[list[tuple[int, int]]] = []  # per window: class -> (class before the window, its bits there)
        order: list[int] = []
        for lo in range(0, max(forest.size, 1), window):
            refined: dict[tuple[int, int], int] = {}
            for u, mask in banned_masks(forest, lo, lo + window):
                if lo == 0:
                    order.append(u)
                token_class[u] = refined.setdefault((token_class[u], mask), len(refined))
            pieces.append(list(refined))
        first_seen: dict[int, int] = {}
        for u in order:
            token_class[u] = first_seen.setdefault(token_class[u], len(first_seen))
        class_banned = [0] * len(first_seen)
        for last, number in first_seen.items():
            mask, k = 0, last
            for lo_index in range(len(pieces) - 1, -1, -1):
                k, bits = pieces[lo_index][k]
                mask |= bits << (lo_index * window)
            class_banned[number] = mask
        return token_class, class_banned

    def size_stats(self) -> dict[str, int]:
        """States, arcs and banned pairs of the minimal A_BPE (costly for large implicit automata)."""
        return count_states(self.forest)

    def to_dfa(self) -> DFA:
        """The minimal DFA (states = banned-set classes) as an explicit automaton.

        Meant for small vocabularies and tests: it has ``states x tokens`` arcs.
        """
        token_class, class_banned = self.token_classes()
        reachable = self.forest.reachable_ids
        start_class = class_banned.index(0) if 0 in class_banned else len(class_banned)
        rows: list[dict[int, int]] = []
        for banned in class_banned + ([0] if start_class == len(class_banned) else []):
            rows.append({v: token_class[v] for v in reachable if not banned >> v & 1})
        return DFA(rows, start_class, frozenset(range(len(rows))), check=False)


class ImplicitCanonical(CanonicalAutomaton):
    """Arcs decided on demand from the merge forest (memoized)."""

    encoding = "implicit"

    def __init__(self, forest: MergeForest, engine: str | None = None):
        """``engine``: where single banned sets are computed (:func:`bpefst.native.choose`)."""
        from .. import native

        super().__init__(forest)
        self._memo: dict[int, bool] = {}
        self._compiled = native.choose(engine) == "compiled" and forest.size <= native.CORE_MAX_ID
        self._single = None  # the index of one token's banned set, built on first use
        self._banned: dict[int, int | bytes] = {}

    def banned_mask(self, u: int) -> int:
        """From a per-forest index of single banned sets (:class:`~.banned.SingleBanned`, or its compiled
        twin ``bpefst._core.BannedIndex``), built on first use; memoized."""
        if u == START:
            return 0
        if not self.reachable[u]:
            return (1 << self.forest.size) - 1
        mask = self._banned_memo(u)
        return int.from_bytes(mask, "little") if self._compiled else mask

    def banned_bytes(self, u: int) -> bytes | None:
        """``BANNED(u)`` of a reachable token as little-endian bytes, on the compiled core (memoized with
        :meth:`banned_mask`); None on the pure path, where callers use ``banned_mask``."""
        return self._banned_memo(u) if self._compiled and u != START and self.reachable[u] else None

    def _banned_memo(self, u: int):
        """The memo behind both: bytes from the compiled index, ints from the pure one."""
        mask = self._banned.get(u)
        if mask is None:
            if self._single is None:
                self._single = self._build_index()
            if len(self._banned) >= _BANNED_MEMO_LIMIT:
                self._banned.clear()
            mask = self._single.mask(u) if self._compiled else _mask_of(self._single.tokens(u))
            self._banned[u] = mask
        return mask

    def _build_index(self):
        return self.banned_index() if self._compiled else SingleBanned(self.forest)

    def allowed(self, u: int, v: int) -> bool:
        reachable = self.reachable
        if not reachable[v]:
            return False
        if u == START:
            return True
        key = u << 32 | v
        answer = self._memo.get(key)
        if answer is None:
            answer = reachable[u] and compatible_before(self.forest, u, v)
            if len(self._memo) >= _MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = answer
        return answer


class ExplicitCanonical(CanonicalAutomaton):
    """Tokens grouped by banned set; one bitset per group."""

    encoding = "explicit"

    def __init__(self, forest: MergeForest, token_class: list[int], class_banned: list[int]):
        super().__init__(forest)
        self.token_class = token_class
        self.class_banned = class_banned
        self._class_bytes: dict[int, bytes] = {}

    @classmethod
    def build(cls, forest: MergeForest) -> "ExplicitCanonical":
        grouping = CanonicalAutomaton(forest)
        token_class, class_banned = grouping.token_classes()
        built = cls(forest, token_class, class_banned)
        built._banned_index = grouping._banned_index  # (the compiled index it read, kept for the masks)
        return built

    def allowed(self, u: int, v: int) -> bool:
        if not self.reachable[v]:
            return False
        if u == START:
            return True
        group = self.token_class[u]
        return group >= 0 and not self.class_banned[group] >> v & 1

    def banned_mask(self, u: int) -> int:
        if u == START:
            return 0
        group = self.token_class[u]
        return self.class_banned[group] if group >= 0 else (1 << self.forest.size) - 1

    def banned_bytes(self, u: int) -> bytes | None:
        """``BANNED(u)`` of a reachable token as little-endian bytes (its class's bitset; memoized)."""
        if u == START or self.token_class[u] < 0:
            return None
        group = self.token_class[u]
        found = self._class_bytes.get(group)
        if found is None:
            if len(self._class_bytes) >= _BANNED_MEMO_LIMIT:
                self._class_bytes.clear()
            found = self._class_bytes[group] = self.class_banned[group].to_bytes((self.forest.size + 7) // 8, "little")
        return found

    def allowed_next(self, state: int) -> list[int]:
        if state != START and self.token_class[state] < 0:
            return []
        banned = 0 if state == START else self.class_banned[self.token_class[state]]
        return [v for v in self.forest.reachable_ids if not banned >> v & 1]

    def token_classes(self) -> tuple[list[int], list[int]]:
        return self.token_class, self.class_banned

    def size_stats(self) -> dict[str, int]:
        counts = [mask.bit_count() for mask in self.class_banned]
        return _summarize(len(self.forest.reachable_ids), ((c, counts[c]) for c in self.token_class if c >= 0))

    def packed_banned(self) -> bytes:
        """All class bitsets, fixed width, concatenated and zlib-compressed."""
        width = (self.forest.size + 7) // 8
        return zlib.compress(b"".join(mask.to_bytes(width, "little") for mask in self.class_banned), 6)

    @staticmethod
    def unpack_banned(data: bytes, count: int, size: int) -> list[int]:
        width = (size + 7) // 8
        inflater = zlib.decompressobj()
        raw = inflater.decompress(data, width * count + 1)  # never inflate past the size the table must have
        if len(raw) != width * count or not inflater.eof:
            raise ValueError("banned table has the wrong size")
        return [int.from_bytes(raw[k * width : (k + 1) * width], "little") for k in range(count)]

    # -- kept on disk (bpefst.promotion.parts) ---------------------------------------------------------------
    def to_tables(self) -> dict:
        """The token classes and the classes' banned bitsets as msgpack-ready values, for :meth:`from_tables`.

        The bitsets (GPT-2: 14,410 classes of 6 KB, 90 MB) are cut into pieces of :data:`PIECE_BYTES` bytes
        and each distinct piece is stored once (GPT-2: 161k distinct pieces of 721k, most of them all
        zeros or repeated, 21 MB) with, per class, the numbers of its pieces (3 MB): reading it back is a
        join of pieces per class, no inflating, a fraction of the seconds the classes take to build.
        (:meth:`packed_banned`, the zlib stream of the ``canonical-dfa`` artifact, is about as small but
        takes twice as long to read.)
        """
        pieces_per_class = -(-((self.forest.size + 7) // 8) // PIECE_BYTES)
        padded = pieces_per_class * PIECE_BYTES
        number: dict[bytes, int] = {}
        index = array("I")
        for mask in self.class_banned:
            data = mask.to_bytes(padded, "little")
            index.extend(number.setdefault(data[k:k + PIECE_BYTES], len(number)) for k in range(0, padded, PIECE_BYTES))
        return {"token_class": pack_ints(self.token_class, "i"), "classes": len(self.class_banned),
                "piece_bytes": PIECE_BYTES, "pieces": b"".join(number), "index": pack_ints(index, "I")}

    @classmethod
    def from_tables(cls, forest: MergeForest, tables: dict) -> "ExplicitCanonical":
        """The automaton :meth:`to_tables` wrote, over ``forest`` (the same tokenizer's).  Raises ValueError
        (or KeyError, TypeError) on tables that do not hold together."""
        token_class = unpack_ints(tables["token_class"], "i").tolist()
        classes, width, blob = tables["classes"], tables["piece_bytes"], tables["pieces"]
        index = unpack_ints(tables["index"], "I")
        if len(token_class) != forest.size or not (type(classes) is int and type(width) is int and 0 <= classes and width > 0):
            raise ValueError("token classes do not fit the merge forest")
        if not all(-1 <= c < classes and (c >= 0) == reached for c, reached in zip(token_class, forest.reachable)):
            raise ValueError("token classes out of range, or given to tokens that cannot occur")
        per = -(-((forest.size + 7) // 8) // width)
        if len(blob) % width or len(index) != classes * per or (index and max(index) >= len(blob) // width):
            raise ValueError("the banned bitsets' pieces do not fit the classes")
        piece = [blob[k:k + width] for k in range(0, len(blob), width)].__getitem__
        class_banned = [int.from_bytes(b"".join(map(piece, index[c * per:(c + 1) * per])), "little") for c in range(classes)]
        return cls(forest, token_class, class_banned)


PIECE_BYTES = 128  # bytes per piece of a banned bitset in ExplicitCanonical.to_tables (measured: 64 is larger, 256 too)


def build_canonical(forest: MergeForest, encoding: str = "auto") -> CanonicalAutomaton:
    """A_BPE in the requested encoding (``auto``: explicit up to 65,536 tokens)."""
    if encoding == "auto":
        encoding = "explicit" if forest.size <= AUTO_EXPLICIT_LIMIT else "implicit"
    started = time.perf_counter()
    automaton = ExplicitCanonical.build(forest) if encoding == "explicit" else ImplicitCanonical(forest)
    automaton.stats["build_seconds"] = time.perf_counter() - started
    return automaton


def count_states(forest: MergeForest, window: int = 32_768) -> dict[str, int]:
    """Minimal state count and arc counts of A_BPE without holding every banned set.

    Banned sets are computed over windows of follower ids; each token folds its
    pieces into a hash signature, so memory stays at one window's bitsets.
    """
    signature = [0] * forest.size
    banned_count = [0] * forest.size
    for lo in range(0, max(forest.size, 1), window):
        width = (window + 7) // 8
        for u, mask in banned_masks(forest, lo, lo + window):
            if mask:
                # hash() of an int is taken modulo 2**61 - 1, so bits 61 apart collide;
                # the SipHash of the bytes does not have that structure.
                signature[u] = hash((signature[u], lo, mask.to_bytes(width, "little")))
                banned_count[u] += mask.bit_count()
    return _summarize(len(forest.reachable_ids), [(signature[u], banned_count[u]) for u in forest.reachable_ids])


def _summarize(reachable: int, token_signatures: Iterable[tuple[object, int]]) -> dict[str, int]:
    """States and arcs of the minimal A_BPE from (banned-set signature, banned count) per token."""
    classes: dict[object, int] = {}
    banned_pairs = 0
    for signature, count in token_signatures:
        classes.setdefault(signature, count)
        banned_pairs += count
    has_empty = 0 in classes.values()
    stored = sum(classes.values())
    return {
        "tokens": reachable,
        "states": len(classes) + (0 if has_empty else 1),
        "arcs": sum(reachable - c for c in classes.values()) + (0 if has_empty else reachable),
        "banned_pairs": banned_pairs,
        "banned_per_state": stored,
    }
