"""A model from the shapes courses and small libraries use: ``vocab: dict[int, bytes]``, ``merges: list[tuple[bytes, bytes]]``.

CS336's assignment and Karpathy's minbpe hand a byte-level BPE tokenizer
around as an id -> bytes vocabulary, the merges as pairs of token bytes in
rank order, and the special tokens as a list of strings (whose bytes may or
may not be in the vocabulary).  :func:`model_from_byte_pairs` turns that into
a checked :class:`~.model.BPEModel` with a pre-tokenization pattern, so that
nothing is silently left out: a hand-built model without a pattern would
tokenize the whole text as one chunk.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..errors import BpefstError
from .model import BPEModel
from .pretokenize import resolve_pattern


def model_from_byte_pairs(vocab: Mapping[int, bytes], merges: Sequence[tuple[bytes, bytes]],
                          special_tokens: Iterable[str] = (), pattern: str | None = "gpt2") -> BPEModel:
    """The byte-level model of ``vocab`` and ``merges``; ``special_tokens`` keep the id their bytes have in
    ``vocab``, or get the next free ids; ``pattern`` is a preset name, a regex, or None / ``"none"``."""
    if not isinstance(vocab, Mapping):
        raise BpefstError(f"vocab= takes a dict of id -> bytes, not {type(vocab).__name__}")
    if isinstance(special_tokens, str):
        raise BpefstError(f"special_tokens= takes a list of strings, not the string {special_tokens!r}")
    specials_text = list(dict.fromkeys(special_tokens))
    for text in specials_text:
        if not isinstance(text, str) or not text:
            raise BpefstError(f"special_tokens= holds {text!r}, which is not a non-empty string")
    tokens: dict[int, bytes] = {}
    for token_id, token in vocab.items():
        if not isinstance(token_id, int) or isinstance(token_id, bool):
            raise BpefstError(f"vocab= has the key {token_id!r}; ids must be integers")
        if not isinstance(token, (bytes, bytearray)):
            raise BpefstError(f"vocab[{token_id}] is {type(token).__name__}; tokens must be bytes")
        tokens[token_id] = bytes(token)
    special_bytes = {text.encode("utf-8"): text for text in specials_text}
    specials: dict[str, int] = {}
    ordinary: dict[int, bytes] = {}
    for token_id, token in tokens.items():
        if token in special_bytes:
            specials[special_bytes[token]] = token_id
        else:
            ordinary[token_id] = token
    next_id = max(tokens, default=-1) + 1
    for text in specials_text:
        if text not in specials:
            specials[text] = next_id
            next_id += 1
    ids = {token: token_id for token_id, token in ordinary.items()}
    pairs = []
    for rank, pair in enumerate(merges):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(p, (bytes, bytearray)) for p in pair)):
            raise BpefstError(f"merges[{rank}] is {pair!r}; merges must be pairs of bytes")
        left, right = (ids.get(bytes(p)) for p in pair)
        if left is None or right is None:
            missing = bytes(pair[0] if left is None else pair[1])
            raise BpefstError(f"merges[{rank}] uses {missing!r}, which is not in vocab=")
        pairs.append((left, right))
    return BPEModel(level="byte", vocab=ordinary, merges=pairs, specials=specials,
                    pattern=resolve_pattern(pattern) if pattern is not None else None)
