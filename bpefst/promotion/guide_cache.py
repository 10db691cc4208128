"""An on-disk cache of on-demand canonical automata, keyed by tokenizer fingerprint and pattern.

Setting up :class:`~.on_demand.OnDemandCanonical` is the token lattice walk and
the liveness solve; everything after is expanded from their result
(:meth:`~.on_demand.OnDemandCanonical.liveness`: the chunked pattern's start,
finals and cuts, ``good[q]`` and the token groups filed per lattice state).
That result depends only on the tokenizer and the pattern, so it is written
once and read back by the next process: for a schema with a bounded free-text
string over GPT-2 the solve takes tens of seconds, reading it back a fraction
of that.

The file is a msgpack map with the header of bpefst's artifacts (format, kind
``guide-cache``, schema version, tokenizer fingerprint) and a body holding the
pattern it was built for, packed as bytes with its SHA-256 beside it.  A file
that does not match (another tokenizer, pattern or schema version, a torn or
altered body) is ignored and rebuilt: it is a cache, and a stale entry must
never answer for another pattern.  Writes are atomic.  The same set-up, under
the header of bpefst's artifacts, is the ``token-guide`` artifact a user keeps
and ships (:mod:`.token_guide_io`: :func:`setup_fields` and
:func:`liveness_of` are shared; the artifact adds :func:`check_filed`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import msgpack

from ..artifact import FORMAT_NAME, atomic_write_bytes, pack_ints, unpack_ints
from ..bpe import CanonicalAutomaton
from .on_demand import GoodSets, OnDemandCanonical

KIND = "guide-cache"
SCHEMA = 1
NO_CUT = 0xFFFFFFFF


def cache_path(directory: str | Path, fingerprint: str, pattern: str) -> Path:
    key = hashlib.sha256(f"{fingerprint}\0canonical\0{pattern}".encode("utf-8")).hexdigest()[:40]
    return Path(directory).expanduser() / f"{key}.guide"


def save(path: str | Path, lazy: OnDemandCanonical, fingerprint: str, pattern: str) -> None:
    """Write ``lazy``'s liveness result (module docstring)."""
    body = msgpack.packb({"pattern": pattern, **setup_fields(lazy)}, use_bin_type=True)
    document = {"format": FORMAT_NAME, "kind": KIND, "schema": SCHEMA, "fingerprint": fingerprint,
                "sha256": hashlib.sha256(body).hexdigest(), "body": body}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, msgpack.packb(document, use_bin_type=True))


def load(path: str | Path, automaton: CanonicalAutomaton, fingerprint: str, pattern: str,
         max_states: int | None = None) -> OnDemandCanonical | None:
    """The cached automaton for (tokenizer, pattern), or None when there is no matching, intact entry."""
    try:
        document = msgpack.unpackb(Path(path).read_bytes(), raw=False)
        if not (isinstance(document, dict) and document.get("format") == FORMAT_NAME and document.get("kind") == KIND
                and document.get("schema") == SCHEMA and document.get("fingerprint") == fingerprint):
            return None
        body = document["body"]
        if hashlib.sha256(body).hexdigest() != document["sha256"]:
            return None
        parts = msgpack.unpackb(body, raw=False)
        if parts["pattern"] != pattern:
            return None
        liveness = liveness_of(parts)
    except Exception:  # whatever is wrong with the file (missing, torn, another layout), it is a miss
        return None
    return OnDemandCanonical.from_liveness(liveness, automaton, max_states)


def setup_fields(lazy: OnDemandCanonical) -> dict:
    """``lazy``'s liveness result as msgpack-ready fields: what this cache and the ``token-guide`` artifact
    (:mod:`.token_guide_io`) hold.  Lattice states share token groups (a group is filed under every state it
    leaves) and often equal good sets, so both are stored once and referred to by number."""
    parts = lazy.liveness()
    goods: dict[int, int] = {}
    good_data: list[bytes] = []

    def good(mask: int) -> int:
        k = goods.get(mask)
        if k is None:
            k = goods[mask] = len(good_data)
            good_data.append(mask.to_bytes((mask.bit_length() + 7) // 8, "little"))
        return k

    if isinstance(parts["good"], GoodSets):  # (the compiled solve's: already a table and numbers into it)
        good_data, good_numbers = parts["good"].table, parts["good"].numbers
    else:
        good_numbers = [good(g) for g in parts["good"]]
    filed, group_data = packed_filed(parts["filed"])
    return {
        "start": parts["start"],
        "finals": pack_ints(sorted(parts["finals"])),
        "cut": pack_ints(NO_CUT if r is None else r for r in parts["cut"]),
        "good": pack_ints(good_numbers),  # numbers into goods
        "filed": filed,  # per state its (group, r) pairs
        "goods": good_data,
        "groups": group_data,
    }


def packed_filed(filed) -> tuple[list[bytes], list[bytes]]:
    """``(rows, groups)``: per state its filed ``(group, r)`` pairs, and each group's tokens, packed as uint32.

    A group is one token object however many states file it, so groups are
    numbered by object, in the order the rows first name them.  The compiled
    solve's ``Filed`` makes the same bytes itself (``Filed.packed``: cl100k's
    median JSON Schema files 430,000 pairs, 0.6 s here and 16 ms there).
    """
    if hasattr(filed, "packed"):
        return filed.packed()
    return packed_filed_in_python(filed)


def packed_filed_in_python(filed) -> tuple[list[bytes], list[bytes]]:
    """:func:`packed_filed`'s pass over ``filed[q]`` (a list per state of ``(tokens, r)``): the spec of ``Filed.packed``."""
    numbers: dict[int, tuple] = {}  # id(tokens) -> (tokens, its number)
    groups: list[bytes] = []

    def number(tokens) -> int:
        found = numbers.get(id(tokens))
        if found is None or found[0] is not tokens:  # kept beside its number, so its id is not reused
            found = numbers[id(tokens)] = (tokens, len(groups))
            groups.append(pack_ints(tokens))
        return found[1]

    rows = [pack_ints(x for tokens, r in filed[q] for x in (number(tokens), r)) for q in range(len(filed))]
    return rows, groups


def liveness_of(fields: dict) -> dict:
    """The liveness result :func:`setup_fields` wrote, for :meth:`OnDemandCanonical.from_liveness`; ValueError
    (or another exception of the decoding) when its tables do not hold together: the per-state tables' lengths
    and what they number.  What the cache reads back, checksummed, from a file it wrote; an artifact from
    elsewhere is checked further (:func:`check_filed`)."""
    cut = [None if r == NO_CUT else r for r in unpack_ints(fields["cut"])]
    n = len(cut)
    good, filed = GoodSets(unpack_ints(fields["good"]), fields["goods"]), _Filed(fields["filed"], fields["groups"])
    finals = frozenset(unpack_ints(fields["finals"]))
    start = fields["start"]
    if not (isinstance(start, int) and 0 <= start < n and len(good) == len(filed) == n):
        raise ValueError("the states' tables differ in length, or the start is not a state")
    if max(good.numbers, default=-1) >= len(good.table) or max(finals, default=-1) >= n \
            or any(r is not None and r >= n for r in cut):
        raise ValueError("a state's set, cut or finality names no entry")
    return {"start": start, "finals": finals, "cut": cut, "good": good, "filed": filed}


def check_filed(liveness: dict, vocabulary: int | None) -> None:
    """ValueError unless every filed (group, target) pair names a group and a state, and (with ``vocabulary``)
    every token of a group or a good set is below it: a pass over all of them (the median JSON Schema's 400,000
    pairs, about 15 ms), so that a decoder never indexes past a table whatever file it was given."""
    filed, n = liveness["filed"], len(liveness["cut"])
    pairs = unpack_ints(b"".join(filed.rows))  # (TypeError unless every row is packed)
    if len(pairs) % 2 or max(pairs[0::2], default=-1) >= len(filed.groups) or max(pairs[1::2], default=-1) >= n:
        raise ValueError("a filed row names no group or no state")
    if vocabulary is None:
        return
    if any(int.from_bytes(g, "little") >> vocabulary for g in liveness["good"].table):
        raise ValueError("a good set names a token past the vocabulary")
    if max(unpack_ints(b"".join(filed.groups)), default=0) >= vocabulary:
        raise ValueError("a group names a token past the vocabulary")


class _Filed:
    """The groups filed under lattice state ``q``, ``[(tokens, r), ...]``, decoded when first read."""

    def __init__(self, rows: list[bytes], groups: list[bytes]):
        self.rows, self.groups = rows, groups
        self.decoded: dict[int, object] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, q: int) -> list:
        pairs = unpack_ints(self.rows[q])
        return [(self._group(pairs[i]), pairs[i + 1]) for i in range(0, len(pairs), 2)]

    def _group(self, k: int):
        tokens = self.decoded.get(k)
        if tokens is None:
            tokens = self.decoded[k] = unpack_ints(self.groups[k])
        return tokens
