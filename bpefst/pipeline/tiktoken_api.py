"""The rest of tiktoken's ``Encoding`` on :class:`~.encoder.Tokenizer`, so that ``import bpefst as tiktoken`` works.

:class:`~.encoder.Tokenizer` holds the core (``encode``, ``decode``,
``encode_batch``, offsets); this mixin adds the names a tiktoken script
reaches for next, with tiktoken's signatures, results and exception types:

* the constructor from in-memory ranks (:func:`model_from_tiktoken_arguments`),
  and the attributes third-party code reads (``_mergeable_ranks``,
  ``_pat_str``, ``_special_tokens``);
* single tokens (``encode_single_token``, ``decode_single_token_bytes``,
  ``is_special_token``, ``token_byte_values``) and the batch forms;
* tiktoken's byte encoder (``_encode_bytes``, and ``encode_bytes`` by
  default): bytes that are not UTF-8 are byte-pair encoded together with the
  last chunk before them (:meth:`TiktokenMethods._encode_invalid_tail`), which
  is how a model saw text cut inside a character;
* ``encode_with_unstable``: the ids that are certain, and every way the last
  piece could continue.

Nothing here runs per character: it is bookkeeping around the encoder's own
paths, which stay the only place where text becomes ids.
"""

from __future__ import annotations

from bisect import bisect_left
from functools import cached_property
from typing import TYPE_CHECKING, Iterable, Sequence

from ..errors import ArgumentTypeError, BpefstError, InvalidEncodingError, UnknownTokenError
from ..tokenizer.formats.tiktoken_ranks import check_ranks, model_from_ranks
from ..tokenizer.overrides import check_special_ids
from ..tokenizer.pretokenize import compile_pattern, specials_regex
from ..tokenizer.safe_cuts import safe_cut

if TYPE_CHECKING:
    from ..tokenizer import BPEModel

_SPACE_BYTES = frozenset(b" \n\t")


def model_from_tiktoken_arguments(name: str, pat_str: str | None, mergeable_ranks: dict[bytes, int] | None,
                                  special_tokens: dict[str, int] | None, explicit_n_vocab: int | None) -> "BPEModel":
    """The model of tiktoken's ``Encoding(name, pat_str=..., mergeable_ranks=..., special_tokens=...)``.

    The ranks are the ids and their order is the merge order; the merges are
    recovered from them as for a rank file (:mod:`..tokenizer.formats.tiktoken_ranks`).
    Everything is checked first, so a bad argument is one plain error rather
    than a failure at the first ``encode``.
    """
    if not isinstance(name, str):
        raise ArgumentTypeError(f"Encoding() takes its name as a str, not {type(name).__name__}")
    if mergeable_ranks is None or pat_str is None or special_tokens is None:
        raise ArgumentTypeError("Encoding() takes a BPE model, or tiktoken's name, pat_str=, mergeable_ranks= and "
                                "special_tokens= (e.g. Encoding('mine', pat_str=enc._pat_str, mergeable_ranks=ranks, "
                                "special_tokens={}))")
    if not isinstance(pat_str, str):
        raise ArgumentTypeError(f"pat_str= takes a regex as a str, not {type(pat_str).__name__}")
    check_ranks(mergeable_ranks)
    if not isinstance(special_tokens, dict) or not all(isinstance(t, str) and t and isinstance(i, int) for t, i in special_tokens.items()):
        raise ArgumentTypeError("special_tokens= takes a dict of (non-empty) text -> id, e.g. {'<|endoftext|>': 100257}")
    try:
        compile_pattern(pat_str)
        check_special_ids(special_tokens)
        ranks = set(mergeable_ranks.values())
        clash = next((text for text, i in special_tokens.items() if i in ranks), None)
        if clash is not None:
            raise BpefstError(f"special token {clash!r} has id {special_tokens[clash]}, which is also the rank of an ordinary token")
        if explicit_n_vocab:
            _check_vocab_size(mergeable_ranks, special_tokens, explicit_n_vocab)
        return model_from_ranks(dict(mergeable_ranks), pat_str, dict(special_tokens))
    except BpefstError as error:
        raise InvalidEncodingError(f"Encoding({name!r}): {error}") from None


def _check_vocab_size(ranks: dict[bytes, int], specials: dict[str, int], n_vocab: int) -> None:
    """tiktoken's ``explicit_n_vocab``: the ids are exactly ``0 .. n_vocab - 1``."""
    count = len(ranks) + len(specials)
    largest = max(max(ranks.values()), max(specials.values(), default=0))
    if count != n_vocab or largest != n_vocab - 1:
        raise BpefstError(f"explicit_n_vocab={n_vocab}, but there are {count} tokens and the largest id is {largest}")


class TiktokenMethods:
    """tiktoken's names beyond the core; mixed into :class:`~.encoder.Tokenizer` (which provides ``model``,
    ``encode``, ``encode_ordinary``, ``encode_chunk``, ``decode``, ``decode_bytes``, ``token_bytes``)."""

    model: "BPEModel"

    # -- the attributes tiktoken's users read (compatibility names) ---------------------

    @cached_property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        """Token bytes -> id of every ordinary token (tiktoken's ranks are its ids)."""
        token = self.model.token_bytes
        return {token(i): i for i in sorted(self.model.vocab)}

    @cached_property
    def _special_tokens(self) -> dict[str, int]:
        return dict(self.model.specials)

    @property
    def _pat_str(self) -> str | None:
        """The pre-tokenization regex (None for a tokenizer without one)."""
        return self.model.pattern

    # -- single tokens -------------------------------------------------------------------

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The id of the one token (ordinary or special) whose text or bytes these are; KeyError otherwise."""
        if isinstance(text_or_bytes, str):
            text_or_bytes = self._as_text("encode_single_token", text_or_bytes).encode("utf-8")
        if not isinstance(text_or_bytes, (bytes, bytearray)):
            raise ArgumentTypeError(f"encode_single_token() takes a str or bytes, not {type(text_or_bytes).__name__}")
        found = self._single_tokens.get(bytes(text_or_bytes))
        if found is None:
            raise UnknownTokenError(f"{bytes(text_or_bytes)!r} is not a single token of {self.name or 'this tokenizer'}")
        return found

    @cached_property
    def _single_tokens(self) -> dict[bytes, int]:
        """Bytes -> id of every token; a special token wins over an ordinary one with its bytes, as in tiktoken."""
        table = {token: i for i, token in self._ordinary_bytes()}
        table.update((text.encode("utf-8"), i) for text, i in self.model.specials.items())
        return table

    def _ordinary_bytes(self) -> Iterable[tuple[int, bytes]]:
        token = self.model.token_bytes
        return ((i, token(i)) for i in self.model.vocab)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token, special tokens included; KeyError for an id not in the vocabulary."""
        return self.token_bytes(token)

    def is_special_token(self, token: int) -> bool:
        if not isinstance(token, int):
            raise ArgumentTypeError(f"is_special_token() takes a token id (int), not {type(token).__name__}")
        return token in self._special_ids

    @cached_property
    def _special_ids(self) -> frozenset[int]:
        return frozenset(self.model.specials.values())

    def token_byte_values(self) -> list[bytes]:
        """The bytes of every ordinary token, sorted (as tiktoken returns them)."""
        return list(self._sorted_token_bytes)

    @cached_property
    def _sorted_token_bytes(self) -> list[bytes]:
        return sorted(token for _, token in self._ordinary_bytes())

    # -- batches (tiktoken's keyword names; num_threads: the core's threads, see encode_batch) --

    def encode_ordinary_batch(self, text: Sequence[str], *, num_threads: int = 8, jobs: int = 1) -> list[list[int]]:
        """``[encode_ordinary(t) for t in text]``; ``jobs`` processes as in :meth:`encode_batch`."""
        return self.encode_batch(text, disallowed_special=(), jobs=jobs, num_threads=num_threads)

    def decode_batch(self, batch: Sequence[Sequence[int]], *, errors: str = "replace", num_threads: int = 8) -> list[str]:
        return [self.decode(ids, errors=errors) for ids in batch]

    def decode_bytes_batch(self, batch: Sequence[Sequence[int]], *, num_threads: int = 8) -> list[bytes]:
        return [self.decode_bytes(ids) for ids in batch]

    # -- tiktoken's byte encoder and its private helpers --------------------------------

    def _encode_bytes(self, text: bytes) -> list[int]:
        """tiktoken's name for :meth:`encode_bytes` with its defaults."""
        return self.encode_bytes(text)

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """BPE of the bytes as one piece: no pre-tokenization, no special tokens."""
        if isinstance(text_or_bytes, str):
            text_or_bytes = self._as_text("_encode_single_piece", text_or_bytes).encode("utf-8")
        return self._bpe_piece(bytes(text_or_bytes))

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        return self.encode_ordinary(text)

    def _bpe_piece(self, data: bytes) -> list[int]:
        """One piece of bytes through BPE, as tiktoken's byte encoder does (a whole token first)."""
        if not data:
            return []
        whole = self.model.token_to_id.get(data) if self.model.is_byte_level else None
        if whole is not None:
            return [whole]
        return list(self.encode_chunk(data.decode("utf-8", errors="surrogateescape")))

    def _encode_invalid_tail(self, data: bytes, allowed: frozenset) -> list[int]:
        """tiktoken's ``_encode_bytes`` for bytes that are not UTF-8 (a byte-level model).

        The text before the first invalid byte is encoded as usual, then its
        last piece (the ids of the last pre-tokenized chunk, widened back over
        tokens made only of spaces, tabs and line breaks, where the pattern's
        splits are least stable) is taken back and its bytes, followed by
        every byte from the invalid one on, are byte-pair encoded as one piece.
        """
        try:
            data.decode("utf-8")
            valid = len(data)
        except UnicodeDecodeError as error:
            valid = error.start
        text = data[:valid].decode("utf-8")
        ids = self._encode_policy(text, allowed, frozenset())
        take = self._unstable_length(ids, text, allowed)
        unstable = self.decode_bytes(ids[len(ids) - take:]) + data[valid:]
        del ids[len(ids) - take:]
        ids.extend(self._bpe_piece(unstable))
        return ids

    def _unstable_length(self, ids: list[int], text: str, allowed: frozenset) -> int:
        """How many of the last ids (of ``text``) a continuation of the text could change."""
        take = self._last_piece_length(text, allowed)
        if take and self._all_space(ids[-take]):
            while take < len(ids) and self._all_space(ids[-take - 1]):
                take += 1
        return take

    def _all_space(self, token: int) -> bool:
        found = self.model.vocab.get(token)
        return found is not None and _SPACE_BYTES.issuperset(self.model.token_bytes(token))

    def _last_piece_length(self, text: str, allowed: frozenset) -> int:
        """The number of ids of the last chunk of ``text`` (0 when it ends with a special token or has no chunk)."""
        matcher = specials_regex(allowed)
        if matcher is not None:
            last = None
            for last in matcher.finditer(text):
                pass
            if last is not None:
                text = text[last.end():]
        if not text:
            return 0
        cut = safe_cut(text, self.cut_rule, 0, len(text) - 1) if len(text) > 1 else None
        chunks = self._findall(text[cut:] if cut else text)
        return len(self.encode_chunk(chunks[-1])) if chunks else 0

    # -- encode_with_unstable -------------------------------------------------------------

    def encode_with_unstable(self, text: str, *, allowed_special: Iterable[str] | str = (),
                             disallowed_special: Iterable[str] | str = "all") -> tuple[list[int], list[list[int]]]:
        """``(stable ids, completions)``: the ids no continuation of ``text`` can change, and every
        sequence of ids that could follow them while spelling the rest of ``text`` (tiktoken's
        brute force: each token that continues the unstable bytes, and each split of them).

        The completions come in no particular order (tiktoken's come from a set).
        """
        if not self.model.is_byte_level:
            raise BpefstError("encode_with_unstable() needs a byte-level tokenizer (its completions are token bytes)")
        allowed, disallowed = self.special_policy(allowed_special, disallowed_special)
        text = self._as_text("encode_with_unstable", text, disallowed)
        ids = self._encode_policy(text, allowed, disallowed)
        take = self._unstable_length(ids, text, allowed)
        if not take:
            return ids, []
        unstable = self.decode_bytes(ids[len(ids) - take:])
        del ids[len(ids) - take:]
        completions = {(i,) for i in self._tokens_starting_with(unstable)}
        for cut in range(1, len(unstable)):
            head, tail = unstable[:cut], unstable[cut:]
            for token in self._tokens_starting_with(tail):
                completions.add(self._prefix_covering(head + self.model.token_bytes(token), len(unstable)))
        last_space = _last_whitespace_length(unstable)
        if len(unstable) > 1 and 0 < last_space < len(unstable):
            completions.add(tuple(self._bpe_piece_plain(unstable[:-last_space]) + self._bpe_piece_plain(unstable[-last_space:])))
        return ids, [list(c) for c in completions]

    def _tokens_starting_with(self, prefix: bytes) -> Iterable[int]:
        ordered = self._sorted_token_bytes
        at = bisect_left(ordered, prefix)
        ranks = self.model.token_to_id
        while at < len(ordered) and ordered[at].startswith(prefix):
            yield ranks[ordered[at]]
            at += 1

    def _prefix_covering(self, data: bytes, length: int) -> tuple[int, ...]:
        """The first ids of ``data``'s encoding whose bytes reach ``length``."""
        try:
            ids = self.encode_ordinary(data.decode("utf-8"))
        except UnicodeDecodeError:
            ids = self._bpe_piece_plain(data)
        out, covered = [], 0
        for i in ids:
            out.append(i)
            covered += len(self.model.token_bytes(i))
            if covered >= length:
                break
        return tuple(out)

    def _bpe_piece_plain(self, data: bytes) -> list[int]:
        """BPE of a piece without the whole-token lookup (tiktoken's ``byte_pair_encode``)."""
        return list(self.encode_chunk(data.decode("utf-8", errors="surrogateescape"))) if data else []


def _last_whitespace_length(data: bytes) -> int:
    """The byte length of ``data``'s last character when it is whitespace (Unicode's White_Space), else 0."""
    import regex

    for size in range(1, min(4, len(data)) + 1):
        try:
            char = data[-size:].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return size if len(char) == 1 and regex.fullmatch(r"\p{White_Space}", char) else 0
    return 0
