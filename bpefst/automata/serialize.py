"""Saving and loading DFAs as bpefst artifacts (kind ``automaton``, schema 1).

The transition table is stored in CSR form as packed little-endian uint32
arrays (:func:`bpefst.artifact.pack_ints`): ``offsets`` (n + 1 entries; the
arcs of state q are entries ``offsets[q] .. offsets[q+1]-1``), ``symbols`` and
``targets`` (one entry per arc, symbols ascending within a state), plus
``start``, ``num_states`` and the sorted ``finals``.  Body::

    {"type": "dfa", "num_states": n, "start": s,
     "finals": <uint32[]>, "offsets": <uint32[n+1]>, "symbols": <uint32[m]>, "targets": <uint32[m]>}

Loading validates everything it reads -- header, field types, array lengths,
monotone offsets, targets and finals in range, no symbol twice from one
state -- and reports any problem as a one-line :class:`ArtifactError`.
"""

from __future__ import annotations

import os
from itertools import islice
from operator import le
from typing import Any

from ..artifact import check_header, pack_artifact, pack_ints, parse_artifact, read_header_and_body, unpack_ints, write_artifact
from ..errors import ArtifactError
from .dfa import DFA

KIND = "automaton"
SCHEMA = 1
_UINT32 = 1 << 32


def to_body(dfa: DFA) -> dict[str, Any]:
    """The artifact body for ``dfa`` (see module docstring)."""
    n = dfa.num_states
    if n >= _UINT32:
        raise ValueError("too many states for a uint32 table")
    offsets = [0]
    symbols: list[int] = []
    targets: list[int] = []
    for row in dfa.transitions:
        for symbol in sorted(row):
            symbols.append(symbol)
            targets.append(row[symbol])
        offsets.append(len(symbols))
    if symbols and max(symbols) >= _UINT32:
        raise ValueError("a symbol does not fit in uint32")
    return {
        "type": "dfa",
        "num_states": n,
        "start": dfa.start,
        "finals": pack_ints(sorted(dfa.finals)),
        "offsets": pack_ints(offsets),
        "symbols": pack_ints(symbols),
        "targets": pack_ints(targets),
    }


def from_body(body: dict[str, Any], name: str = "automaton") -> DFA:
    """Rebuild and validate a DFA from an artifact body; raises ArtifactError."""

    def fail(why: str) -> ArtifactError:
        return ArtifactError(f"{name}: corrupted automaton: {why}")

    if not isinstance(body, dict) or body.get("type") != "dfa":
        raise fail("body is not a DFA table")
    for field, kind in (("num_states", int), ("start", int), ("finals", bytes),
                        ("offsets", bytes), ("symbols", bytes), ("targets", bytes)):
        if not isinstance(body.get(field), kind) or isinstance(body.get(field), bool):
            raise fail(f"field {field!r} is missing or has the wrong type")
    n, start = body["num_states"], body["start"]
    if not 1 <= n < _UINT32:
        raise fail(f"num_states = {n}")
    if not 0 <= start < n:
        raise fail(f"start state {start} is outside 0..{n - 1}")
    try:
        finals = unpack_ints(body["finals"]).tolist()
        offsets = unpack_ints(body["offsets"]).tolist()
        symbols = unpack_ints(body["symbols"]).tolist()
        targets = unpack_ints(body["targets"]).tolist()
    except ArtifactError as exc:
        raise fail(str(exc)) from None
    m = len(symbols)
    if len(targets) != m:
        raise fail(f"{m} symbols but {len(targets)} targets")
    if len(offsets) != n + 1:
        raise fail(f"{len(offsets)} offsets for {n} states (expected {n + 1})")
    if offsets[0] != 0 or offsets[-1] != m:
        raise fail(f"offsets run from {offsets[0]} to {offsets[-1]}, expected 0 to {m}")
    if not all(map(le, offsets, islice(offsets, 1, None))):
        raise fail("offsets are not monotone")
    if m and max(targets) >= n:
        raise fail(f"arc target {max(targets)} is outside 0..{n - 1}")
    if finals and max(finals) >= n:
        raise fail(f"final state {max(finals)} is outside 0..{n - 1}")
    final_set = frozenset(finals)
    if len(final_set) != len(finals):
        raise fail("a final state is listed twice")
    transitions = [dict(zip(symbols[offsets[q]:offsets[q + 1]], targets[offsets[q]:offsets[q + 1]])) for q in range(n)]
    if sum(map(len, transitions)) != m:
        bad = next(q for q in range(n) if len(transitions[q]) != offsets[q + 1] - offsets[q])
        raise fail(f"state {bad} has two arcs on one symbol")
    return DFA(transitions, start, final_set, check=False)


def to_bytes(dfa: DFA, fingerprint: str = "") -> bytes:
    """The complete artifact (header + body) as bytes."""
    return pack_artifact(KIND, SCHEMA, fingerprint, to_body(dfa))


def from_bytes(data: bytes, fingerprint: str | None = None, name: str = "<bytes>") -> DFA:
    """Parse an artifact produced by :func:`to_bytes`; ``fingerprint=None`` skips that check."""
    document = parse_artifact(data, name)
    check_header(document, name, KIND, SCHEMA, fingerprint)
    return from_body(document["body"], name)


def save(dfa: DFA, path: str | os.PathLike, fingerprint: str = "") -> None:
    """Write ``dfa`` to ``path`` atomically."""
    write_artifact(path, KIND, SCHEMA, fingerprint, to_body(dfa))


def load(path: str | os.PathLike, fingerprint: str | None = None) -> DFA:
    """Read a DFA saved by :func:`save`; raises ArtifactError (or BpefstError if unreadable)."""
    document = read_header_and_body(path)
    check_header(document, str(path), KIND, SCHEMA, fingerprint)
    return from_body(document["body"], str(path))
