"""tiktoken rank files: one ``base64(token) rank`` per line, plain or gzip.

A rank file has no merge list: tiktoken merges the adjacent pair whose
concatenation has the lowest rank.  We recover the merge list the way the
token-ranking implies it (the rank order *is* the merge order): for each
multi-byte token in rank order, run BPE on its bytes with the merges recovered
so far; when that leaves exactly two tokens ``(a, b)``, the token is built by
the merge ``a b`` at this rank.  A token that stays in three or more pieces can
never be produced by BPE and is kept as an unreachable vocabulary entry.

Rank files carry neither the pre-tokenization pattern nor the special tokens.
For the files OpenAI publishes (``cl100k_base``, ``o200k_base``, and GPT-2's
vocabulary as ``gpt2`` / ``r50k_base``) they are
known facts of tiktoken and applied by file name; for any other file the caller
must name them.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import os
from array import array
from itertools import compress, islice, repeat
from operator import gt, itemgetter, lt
from pathlib import Path

from ... import native
from ...artifact import atomic_write_bytes
from ...errors import ArgumentTypeError, BpefstError
from ..model import MAX_ID, BPEModel
from ..pretokenize import FROM_FILE, PRESETS, PatternOverride
from ..packed_bpe import bpe_packed, pair_shift
from .common import read_raw

KNOWN_ENCODINGS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        PRESETS["cl100k"],
        {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
    ),
    "o200k_base": (PRESETS["o200k"], {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    # GPT-2's vocabulary as a rank file (tiktoken's gpt2 / r50k_base): ranks are GPT-2's ids
    "gpt2": (PRESETS["gpt2"], {"<|endoftext|>": 50256}),
    "r50k_base": (PRESETS["gpt2"], {"<|endoftext|>": 50256}),
}


def encoding_name(path: str | os.PathLike) -> str | None:
    """``.../cl100k_base.tiktoken.gz`` -> ``cl100k_base`` when it is a known encoding."""
    stem = Path(path).name.split(".")[0]
    return stem if stem in KNOWN_ENCODINGS else None


def read_ranks(path: str | os.PathLike) -> dict[bytes, int]:
    """``token bytes -> rank`` of a rank file, checked: every line ``base64 rank``, no token or rank twice.

    The whole file is parsed in bulk (C-level maps); only when a check fails is
    it walked line by line to name the offending line.
    """
    data = read_raw(path)
    ranks = _parse_bulk(data)
    if ranks is None:
        ranks = _parse_lines(data, path)
    if not ranks:
        raise BpefstError(f"{path}: no tokens")
    return ranks


def _parse_bulk(data: bytes) -> dict[bytes, int] | None:
    """The rank table, or None when any line is not well formed (so :func:`_parse_lines` can say which).

    The compiled core reads the lines where it is built (``src/core/vocab.h``: it declines with None
    whatever it does not find plainly well formed, and the Python reading below decides)."""
    parsed = native.core.parse_ranks(data) if native.core is not None else None
    if parsed is not None:
        decoded, values = parsed[0], array("I", parsed[1]).tolist()
        return _distinct(decoded, values)
    fields = data.split()
    if len(fields) % 2 or len(fields) != 2 * sum(1 for line in data.split(b"\n") if line.strip()):
        return None
    tokens, numbers = fields[0::2], fields[1::2]
    try:
        decoded = list(map(_strict_b64, tokens))
        values = list(map(int, numbers))
    except (ValueError, binascii.Error):
        return None
    if not all(map(bytes.isdigit, numbers)) or not all(decoded):
        return None
    if values and not 0 <= min(values) <= max(values) <= MAX_ID:
        return None
    return _distinct(decoded, values)


def _distinct(tokens: list[bytes], values: list[int]) -> dict[bytes, int] | None:
    """``token -> rank``, or None when a token or a rank appears twice."""
    ranks = dict(zip(tokens, values))
    if len(ranks) != len(values) or len(set(values)) != len(values):
        return None
    return ranks


def _strict_b64(token: bytes) -> bytes:
    return binascii.a2b_base64(token, strict_mode=True)


def _parse_lines(data: bytes, path: str | os.PathLike) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    line_of_rank: dict[int, int] = {}
    for line_no, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        parsed = parse_line(line)
        if parsed is None:
            raise BpefstError(f"{path}:{line_no}: expected 'base64-token rank', found {line[:60]!r}")
        token, rank = parsed
        if not token or not 0 <= rank <= MAX_ID:
            raise BpefstError(f"{path}:{line_no}: empty token or rank outside 0..{MAX_ID}")
        if token in ranks:
            raise BpefstError(f"{path}:{line_no}: token {token!r} is listed twice")
        if rank in line_of_rank:
            raise BpefstError(f"{path}:{line_no}: rank {rank} is given to two tokens (also on line {line_of_rank[rank]})")
        ranks[token], line_of_rank[rank] = rank, line_no
    return ranks


def parse_line(line: bytes) -> tuple[bytes, int] | None:
    """``base64-token rank`` -> (token, rank), or None when the line is not of that form."""
    parts = line.split()
    if len(parts) != 2 or not parts[1].lstrip(b"-").isdigit():
        return None
    try:
        return base64.b64decode(parts[0], validate=True), int(parts[1])
    except (ValueError, binascii.Error):
        return None


def looks_like_ranks(data: bytes) -> bool:
    """Whether the first non-blank line is a rank line (so errors further on are reported by line)."""
    first = next((line for line in data.split(b"\n", 8) if line.strip()), b"")
    return parse_line(first) is not None


def recover_merges(ranks: dict[bytes, int]) -> list[tuple[int, int]]:
    """Merges implied by a rank table (see module docstring)."""
    return _recover(ranks)[0]


def _recover(ranks: dict[bytes, int]) -> tuple[list[tuple[int, int]], list[int], dict[int, int], int]:
    """``(merges, their results, the packed merge table, its shift)`` implied by a rank table.

    Each token's bytes go through BPE with the merges recovered so far
    (:func:`..packed_bpe.bpe_packed`, whose table grows as merges are found); a
    two-byte token needs no BPE, its merge is its two bytes.
    """
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise BpefstError(f"rank file lacks single-byte tokens (e.g. byte {missing[0]}); cannot recover merges")
    byte_ids = [ranks[bytes([b])] for b in range(256)]
    if native.core is not None:
        return _recover_compiled(ranks, byte_ids)
    table_of_bytes = bytes(byte_ids) if max(byte_ids) < 256 else None  # bytes.translate turns a token into its byte ids
    shift = pair_shift(ranks.values())
    table: dict[int, int] = {}
    get = table.get
    merges: list[tuple[int, int]] = []
    results: list[int] = []
    append = merges.append
    for token, rank in sorted(ranks.items(), key=itemgetter(1)):
        size = len(token)
        if size == 1:
            continue
        if size == 2:
            pieces = [byte_ids[token[0]], byte_ids[token[1]]]
        else:
            symbols = list(token.translate(table_of_bytes)) if table_of_bytes is not None else [byte_ids[b] for b in token]
            pieces = bpe_packed(symbols, get, shift)
        if len(pieces) == 2:
            a, b = pieces
            table[(a << shift) | b] = (len(merges) << 32) | rank
            append((a, b))
            results.append(rank)
    return merges, results, table, shift


def _recover_compiled(ranks: dict[bytes, int], byte_ids: list[int]) -> tuple[list[tuple[int, int]], list[int], None, int]:
    """:func:`_recover` by the compiled core (the same algorithm in C); the packed table is left to the model to build."""
    tokens, values = list(ranks), list(ranks.values())
    if not all(map(lt, values, islice(values, 1, None))):  # files list tokens in rank order; a dict may not
        tokens, values = map(list, zip(*sorted(ranks.items(), key=itemgetter(1))))
    longer = list(map(gt, map(len, tokens), repeat(1)))
    triples = array("I")
    triples.frombytes(native.core.recover_merges(array("I", byte_ids).tobytes(), list(compress(tokens, longer)),
                                                 array("I", compress(values, longer)).tobytes()))
    merges = list(zip(triples[0::3], triples[1::3]))
    return merges, triples[2::3].tolist(), None, 0


def read(path: str | os.PathLike, pattern: PatternOverride = FROM_FILE) -> BPEModel:
    """A rank file; a known encoding's name brings its pattern and specials (add others with
    :func:`..overrides.add_specials`, as ``load_tokenizer(specials=...)`` does)."""
    ranks = read_ranks(path)
    known = encoding_name(path)
    specials: dict[str, int] = {}
    if known is not None:
        default_pattern, default_specials = KNOWN_ENCODINGS[known]
        pattern = default_pattern if pattern is FROM_FILE else pattern
        specials = dict(default_specials)
    elif pattern is FROM_FILE:
        raise BpefstError(f"{path}: a tiktoken rank file does not say its pre-tokenization pattern; pass --pattern, or pattern= in Python (gpt2, cl100k, o200k, none or a regex)")
    try:
        return model_from_ranks(ranks, pattern, specials)
    except BpefstError as exc:
        raise BpefstError(f"{path}: {exc}") from None


def model_from_ranks(ranks: dict[bytes, int], pattern: str | None, specials: dict[str, int]) -> BPEModel:
    """The byte-level model of a checked rank table (ids = ranks) with its pattern and specials.

    tiktoken looks a whole chunk up in the ranks before running BPE, so a
    token BPE cannot build (none in OpenAI's encodings) is still produced when
    a chunk spells it exactly; such a table gets HF's ``ignore_merges``, which
    is that rule.
    """
    vocab = {rank: token for token, rank in ranks.items()}
    merges, results, table, shift = _recover(ranks)
    # Ranks were checked, recovered merges are proper by construction, specials were checked by the caller.
    model = BPEModel.unchecked(level="byte", vocab=vocab, merges=merges, specials=specials, pattern=pattern,
                               ignore_merges=len(merges) + 256 < len(ranks))
    # built anyway while recovering (the ranks are the ids); every recovered merge's result is reachable
    # (BPE of its bytes ends in it)
    model.__dict__.update(token_to_id=ranks, merge_results=results,
                          known_reachable=frozenset(results).union(ranks[bytes([b])] for b in range(256)))
    if table is not None:  # the pure recovery's table (the compiled one leaves it to the model, built if needed)
        model.__dict__["packed_merges"] = (table, shift)
    return model


def check_ranks(ranks: dict[bytes, int]) -> None:
    """Raise BpefstError unless ``ranks`` is a rank table: non-empty bytes -> distinct ids in 0..MAX_ID."""
    if not isinstance(ranks, dict) or not ranks:
        raise ArgumentTypeError(f"mergeable_ranks= takes a non-empty dict of token bytes -> rank, not {type(ranks).__name__}")
    for token, rank in ranks.items():
        if not isinstance(token, bytes) or not token:
            raise ArgumentTypeError(f"mergeable_ranks: every token is non-empty bytes, found {token!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank <= MAX_ID:
            raise ArgumentTypeError(f"mergeable_ranks: the rank of {token!r} is {rank!r}; ranks are ints from 0 to {MAX_ID}")
    if len(set(ranks.values())) != len(ranks):
        seen: dict[int, bytes] = {}
        for token, rank in ranks.items():
            if rank in seen:
                raise BpefstError(f"mergeable_ranks: rank {rank} is given to two tokens ({seen[rank]!r} and {token!r})")
            seen[rank] = token


def write(model: BPEModel, path: str | os.PathLike) -> None:
    """Write ranks = ids.

    Only a tokenizer whose merges are exactly those its id order implies can be
    written (tiktoken derives merges from ranks); anything else is refused
    rather than silently changed.  Special tokens and the pattern are not part
    of the format: name them again when reading the file back.
    """
    if not model.is_byte_level:
        raise BpefstError("tiktoken rank files hold byte-level tokenizers only; use --format hf (format=\"hf\" in Python)")
    ranks = {token: i for i, token in model.vocab.items()}
    if any(bytes([b]) not in ranks for b in range(256)) or recover_merges(ranks) != list(model.merges):
        raise BpefstError("this tokenizer's ids do not follow its merge order, so a tiktoken rank file cannot express it; use --format hf or bpefst (format= in Python)")
    lines = [base64.b64encode(token) + b" " + str(i).encode() for i, token in sorted(model.vocab.items())]
    data = b"\n".join(lines) + b"\n"
    if str(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    atomic_write_bytes(path, data)
