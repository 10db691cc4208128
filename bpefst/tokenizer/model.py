"""The BPE tokenizer model: base alphabet, vocabulary, ordered merges, specials.

A BPE model (Sennrich et al. 2016; byte-level as in GPT-2) is

* a **level**: ``"byte"`` (tokens are byte strings, the base alphabet is the
  256 single bytes) or ``"char"`` (tokens are character strings, the base
  alphabet is the set of tokens no merge produces — for HF models with an
  end-of-word suffix that includes symbols such as ``"s▁"``);
* a **vocabulary** ``id -> token`` (``bytes`` for byte-level, ``str`` for
  character-level);
* an ordered list of **merges** ``(left id, right id)``; the position in the list
  is the merge's rank (lower merges first), and the result is the token spelled
  by the concatenation (minus the right side's continuing-subword prefix);
* **special tokens** ``text -> id``, split off before BPE and never merged;
* the **pre-tokenization pattern** (see :mod:`.pretokenize`);
* format details that change how a chunk becomes base symbols: the
  end-of-word suffix, the continuing-subword prefix, the unknown token and
  ``fuse_unk``, HF's ``ignore_merges``, and what a byte without a token of its
  own does (``missing_bytes``: ``"drop"``, HF's way, or ``"split"``, llama.cpp's;
  see :mod:`.byte_barriers`).

The model is *proper* (Berglund et al., 001 Sec. 2): each merge combines two
tokens that are already built (base symbols or results of earlier merges) and
no merge is listed twice.  :meth:`BPEModel.validate` enforces this with a
message naming the offending merge; every reader calls it.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from itertools import islice, repeat
from operator import add, itemgetter, lt, sub
from typing import Union

import msgpack

from ..errors import BpefstError
from .pretokenize import preset_name

Token = Union[bytes, str]
LEVELS = ("byte", "char")
# What BPE does with a byte that has no single-byte token: "drop" it before merging (HF), or
# "split" the chunk there, BPE each side alone, and leave it out (llama.cpp); see byte_barriers.py
MISSING_BYTES = ("drop", "split")
# Ids are stored as uint32 (artifacts, automata tables) and HF reads them as u32
MAX_ID = 2**32 - 1
_LEFT, _RIGHT = itemgetter(0), itemgetter(1)
_SINGLE_BYTES = [bytes([b]) for b in range(256)]
# Ids may leave gaps (specials placed after a reserved range), but not gaps that would size
# tables by an id far beyond the vocabulary (issue 16, item 6): largest id < 4 x tokens + 65,536.
SPARSE_FACTOR = 4
SPARSE_SLACK = 65_536


@dataclass(eq=True)
class BPEModel:
    level: str
    vocab: dict[int, Token]
    merges: list[tuple[int, int]]
    specials: dict[str, int] = field(default_factory=dict)
    pattern: str | None = None
    end_of_word_suffix: str | None = None
    continuing_subword_prefix: str | None = None
    unk_token: str | None = None
    fuse_unk: bool = False
    ignore_merges: bool = False
    missing_bytes: str = "drop"

    def __post_init__(self) -> None:
        self.validate()

    @classmethod
    def unchecked(cls, **fields) -> "BPEModel":
        """A model whose fields are known to be valid, built without :meth:`validate`.

        For readers whose input is valid by construction (merges recovered from
        a rank file) or was checked when it was written and travels in trusted
        hands (an unpickled tokenizer).  Files from users go through the checks.
        """
        model = cls.__new__(cls)
        for spec in dataclasses.fields(cls):
            if spec.name in fields:
                value = fields.pop(spec.name)
            elif spec.default_factory is not dataclasses.MISSING:
                value = spec.default_factory()
            else:
                value = spec.default
            object.__setattr__(model, spec.name, value)
        if fields:
            raise TypeError(f"unknown BPEModel fields: {', '.join(fields)}")
        return model

    @classmethod
    def with_checked_tables(cls, merge_results: list[int], **fields) -> "BPEModel":
        """A byte-level model whose vocabulary and merges were checked in bulk elsewhere (the compiled
        core's loader: ids and tokens unique and non-empty, every merge's concatenation a token, the list
        proper), with ``merge_results`` found there; the remaining checks (fields, special tokens) run
        here, and where one fails the full :meth:`validate` names the problem."""
        model = cls.unchecked(**fields)
        if model.level != "byte" or model.continuing_subword_prefix or len(merge_results) != len(model.merges):
            return cls(**fields)
        model._check_fields()
        if not model._specials_look_valid():
            return cls(**fields)
        model.__dict__["merge_results"] = merge_results
        return model

    # -- structure -----------------------------------------------------------------

    @cached_property
    def token_to_id(self) -> dict[Token, int]:
        return dict(zip(self.vocab.values(), self.vocab.keys()))

    @cached_property
    def merge_results(self) -> list[int]:
        """The id of the token each merge produces, in rank order."""
        if not self.continuing_subword_prefix:  # the result is spelled by the concatenation: one C-level pass
            vocab = self.vocab
            try:
                spelled = map(add, map(vocab.__getitem__, map(_LEFT, self.merges)), map(vocab.__getitem__, map(_RIGHT, self.merges)))
                results = list(map(self.token_to_id.get, spelled))
            except (KeyError, TypeError):
                results = [None]
            if None not in results:
                return results
        return [self._merge_result(rank, a, b) for rank, (a, b) in enumerate(self.merges)]

    @cached_property
    def known_reachable(self) -> frozenset[int] | None:
        """The tokens BPE produces from their own bytes, when a reader knows them without the merge
        forest (see :attr:`packed_merges`); None otherwise (:class:`~bpefst.bpe.MergeForest` decides)."""
        return None

    @cached_property
    def packed_merges(self) -> tuple[dict[int, int], int]:
        """``(table, shift)``: the merge table packed for :func:`.packed_bpe.bpe_packed`.

        A reader that builds it anyway (the rank-file reader, while recovering
        merges) stores it here, as it may :attr:`merge_results`.
        """
        from .packed_bpe import pack_merges, pair_shift

        shift = pair_shift(self.vocab)
        return pack_merges(self.merges, self.merge_results, shift), shift

    @cached_property
    def merge_table(self) -> dict[tuple[int, int], tuple[int, int]]:
        """``(left, right) -> (rank, result)``, the lookup BPE encoding needs."""
        return {pair: (rank, result) for rank, (pair, result) in enumerate(zip(self.merges, self.merge_results))}

    @cached_property
    def base_ids(self) -> frozenset[int]:
        """Ids of the base alphabet: single bytes, or the tokens no merge produces."""
        if self.level == "byte":
            ids = map(self.token_to_id.get, _SINGLE_BYTES)
            return frozenset(i for i in ids if i is not None)
        produced = set(self.merge_results)
        return frozenset(i for i in self.vocab if i not in produced)

    @cached_property
    def base_bytes(self) -> dict[int, int]:
        """Byte-level models: the byte each base symbol stands for (``{id: byte}``), made once."""
        return {i: self.vocab[i][0] for i in self.base_ids}

    @cached_property
    def base_byte_table(self):
        """:attr:`base_bytes` packed as the compiled core reads it (:func:`bpefst.native.symbol_table`), made once."""
        from .. import native

        return native.symbol_table(self.base_bytes)

    @cached_property
    def base_alphabet(self):
        """The alphabet a regex over this model is compiled in (:func:`bpefst.regex.alphabet_for`), made once."""
        from ..regex.alphabets import ByteAlphabet, CharAlphabet

        return ByteAlphabet.from_model(self) if self.level == "byte" else CharAlphabet.from_model(self)

    @cached_property
    def spellings(self) -> dict[int, tuple[int, ...]]:
        """The base-symbol ids each ordinary token spells (bytes as their single-byte tokens)."""
        if self.level == "byte":
            byte_id = {t[0]: i for i, t in self.vocab.items() if len(t) == 1}
            return {i: tuple(byte_id[b] for b in t) for i, t in self.vocab.items() if all(b in byte_id for b in t)}
        first: dict[int, tuple[int, int]] = {}
        for pair, result in zip(self.merges, self.merge_results):
            first.setdefault(result, pair)
        spelled: dict[int, tuple[int, ...]] = {i: (i,) for i in self.base_ids}
        for result, (a, b) in sorted(first.items(), key=lambda kv: self.merge_table[kv[1]][0]):
            spelled.setdefault(result, spelled[a] + spelled[b])
        return spelled

    @cached_property
    def barrier_bytes(self) -> frozenset[int]:
        """The bytes that cut a chunk (``missing_bytes == "split"``: the bytes with no token); empty otherwise."""
        if self.missing_bytes != "split":
            return frozenset()
        return frozenset(b for b, token in enumerate(_SINGLE_BYTES) if token not in self.token_to_id)

    @property
    def is_byte_level(self) -> bool:
        return self.level == "byte"

    @property
    def pattern_name(self) -> str:
        return preset_name(self.pattern)

    @cached_property
    def max_id(self) -> int:
        return max(max(self.vocab, default=-1), max(self.specials.values(), default=-1))

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for (UTF-8 for character-level tokens and specials)."""
        token = self.vocab.get(token_id)
        if token is None:
            for text, sid in self.specials.items():
                if sid == token_id:
                    return text.encode("utf-8")
            raise BpefstError(f"token id {token_id} is not in the vocabulary")
        return token if isinstance(token, bytes) else token.encode("utf-8")

    # -- checks ------------------------------------------------------------------

    def _merge_result(self, rank: int, a: int, b: int) -> int:
        left, right = self.vocab[a], self.vocab[b]
        prefix = self.continuing_subword_prefix
        if prefix and isinstance(right, str) and right.startswith(prefix):
            right = right[len(prefix) :]
        result = self.token_to_id.get(left + right)
        if result is None:
            raise BpefstError(f"merge {rank} ({_show(left)} {_show(right)}) produces {_show(left + right)}, which is not in the vocabulary")
        return result

    def validate(self) -> None:
        """Raise BpefstError unless the model is well formed and proper.

        The checks run first as whole-table passes (C-level maps over the
        vocabulary and merges); only when one fails does the entry-by-entry
        walk below run, to name the offending entry.  A 100k-token model is
        checked in about a tenth of a second.
        """
        self._check_fields()
        if not self._looks_valid():
            self._validate_entries()
            self._check_proper()

    def _check_fields(self) -> None:
        """The scalar fields have their types (a tampered artifact must fail here, not deep in tokenizing)."""
        for name in ("pattern", "end_of_word_suffix", "continuing_subword_prefix", "unk_token"):
            if not isinstance(getattr(self, name), (str, type(None))):
                raise BpefstError(f"{name} must be a string or none, found {type(getattr(self, name)).__name__}")
        for name in ("fuse_unk", "ignore_merges"):
            if not isinstance(getattr(self, name), bool):
                raise BpefstError(f"{name} must be true or false, found {type(getattr(self, name)).__name__}")
        if self.missing_bytes not in MISSING_BYTES:
            raise BpefstError(f"missing_bytes must be one of {', '.join(MISSING_BYTES)}, found {self.missing_bytes!r}")
        if self.missing_bytes == "split" and self.level != "byte":
            raise BpefstError("missing_bytes='split' is for byte-level models (a character-level model has no bytes to miss)")

    def _looks_valid(self) -> bool:
        """Every check of :meth:`validate` in bulk; False when any fails (or cannot tell)."""
        if self.level not in LEVELS:
            return False
        expected = bytes if self.level == "byte" else str
        ids, tokens = self.vocab.keys(), self.vocab.values()
        if ids and not (set(map(type, ids)) == {int} and min(ids) >= 0 and max(ids) <= MAX_ID):
            return False
        if tokens and not (set(map(type, tokens)) == {expected} and all(tokens)):
            return False
        if len(self.token_to_id) != len(self.vocab):
            return False
        if not self._specials_look_valid():
            return False
        merges = self.merges
        try:
            if len(set(merges)) != len(merges):
                return False
        except TypeError:
            return False
        try:
            results = self.merge_results
        except (BpefstError, KeyError, TypeError):
            self.__dict__.pop("merge_results", None)
            return False
        # properness: each side of merge k is a base symbol or produced by a merge ranked below k
        produced_at: dict[int, int] = dict(zip(reversed(results), range(len(results) - 1, -1, -1)))
        built_rank = produced_at  # base symbols are never merge results: -1 for them
        built_rank.update(dict.fromkeys(self.base_ids, -1))
        never = len(merges)
        left_ranks = map(built_rank.get, map(_LEFT, merges), repeat(never))
        right_ranks = map(built_rank.get, map(_RIGHT, merges), repeat(never))
        # merge k is proper iff both sides were built before it: max(rank(left), rank(right)) - k < 0 for every k
        return max(map(sub, map(max, left_ranks, right_ranks), range(never)), default=-1) < 0

    def _specials_look_valid(self) -> bool:
        for text, sid in self.specials.items():
            if not text or type(sid) is not int or not 0 <= sid <= MAX_ID:
                return False
            if sid in self.vocab and self.token_bytes(sid) != text.encode("utf-8"):
                return False
        return True

    def _validate_entries(self) -> None:
        if self.level not in LEVELS:
            raise BpefstError(f"unknown tokenizer level {self.level!r} (expected one of {', '.join(LEVELS)})")
        expected = bytes if self.level == "byte" else str
        for token_id, token in self.vocab.items():
            if not isinstance(token_id, int) or not 0 <= token_id <= MAX_ID:
                raise BpefstError(f"token id {token_id!r} is not an integer in 0..{MAX_ID}")
            if not isinstance(token, expected) or not token:
                raise BpefstError(f"token {token_id} ({token!r}) is not a non-empty {expected.__name__} token")
        if len(self.token_to_id) != len(self.vocab):
            raise BpefstError("the vocabulary lists the same token under two ids")
        for text, sid in self.specials.items():
            if not text:
                raise BpefstError("a special token is empty")
            if not isinstance(sid, int) or not 0 <= sid <= MAX_ID:
                raise BpefstError(f"special token {text!r} has an invalid id {sid!r}")
            if sid in self.vocab and self.token_bytes(sid) != text.encode("utf-8"):
                raise BpefstError(f"special token {text!r} has id {sid}, which already belongs to token {_show(self.vocab[sid])}")

    def check_dense(self) -> None:
        """Refuse ids far beyond the number of tokens, before a table indexed by id is built.

        The merge forest, the automata and the validator size their tables by the
        largest id, so one id of 2**31 in a 4 KB vocab.json would take gigabytes.
        Loading, encoding and decoding (dictionaries) accept such ids, as HF does.
        """
        count = len(self.vocab) + len(self.specials)
        largest = self.max_id
        if largest >= SPARSE_FACTOR * count + SPARSE_SLACK:
            raise BpefstError(f"token ids are too sparse: the largest id is {largest:,} for {count:,} tokens; bpefst sizes "
                              f"its tables by the largest id and accepts ids below {SPARSE_FACTOR} x the token count + "
                              f"{SPARSE_SLACK:,}; renumber the tokens")

    def _check_proper(self) -> None:
        seen: set[tuple[int, int]] = set()
        produced = {}
        for rank, (a, b) in enumerate(self.merges):
            for side in (a, b):
                if side not in self.vocab:
                    raise BpefstError(f"merge {rank} names token id {side}, which is not in the vocabulary")
            if (a, b) in seen:
                raise BpefstError(f"merge {rank} ({_show(self.vocab[a])} {_show(self.vocab[b])}) is listed twice")
            seen.add((a, b))
            produced.setdefault(self._merge_result(rank, a, b), rank)
        built = set(self.base_ids) if self.level == "byte" else {i for i in self.vocab if i not in produced}
        for rank, (a, b) in enumerate(self.merges):
            for side in (a, b):
                if side not in built:
                    raise BpefstError(
                        f"improper merge list: merge {rank} ({_show(self.vocab[a])} {_show(self.vocab[b])}) uses "
                        f"{_show(self.vocab[side])}, which no earlier merge builds"
                    )
            built.add(self.merge_results[rank])

    # -- identity ------------------------------------------------------------------

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 over everything that decides how text is tokenized: msgpack of ``[level, sorted vocab
        items, merges, sorted specials, pattern, end-of-word suffix, continuing prefix, unk token, fuse_unk,
        ignore_merges]`` (and ``missing_bytes`` when not ``"drop"``)."""
        return self.fingerprint_of()

    def fingerprint_of(self, vocab_msgpack: bytes | None = None, merges_msgpack: bytes | None = None) -> str:
        """:attr:`fingerprint`, with the msgpack of the vocabulary items and of the merges given when a
        reader already has them (the compiled core writes them from a ``.bpefst`` file's packed tables);
        a msgpack array is its header and its items' encodings, so the bytes hashed are the same."""
        fields = [
            self.level,
            None,  # the vocabulary items, sorted by id
            None,  # the merges (msgpack writes a tuple as the array a list would be: the same bytes)
            sorted(self.specials.items()),
            self.pattern,
            self.end_of_word_suffix,
            self.continuing_subword_prefix,
            self.unk_token,
            self.fuse_unk,
            self.ignore_merges,
        ]
        if self.missing_bytes != "drop":  # added only when set, so every fingerprint written before it stays valid
            fields.append(self.missing_bytes)
        packed = [msgpack.packb(field, use_bin_type=True) for field in fields]
        packed[1] = vocab_msgpack if vocab_msgpack is not None else msgpack.packb(_sorted_items(self.vocab), use_bin_type=True)
        packed[2] = merges_msgpack if merges_msgpack is not None else msgpack.packb(self.merges, use_bin_type=True)
        header = msgpack.packb([None] * len(fields))[: -len(fields)]  # None packs as one byte
        return hashlib.sha256(header + b"".join(packed)).hexdigest()

    def summary(self) -> dict[str, object]:
        """What ``bpefst info`` shows."""
        reachable = set(self.base_ids) | set(self.merge_results)
        return {
            "kind": f"{self.level}-level BPE",
            "vocab_size": len(self.vocab) + len(set(self.specials.values()) - set(self.vocab)),
            "tokens": len(self.vocab),
            "base_symbols": len(self.base_ids),
            "merges": len(self.merges),
            "unreachable_tokens": len(set(self.vocab) - reachable),
            "specials": dict(sorted(self.specials.items(), key=lambda kv: kv[1])),
            "pattern": self.pattern_name,
            "end_of_word_suffix": self.end_of_word_suffix,
            "continuing_subword_prefix": self.continuing_subword_prefix,
            "unk_token": self.unk_token,
            **({"missing_bytes": f"split (llama.cpp): {len(self.barrier_bytes)} bytes without a token cut their chunk"}
               if self.barrier_bytes else {}),
            "fingerprint": self.fingerprint,
        }


def _sorted_items(mapping: dict) -> list:
    """``sorted(mapping.items())``, without the sort when the keys already ascend (as every reader and
    the ``.bpefst`` artifact build the vocabulary)."""
    keys = list(mapping)
    if all(map(lt, keys, islice(keys, 1, None))):
        return list(mapping.items())
    return sorted(mapping.items())


def _show(token: Token) -> str:
    if isinstance(token, bytes):
        try:
            return repr(token.decode("utf-8"))
        except UnicodeDecodeError:
            return repr(token)
    return repr(token)
